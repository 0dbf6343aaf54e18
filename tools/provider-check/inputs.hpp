// The inputs ccm-provider-check hands to a plugin: Nodes and Services it generates, owned
// here (plugin::NodeRef and plugin::ServiceRef are views into them). Each has a kind that
// names it in the report ("ordinary", "unicode", "253-byte name", ...).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "host/plugin/provider.hpp"

namespace ccm::check {

class OwnedNode {
 public:
  OwnedNode(std::string kind, std::string name);

  const std::string& kind() const { return kind_; }
  // Views valid while this OwnedNode lives and is not moved.
  plugin::NodeRef ref() const;

  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<std::string, std::string>> addresses;  // type, address

  // Rebuilds the views after the fields above changed. Call before ref(); ref() may then be
  // called from several threads at once.
  void seal();

 private:
  std::string kind_;
  std::string name_;
  std::string uid_;
  std::vector<plugin::KeyValueRef> label_refs_;
  std::vector<plugin::AddressRef> address_refs_;
};

class OwnedService {
 public:
  OwnedService(std::string kind, std::string name);

  const std::string& kind() const { return kind_; }
  plugin::ServiceRef ref() const;

  std::vector<std::string> ip_families;
  std::string load_balancer_ip;
  std::string cluster_ip = "10.96.0.10";
  std::vector<std::string> source_ranges;
  std::vector<std::pair<std::string, std::string>> annotations;
  bool no_ports = false;

  // As OwnedNode::seal.
  void seal();

 private:
  std::string kind_;
  std::string name_;
  std::string uid_;
  std::vector<plugin::ServicePortRef> ports_;
  std::vector<std::string_view> family_refs_;
  std::vector<std::string_view> range_refs_;
  std::vector<plugin::KeyValueRef> annotation_refs_;
};

// Ordinary, Unicode name, 253-byte name, no labels or addresses, 10,000 labels, IPv6 only,
// dual-stack. Returned sealed; never move an element after taking a ref().
std::vector<OwnedNode> nodeInputs();
// Ordinary, Unicode name, IPv6 only, dual-stack, no ports, 10,000 source ranges.
std::vector<OwnedService> serviceInputs();
// count ordinary nodes named <prefix>-<i>.
std::vector<OwnedNode> manyNodes(const std::string& prefix, size_t count);
// Routes: IPv4, IPv6, and one whose target node has dual-stack addresses.
std::vector<std::pair<std::string, plugin::Route>> routeInputs();

}  // namespace ccm::check
