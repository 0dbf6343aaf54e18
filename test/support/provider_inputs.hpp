// Test helper: owned Node and Service inputs for plugin::Provider calls (NodeRef/ServiceRef
// are views; these hold the strings they point to).
#pragma once

#include <string>
#include <vector>

#include "host/plugin/provider.hpp"

namespace ccm::testing {

struct TestNode {
  explicit TestNode(std::string n = "") : name(std::move(n)) {}

  std::string name;
  std::string uid = "uid-0";
  std::string provider_id;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<std::string, std::string>> annotations;
  std::vector<std::pair<std::string, std::string>> addresses;  // type, address

  // Views valid while this TestNode lives and is not modified.
  plugin::NodeRef ref() {
    kv_labels_.clear();
    kv_annotations_.clear();
    addr_refs_.clear();
    for (auto& [k, v] : labels) {
      kv_labels_.push_back({k, v});
    }
    for (auto& [k, v] : annotations) {
      kv_annotations_.push_back({k, v});
    }
    for (auto& [t, a] : addresses) {
      addr_refs_.push_back({t, a});
    }
    plugin::NodeRef r;
    r.name = name;
    r.uid = uid;
    r.provider_id = provider_id;
    r.labels = kv_labels_;
    r.annotations = kv_annotations_;
    r.addresses = addr_refs_;
    return r;
  }

 private:
  std::vector<plugin::KeyValueRef> kv_labels_;
  std::vector<plugin::KeyValueRef> kv_annotations_;
  std::vector<plugin::AddressRef> addr_refs_;
};

struct TestService {
  std::string namespace_name = "default";
  std::string name = "web";
  std::string uid = "11111111-2222-3333-4444-555555555555";
  std::string load_balancer_ip;
  std::vector<plugin::ServicePortRef> ports = {{"http", "TCP", 80, 30080, "8080", ""}};
  std::vector<std::string_view> source_ranges;
  std::vector<plugin::KeyValueRef> annotations;

  plugin::ServiceRef ref() const {
    plugin::ServiceRef r;
    r.namespace_name = namespace_name;
    r.name = name;
    r.uid = uid;
    r.type = "LoadBalancer";
    r.ports = ports;
    r.load_balancer_ip = load_balancer_ip;
    r.source_ranges = source_ranges;
    r.annotations = annotations;
    r.external_traffic_policy = "Cluster";
    return r;
  }
};

}  // namespace ccm::testing
