#include "tools/provider-check/inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace ccm::check {

OwnedNode::OwnedNode(std::string kind, std::string name)
    : kind_(std::move(kind)), name_(std::move(name)), uid_("uid-" + name_.substr(0, 40)) {
  labels = {{"kubernetes.io/hostname", name_.substr(0, 63)}, {"kubernetes.io/os", "linux"}};
  addresses = {{"InternalIP", "10.0.0.5"}, {"Hostname", name_}};
}

void OwnedNode::seal() {
  label_refs_.clear();
  address_refs_.clear();
  for (const auto& [k, v] : labels) {
    label_refs_.push_back({k, v});
  }
  for (const auto& [t, a] : addresses) {
    address_refs_.push_back({t, a});
  }
}

plugin::NodeRef OwnedNode::ref() const {
  plugin::NodeRef r;
  r.name = name_;
  r.uid = uid_;
  r.labels = label_refs_;
  r.addresses = address_refs_;
  r.node_info.operating_system = "linux";
  r.node_info.architecture = "amd64";
  r.node_info.kubelet_version = "v1.31.0";
  r.node_info.system_uuid = "4c4c4544-0000-1000-8000-000000000001";
  return r;
}

OwnedService::OwnedService(std::string kind, std::string name)
    : kind_(std::move(kind)),
      name_(std::move(name)),
      uid_(fmt::format("6f1c0b2a-0000-4000-8000-{:012x}",
                       std::hash<std::string>{}(name_) & 0xFFFFFFFFFFFFULL)) {
  ip_families = {"IPv4"};
}

void OwnedService::seal() {
  ports_.clear();
  if (!no_ports) {
    ports_.push_back({"http", "TCP", 80, 30080, "8080", ""});
    ports_.push_back({"dns", "UDP", 53, 30053, "53", ""});
  }
  family_refs_.assign(ip_families.begin(), ip_families.end());
  range_refs_.assign(source_ranges.begin(), source_ranges.end());
  annotation_refs_.clear();
  for (const auto& [k, v] : annotations) {
    annotation_refs_.push_back({k, v});
  }
}

plugin::ServiceRef OwnedService::ref() const {
  plugin::ServiceRef r;
  r.namespace_name = "provider-check";
  r.name = name_;
  r.uid = uid_;
  r.type = "LoadBalancer";
  r.ports = ports_;
  r.load_balancer_ip = load_balancer_ip;
  r.source_ranges = range_refs_;
  r.annotations = annotation_refs_;
  r.external_traffic_policy = "Cluster";
  r.ip_families = family_refs_;
  r.session_affinity = "None";
  r.cluster_ip = cluster_ip;
  return r;
}

std::vector<OwnedNode> nodeInputs() {
  std::vector<OwnedNode> nodes;
  nodes.reserve(7);
  nodes.emplace_back("ordinary", "check-node-1");
  nodes.emplace_back("unicode name", "n\xc5\x93ud-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x9a\x80");
  // A DNS subdomain at its longest: 253 bytes, dot-separated labels of at most 63.
  std::string long_name;
  while (long_name.size() < 253) {
    if (!long_name.empty()) {
      long_name += '.';
    }
    long_name += std::string(std::min<size_t>(62, 253 - long_name.size()), 'a');
  }
  nodes.emplace_back("253-byte name", long_name);
  OwnedNode& empty = nodes.emplace_back("empty lists", "check-node-empty");
  empty.labels.clear();
  empty.addresses.clear();
  OwnedNode& many = nodes.emplace_back("10000 labels", "check-node-many");
  for (int i = 0; i < 10000; ++i) {
    many.labels.emplace_back(fmt::format("check.example.com/l{}", i), fmt::format("v{}", i));
  }
  OwnedNode& v6 = nodes.emplace_back("IPv6", "check-node-v6");
  v6.addresses = {{"InternalIP", "fd00:10::5"}, {"Hostname", "check-node-v6"}};
  OwnedNode& dual = nodes.emplace_back("dual-stack", "check-node-dual");
  dual.addresses = {
      {"InternalIP", "10.0.0.6"}, {"InternalIP", "fd00:10::6"}, {"Hostname", "check-node-dual"}};
  for (auto& n : nodes) {
    n.seal();
  }
  return nodes;
}

std::vector<OwnedNode> manyNodes(const std::string& prefix, size_t count) {
  std::vector<OwnedNode> nodes;
  nodes.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    OwnedNode& n = nodes.emplace_back("ordinary", fmt::format("{}-{}", prefix, i));
    n.addresses[0].second = fmt::format("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    n.seal();
  }
  return nodes;
}

std::vector<OwnedService> serviceInputs() {
  std::vector<OwnedService> services;
  services.reserve(6);
  services.emplace_back("ordinary", "check-web");
  services.emplace_back("unicode name", "check-\xc3\xa9t\xc3\xa9-\xe6\x97\xa5");
  OwnedService& v6 = services.emplace_back("IPv6", "check-web-v6");
  v6.ip_families = {"IPv6"};
  v6.cluster_ip = "fd00:96::10";
  v6.load_balancer_ip = "2001:db8::10";
  OwnedService& dual = services.emplace_back("dual-stack", "check-web-dual");
  dual.ip_families = {"IPv4", "IPv6"};
  dual.source_ranges = {"192.0.2.0/24", "2001:db8::/64"};
  OwnedService& none = services.emplace_back("empty lists", "check-web-empty");
  none.no_ports = true;
  none.ip_families.clear();
  OwnedService& many = services.emplace_back("10000 source ranges", "check-web-many");
  for (int i = 0; i < 10000; ++i) {
    many.source_ranges.push_back(fmt::format("10.{}.{}.0/24", (i >> 8) & 255, i & 255));
  }
  for (auto& s : services) {
    s.seal();
  }
  return services;
}

std::vector<std::pair<std::string, plugin::Route>> routeInputs() {
  std::vector<std::pair<std::string, plugin::Route>> routes;
  plugin::Route v4;
  v4.name = "check-node-1-route";
  v4.target_node = "check-node-1";
  v4.destination_cidr = "10.244.1.0/24";
  v4.target_node_addresses = {{"InternalIP", "10.0.0.5"}};
  routes.emplace_back("IPv4", v4);
  plugin::Route v6;
  v6.name = "check-node-v6-route";
  v6.target_node = "check-node-v6";
  v6.destination_cidr = "fd00:244:1::/64";
  v6.target_node_addresses = {{"InternalIP", "fd00:10::5"}};
  routes.emplace_back("IPv6", v6);
  plugin::Route dual;
  dual.name = "check-node-dual-route";
  dual.target_node = "check-node-dual";
  dual.destination_cidr = "10.244.2.0/24";
  dual.target_node_addresses = {{"InternalIP", "10.0.0.6"}, {"InternalIP", "fd00:10::6"}};
  routes.emplace_back("dual-stack", dual);
  return routes;
}

}  // namespace ccm::check
