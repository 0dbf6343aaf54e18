// Builders for the exact writes the cloud controllers make, as PATCH bodies:
//  - NodePatch: strategic-merge patch of a Node's labels/annotations, spec.providerID,
//    spec.taints (the whole list: taints have no merge key), spec.podCIDR(s), with an
//    optional metadata.resourceVersion precondition (the server answers 409 on mismatch);
//  - nodeAddressesPatch: status.addresses as a full replacement (the list's merge key, type,
//    is not unique, so the list ends with {"$patch":"replace"});
//  - nodeConditionsPatch: status.conditions merged by type;
//  - finalizerAddPatch / finalizerRemovePatch: metadata.finalizers (removal through
//    $deleteFromPrimitiveList so other finalizers survive);
//  - serviceLoadBalancerStatusPatch: status.loadBalancer (ingress replaced as a whole);
//  - labelsMergePatch: a JSON merge patch of labels (kubectl label style).
// Send node status and service status/finalizer patches to the "status" subresource
// (nodeStatusPath, serviceStatusPath) with PatchType::Strategic.
//
// THREAD: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/kube/objects/node.hpp"
#include "host/kube/objects/service.hpp"

namespace ccm::kube {

struct TaintSpec {
  std::string key;
  std::string value;
  std::string effect;
  int64_t time_added = 0;  // Unix seconds; 0 = not sent
  bool operator==(const TaintSpec&) const = default;
};

struct AddressSpec {
  std::string type;
  std::string address;
  bool operator==(const AddressSpec&) const = default;
};

struct ConditionSpec {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  int64_t last_heartbeat_time = 0;   // Unix seconds; 0 = not sent
  int64_t last_transition_time = 0;  // Unix seconds; 0 = not sent
};

struct PortStatusSpec {
  int32_t port = 0;
  std::string protocol;
  std::optional<std::string> error;
  bool operator==(const PortStatusSpec&) const = default;
};

struct IngressSpec {
  std::string ip;
  std::string hostname;
  std::string ip_mode;
  std::vector<PortStatusSpec> ports;
  bool operator==(const IngressSpec&) const = default;
};

// Copies of cached values, for building patches from a snapshot.
std::vector<TaintSpec> taintSpecs(const NodeList<Taint>& taints);
std::vector<AddressSpec> addressSpecs(const NodeList<NodeAddress>& addresses);
std::vector<IngressSpec> ingressSpecs(std::span<const LoadBalancerIngress> ingress);

class NodePatch {
 public:
  // metadata.resourceVersion precondition (409 Conflict when the node has changed).
  NodePatch& resourceVersion(std::string_view rv);
  NodePatch& setLabel(std::string_view key, std::string_view value);
  NodePatch& removeLabel(std::string_view key);
  NodePatch& setAnnotation(std::string_view key, std::string_view value);
  NodePatch& removeAnnotation(std::string_view key);
  NodePatch& providerId(std::string_view provider_id);
  // Replaces spec.taints with exactly this list (empty = no taints).
  NodePatch& taints(std::vector<TaintSpec> taints);
  NodePatch& podCidrs(std::string_view pod_cidr, std::vector<std::string> pod_cidrs);

  // True when nothing but (maybe) the precondition was set.
  bool empty() const;
  std::string build() const;

 private:
  std::string rv_;
  std::map<std::string, std::optional<std::string>> labels_;
  std::map<std::string, std::optional<std::string>> annotations_;
  std::optional<std::string> provider_id_;
  std::optional<std::vector<TaintSpec>> taints_;
  std::optional<std::string> pod_cidr_;
  std::optional<std::vector<std::string>> pod_cidrs_;
};

// {"status":{"addresses":[...,{"$patch":"replace"}]}}, with {"metadata":{"resourceVersion":..}}
// as a precondition when `resource_version` is not empty.
std::string nodeAddressesPatch(const std::vector<AddressSpec>& addresses,
                               std::string_view resource_version = {});
// {"status":{"conditions":[...]}} (merged by type on the server)
std::string nodeConditionsPatch(const std::vector<ConditionSpec>& conditions);
// {"metadata":{"finalizers":["<f>"]}}
std::string finalizerAddPatch(std::string_view finalizer);
// {"metadata":{"$deleteFromPrimitiveList/finalizers":["<f>"]}}
std::string finalizerRemovePatch(std::string_view finalizer);
// {"status":{"loadBalancer":{"ingress":[...]}}}; empty list -> {"ingress":null}
std::string serviceLoadBalancerStatusPatch(const std::vector<IngressSpec>& ingress);
// JSON merge patch {"metadata":{"labels":{"k":"v","gone":null}}} (nullopt removes).
std::string labelsMergePatch(const std::map<std::string, std::optional<std::string>>& labels);
// JSON merge patch {"metadata":{"annotations":{"k":"v","gone":null}}} (nullopt removes).
std::string annotationsMergePatch(
    const std::map<std::string, std::optional<std::string>>& annotations);

// Service ingress equality as upstream's LoadBalancerStatusEqual (IP, hostname, ipMode,
// ports compared in order).
bool ingressEqual(std::span<const LoadBalancerIngress> current,
                  const std::vector<IngressSpec>& desired);

}  // namespace ccm::kube
