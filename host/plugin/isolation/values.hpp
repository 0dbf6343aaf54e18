// The Provider interface's values on the isolation wire (wire.hpp): nodes and services as
// the controllers pass them, and what the provider returns. A decoded node or service owns
// its bytes (NodeData, ServiceData) and hands out the views the Provider interface takes.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "host/plugin/isolation/wire.hpp"
#include "host/plugin/provider.hpp"

namespace ccm::plugin::isolation {

// A node decoded from the wire; ref() points into it (valid while it lives, not moved).
class NodeData {
 public:
  NodeData() = default;
  NodeData(const NodeData&) = delete;
  NodeData& operator=(const NodeData&) = delete;
  void decode(Reader& r);
  const NodeRef& ref() const { return ref_; }

 private:
  std::deque<std::string> strings_;  // a deque: adding never moves the earlier ones
  std::vector<KeyValueRef> labels_;
  std::vector<KeyValueRef> annotations_;
  std::vector<AddressRef> addresses_;
  NodeRef ref_;
  std::string_view keep(std::string_view v) { return strings_.emplace_back(v); }
};

class ServiceData {
 public:
  ServiceData() = default;
  ServiceData(const ServiceData&) = delete;
  ServiceData& operator=(const ServiceData&) = delete;
  void decode(Reader& r);
  const ServiceRef& ref() const { return ref_; }

 private:
  std::deque<std::string> strings_;
  std::vector<KeyValueRef> labels_;
  std::vector<KeyValueRef> annotations_;
  std::vector<ServicePortRef> ports_;
  std::vector<std::string_view> source_ranges_;
  std::vector<std::string_view> ip_families_;
  std::optional<LoadBalancerStatus> current_status_;
  ServiceRef ref_;
  std::string_view keep(std::string_view v) { return strings_.emplace_back(v); }
};

void putNode(Writer& w, const NodeRef& node);
void putService(Writer& w, const ServiceRef& service);
void putMetadata(Writer& w, const InstanceMetadata& m);
void putLoadBalancerStatus(Writer& w, const LoadBalancerStatus& s);
void putRoute(Writer& w, const Route& route);
void putProviderInfo(Writer& w, const ProviderInfo& info);

InstanceMetadata getMetadata(Reader& r);
LoadBalancerStatus getLoadBalancerStatus(Reader& r);
Route getRoute(Reader& r);
ProviderInfo getProviderInfo(Reader& r);

}  // namespace ccm::plugin::isolation
