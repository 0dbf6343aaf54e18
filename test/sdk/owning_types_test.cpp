// NodeView::toNode and ServiceView::toService: every field the views read is copied into an
// owning value that outlives the host's memory; a repeated key keeps its last value and a
// NULL array with a count reads as empty.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ccm/provider.hpp"

using ccm::sdk::str;

TEST_CASE("toNode copies every field, and the copy outlives the host's memory") {
  std::string name = "node-a";
  std::vector<ccm_kv> labels = {{str("zone"), str("z1")}, {str("role"), str("web")},
                                {str("zone"), str("z2")}};
  std::vector<ccm_kv> annotations = {{str("note"), str("x")}};
  std::vector<ccm_node_address> addresses = {{str("InternalIP"), str("10.0.0.5")},
                                             {str("InternalIP"), str("fd00::5")}};
  ccm_node_info info{sizeof(ccm_node_info), str("m-id"), str("uuid-1"), str("boot-1"),
                     str("6.1"),            str("Debian"), str("containerd://1.7"),
                     str("v1.31.0"),        str("linux"), str("arm64")};
  ccm_node node{};
  node.struct_size = sizeof(ccm_node);
  node.name = str(name);
  node.uid = str("uid-1");
  node.provider_id = str("mycloud://r1/i-1");
  node.labels = labels.data();
  node.label_count = labels.size();
  node.annotations = annotations.data();
  node.annotation_count = annotations.size();
  node.addresses = addresses.data();
  node.address_count = addresses.size();
  node.node_info = &info;
  node.object_json = str(R"({"kind":"Node"})");

  ccm::sdk::Node copy = ccm::sdk::NodeView(&node).toNode();
  name.assign(name.size(), '#');  // the host's memory changes once the call is over

  CHECK(copy.name == "node-a");
  CHECK(copy.uid == "uid-1");
  CHECK(copy.provider_id == "mycloud://r1/i-1");
  CHECK(copy.labels == ccm::sdk::StringMap{{"role", "web"}, {"zone", "z2"}});
  CHECK(copy.annotations == ccm::sdk::StringMap{{"note", "x"}});
  CHECK(copy.addresses == std::vector<ccm::sdk::NodeAddress>{{"InternalIP", "10.0.0.5"},
                                                             {"InternalIP", "fd00::5"}});
  CHECK(copy.node_info == ccm::sdk::NodeInfo{"m-id", "uuid-1", "boot-1", "6.1", "Debian",
                                             "containerd://1.7", "v1.31.0", "linux", "arm64"});
  CHECK(copy.object_json == R"({"kind":"Node"})");
}

TEST_CASE("toNode reads NULL arrays with counts, and a short node_info, as empty") {
  ccm_node_info info{};
  info.struct_size = sizeof(uint32_t);  // a sender that knew none of the fields
  ccm_node node{};
  node.struct_size = sizeof(ccm_node);
  node.name = str("n");
  node.label_count = 3;
  node.annotation_count = 2;
  node.address_count = 4;
  node.node_info = &info;
  ccm::sdk::Node copy = ccm::sdk::NodeView(&node).toNode();
  CHECK(copy.name == "n");
  CHECK(copy.labels.empty());
  CHECK(copy.annotations.empty());
  CHECK(copy.addresses.empty());
  CHECK(copy.node_info == ccm::sdk::NodeInfo{});
  CHECK(copy.object_json.empty());
}

TEST_CASE("toService copies every field, ports and current status included") {
  std::vector<ccm_kv> labels = {{str("app"), str("web")}};
  std::vector<ccm_kv> annotations = {{str("lb.example/size"), str("small")},
                                     {str("lb.example/size"), str("large")}};
  ccm_service_port http{sizeof(ccm_service_port), str("http"), str("TCP"), 80, 30080,
                        str("8080"), str("kubernetes.io/h2c")};
  ccm_service_port dns{sizeof(ccm_service_port), str("dns"), str("UDP"), 53, 30053,
                       str("dns"), str("")};
  std::vector<const ccm_service_port*> ports = {&http, &dns};
  std::vector<ccm_str> ranges = {str("10.0.0.0/8"), str("fd00::/8")};
  std::vector<ccm_str> families = {str("IPv6"), str("IPv4")};
  ccm_lb_ingress ingress{sizeof(ccm_lb_ingress), str("203.0.113.7"), str(""), str("VIP"),
                         nullptr, 0};
  const ccm_lb_ingress* ingress_ptr = &ingress;
  std::vector<ccm_kv> status_annotations = {{str("lb.example/id"), str("lb-1")}};
  ccm_lb_status current{sizeof(ccm_lb_status), &ingress_ptr, 1, status_annotations.data(),
                        status_annotations.size(), nullptr, 0};
  ccm_service svc{};
  svc.struct_size = sizeof(ccm_service);
  svc.namespace_ = str("shop");
  svc.name = str("front");
  svc.uid = str("uid-9");
  svc.labels = labels.data();
  svc.label_count = labels.size();
  svc.annotations = annotations.data();
  svc.annotation_count = annotations.size();
  svc.type = str("LoadBalancer");
  svc.ports = ports.data();
  svc.port_count = ports.size();
  svc.load_balancer_ip = str("203.0.113.7");
  svc.source_ranges = ranges.data();
  svc.source_range_count = ranges.size();
  svc.external_traffic_policy = str("Local");
  svc.health_check_node_port = 32000;
  svc.ip_families = families.data();
  svc.ip_family_count = families.size();
  svc.load_balancer_class = str("example.com/lb");
  svc.session_affinity = str("ClientIP");
  svc.cluster_ip = str("fd00::10");
  svc.current_status = &current;
  svc.object_json = str(R"({"spec":{"ipFamilyPolicy":"PreferDualStack"}})");

  ccm::sdk::Service copy = ccm::sdk::ServiceView(&svc).toService();
  http.port = 1;  // the host's memory changes once the call is over

  CHECK(copy.namespace_ == "shop");
  CHECK(copy.name == "front");
  CHECK(copy.uid == "uid-9");
  CHECK(copy.labels == ccm::sdk::StringMap{{"app", "web"}});
  CHECK(copy.annotations == ccm::sdk::StringMap{{"lb.example/size", "large"}});
  CHECK(copy.type == "LoadBalancer");
  CHECK(copy.ports ==
        std::vector<ccm::sdk::ServicePort>{{"http", "TCP", 80, 30080, "8080", "kubernetes.io/h2c"},
                                           {"dns", "UDP", 53, 30053, "dns", ""}});
  CHECK(copy.load_balancer_ip == "203.0.113.7");
  CHECK(copy.source_ranges == std::vector<std::string>{"10.0.0.0/8", "fd00::/8"});
  CHECK(copy.external_traffic_policy == "Local");
  CHECK(copy.health_check_node_port == 32000);
  CHECK(copy.ip_families == std::vector<std::string>{"IPv6", "IPv4"});
  CHECK(copy.load_balancer_class == "example.com/lb");
  CHECK(copy.session_affinity == "ClientIP");
  CHECK(copy.cluster_ip == "fd00::10");
  REQUIRE(copy.current_status.ingress.size() == 1);
  CHECK(copy.current_status.ingress[0].ip == "203.0.113.7");
  CHECK(copy.current_status.ingress[0].ip_mode == "VIP");
  CHECK(copy.current_status.annotations == ccm::sdk::Labels{{"lb.example/id", "lb-1"}});
  CHECK(copy.object_json == R"({"spec":{"ipFamilyPolicy":"PreferDualStack"}})");
}

TEST_CASE("toService reads NULL arrays with counts and NULL ports as empty") {
  ccm_service_port* missing = nullptr;
  ccm_lb_status current{};
  current.struct_size = sizeof(ccm_lb_status);
  ccm_service svc{};
  svc.struct_size = sizeof(ccm_service);
  svc.name = str("s");
  svc.label_count = 2;
  svc.annotation_count = 2;
  svc.ports = &missing;  // one port slot, NULL: read as an all-zero port
  svc.port_count = 1;
  svc.source_range_count = 5;
  svc.ip_family_count = 2;
  svc.current_status = &current;
  ccm::sdk::Service copy = ccm::sdk::ServiceView(&svc).toService();
  CHECK(copy.name == "s");
  CHECK(copy.labels.empty());
  CHECK(copy.annotations.empty());
  CHECK(copy.ports == std::vector<ccm::sdk::ServicePort>{ccm::sdk::ServicePort{}});
  CHECK(copy.source_ranges.empty());
  CHECK(copy.ip_families.empty());
  CHECK(copy.current_status == ccm::sdk::LoadBalancerStatus{});
}
