// Dual-stack LoadBalancer Services through the ABI against the simulated Octavia and Neutron:
// one load balancer with an IPv6 additional VIP (Octavia 2.26+), a second load balancer for
// IPv6 on older Octavia or when the Service became dual-stack after its load balancer was
// made, RequireDualStack and PreferDualStack without an IPv6 subnet, and deletion of both.
#include <doctest/doctest.h>

#include <set>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

const std::string kName = "kube_service_kubernetes_default_web";
const std::string kName6 = kName + "_ipv6";

struct Fixture : SimFixture {
  Fixture() {
    for (int i = 1; i <= 2; ++i) {
      nodes.push_back(addNode(i));
    }
  }

  // A node with an IPv4 and an IPv6 address on the private network.
  Node addNode(int i) {
    std::string name = "node-" + std::to_string(i);
    std::string ip4 = "10.0.0." + std::to_string(10 + i);
    std::string ip6 = "fd00::" + std::to_string(10 + i);
    std::string id = sim.addServer(R"({"name":")" + name +
                                   R"(","networks":[{"network":"private","ip":")" + ip4 +
                                   R"("},{"network":"private","ip":")" + ip6 + R"("}]})");
    return node(name, "openstack:///" + id,
                {{"InternalIP", ip4}, {"InternalIP", ip6}, {"Hostname", name}});
  }

  // `tag` makes a provider of its own (Octavia's features are cached per provider).
  Provider& p(const std::string& tag = "", const std::string& lb_extra = "") {
    return provider(cloudConf(sim, "",
                              "[LoadBalancer]\nsubnet-id = sub-private\n"
                              "floating-network-id = net-public\n" +
                                  lb_extra + "\n# " + tag + "\n"));
  }

  static Service web(std::vector<std::string> families = {"IPv4", "IPv6"},
                      const std::string& policy = "RequireDualStack") {
    Service s;
    s.name = "web";
    s.ports = {{"http", "TCP", 80, 30080}};
    s.ip_families = std::move(families);
    s.object_json = ipFamilyPolicyJson(policy);
    return s;
  }

  std::set<std::string> members(const rapidjson::Document& st, const std::string& lb_name) {
    std::set<std::string> out;
    const auto* pool = byName(st, "pools", "pool_0_" + lb_name);
    REQUIRE(pool != nullptr);
    for (const auto& m : st["members"][str(*pool, "id").c_str()].GetArray()) {
      out.insert(m["address"].GetString());
    }
    return out;
  }

  std::set<std::string> lbNames(const rapidjson::Document& st) {
    std::set<std::string> out;
    for (const auto& lb : st["loadbalancers"].GetArray()) {
      out.insert(str(lb, "name"));
    }
    return out;
  }
};

bool isIpv6(const std::string& ip) { return ip.find(':') != std::string::npos; }

}  // namespace

TEST_CASE_FIXTURE(Fixture, "additional VIPs: one load balancer, an ingress per family") {
  size_t ports_before = sim.state()["ports"].Size();
  auto r = p().ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  REQUIRE(r.lb_status->size() == 2);
  CHECK((*r.lb_status)[0].ip.rfind("172.24.4.", 0) == 0);  // the floating IP
  CHECK((*r.lb_status)[1].ip.rfind("fd00::", 0) == 0);     // the IPv6 VIP, as it is
  auto st = sim.state();
  REQUIRE(st["loadbalancers"].Size() == 1);
  const auto& lb = st["loadbalancers"][0];
  REQUIRE(lb["additional_vips"].Size() == 1);
  CHECK(str(lb["additional_vips"][0], "subnet_id") == "sub-private6");
  CHECK(str(lb["additional_vips"][0], "ip_address") == (*r.lb_status)[1].ip);
  CHECK(st["floatingips"].Size() == 1);
  CHECK(members(st, kName) == std::set<std::string>{"10.0.0.11", "10.0.0.12"});

  // Idempotent, and get reports both addresses.
  sim.clearRequests();
  auto again = p().ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(again.ok(), again.error);
  CHECK(countMutations(sim) == 0);
  auto g = p().getLoadBalancer(web());
  REQUIRE(g.ok());
  REQUIRE(g.lb_status.has_value());
  CHECK(g.lb_status->size() == 2);

  auto del = p().removeSettled(web());
  REQUIRE_MESSAGE(del.ok(), del.error);
  st = sim.state();
  CHECK(st["loadbalancers"].Size() == 0);
  CHECK(st["floatingips"].Size() == 0);
  CHECK(st["ports"].Size() == ports_before);
}

TEST_CASE_FIXTURE(Fixture, "ipFamilies [IPv6, IPv4]: the IPv6 ingress comes first") {
  auto r = p().ensureSettled(web({"IPv6", "IPv4"}, "PreferDualStack"), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  REQUIRE(r.lb_status->size() == 2);
  CHECK(isIpv6((*r.lb_status)[0].ip));
  CHECK((*r.lb_status)[1].ip.rfind("172.24.4.", 0) == 0);
}

TEST_CASE_FIXTURE(Fixture, "old Octavia: a second load balancer for IPv6 with IPv6 members") {
  sim.config(R"({"octavia_versions":["v2.0","v2.5","v2.16"]})");
  Provider& old = p("old octavia");
  auto r = old.ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  REQUIRE(r.lb_status->size() == 2);
  CHECK((*r.lb_status)[0].ip.rfind("172.24.4.", 0) == 0);
  CHECK(isIpv6((*r.lb_status)[1].ip));
  auto st = sim.state();
  CHECK(lbNames(st) == std::set<std::string>{kName, kName6});
  const auto* lb6 = byName(st, "loadbalancers", kName6);
  CHECK(str(*lb6, "vip_subnet_id") == "sub-private6");
  CHECK(str(*lb6, "vip_address") == (*r.lb_status)[1].ip);
  CHECK(members(st, kName) == std::set<std::string>{"10.0.0.11", "10.0.0.12"});
  CHECK(members(st, kName6) == std::set<std::string>{"fd00::11", "fd00::12"});
  CHECK(st["floatingips"].Size() == 1);  // IPv4 only

  // A new node joins both load balancers, each with its own family.
  nodes.push_back(addNode(3));
  auto u = old.update(web(), nodes);
  REQUIRE_MESSAGE(u.ok(), u.error);
  st = sim.state();
  CHECK(members(st, kName).count("10.0.0.13") == 1);
  CHECK(members(st, kName6).count("fd00::13") == 1);

  auto del = old.removeSettled(web());
  REQUIRE_MESSAGE(del.ok(), del.error);
  st = sim.state();
  CHECK(st["loadbalancers"].Size() == 0);
  CHECK(st["floatingips"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "a Service made dual-stack later gets a second load balancer, then loses it") {
  auto r = p().ensureSettled(web({"IPv4"}, "SingleStack"), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(r.lb_status->size() == 1);
  // Additional VIPs cannot be added to an existing load balancer: a second one serves IPv6.
  r = p().ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(r.lb_status->size() == 2);
  CHECK(lbNames(sim.state()) == std::set<std::string>{kName, kName6});
  // Back to one family: the IPv6 load balancer goes, the IPv4 one stays.
  r = p().ensureSettled(web({"IPv4"}, "SingleStack"), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(r.lb_status->size() == 1);
  CHECK(lbNames(sim.state()) == std::set<std::string>{kName});
}

TEST_CASE_FIXTURE(Fixture, "no IPv6 subnet: RequireDualStack is refused, PreferDualStack is IPv4") {
  sim.post("/_sim/add", R"({"kind":"networks","object":{"id":"net-v4","name":"v4only"}})");
  sim.post("/_sim/add", R"({"kind":"subnets","object":{"id":"sub-v4","name":"v4only",)"
                        R"("network_id":"net-v4","cidr":"10.9.0.0/24","ip_version":4}})");
  Provider& v4only = p("v4 only", "subnet-id = sub-v4\n");
  sim.clearRequests();
  auto r = v4only.ensure(web(), nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find("RequireDualStack") != std::string::npos);
  CHECK(r.error.find("no IPv6 subnet") != std::string::npos);
  CHECK(countMutations(sim) == 0);
  CHECK(sim.state()["loadbalancers"].Size() == 0);

  auto prefer = v4only.ensureSettled(web({"IPv4", "IPv6"}, "PreferDualStack"), nodes);
  REQUIRE_MESSAGE(prefer.ok(), prefer.error);
  REQUIRE(prefer.lb_status->size() == 1);
  CHECK_FALSE(isIpv6((*prefer.lb_status)[0].ip));
  CHECK(host.logged("IPv4 load balancer only"));
  CHECK(sim.state()["loadbalancers"].Size() == 1);
}

TEST_CASE_FIXTURE(Fixture, "RequireDualStack with load-balancer-id is refused before anything") {
  auto other = sim.post("/_sim/add", R"({"kind":"loadbalancers","object":{"name":"shared",)"
                                     R"("vip_subnet_id":"sub-private","tags":["shared"]}})");
  Service s = web();
  s.annotations = {{"loadbalancer.openstack.org/load-balancer-id", str(other, "id")}};
  sim.clearRequests();
  auto r = p().ensure(s, nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find("load-balancer-id") != std::string::npos);
  CHECK(countMutations(sim) == 0);
}
