// NodeSet: an immutable snapshot of the Nodes that belong in every load balancer's host set
// (the stable node set predicates), sorted by name, with their provider NodeRefs built once
// and shared by every EnsureLoadBalancer / UpdateLoadBalancer call made with this snapshot.
//
// Membership: what a load balancer remembers of the set it was last synced with. Not the
// snapshot: a snapshot holds every node (and pins those versions of the Node objects), and
// with many load balancers each synced at a different node generation the host kept one
// snapshot per load balancer alive, memory growing with nodes x load balancers.
//
// THREAD: immutable after construction; share as std::shared_ptr<const NodeSet>.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "host/controllers/common/provider_refs.hpp"
#include "host/kube/objects/node.hpp"

namespace ccm::controllers::service {

// The members of a host set as upstream's nodesSufficientlyEqual compares them (node names
// with their providerIDs): how many, and a SHA-256 digest (its first 128 bits) of the sorted
// pairs, each string length-prefixed. 24 bytes, whatever the number of nodes.
struct Membership {
  size_t count = 0;
  std::array<uint64_t, 2> digest{};
  bool operator==(const Membership&) const = default;
};

class NodeSet {
 public:
  // Keeps the nodes passing nodeInLoadBalancerSet(), sorted by name.
  NodeSet(std::vector<std::shared_ptr<const kube::Node>> nodes, uint64_t generation);
  NodeSet(const NodeSet&) = delete;
  NodeSet& operator=(const NodeSet&) = delete;

  size_t size() const { return nodes_.size(); }
  bool empty() const { return nodes_.empty(); }
  const std::vector<std::shared_ptr<const kube::Node>>& nodes() const { return nodes_; }
  std::span<const plugin::NodeRef> refs() const { return refs_.refs(); }
  // The refs with this snapshot's provider forms: a provider converts the hosts once for all
  // the load balancers synced with this snapshot.
  plugin::SharedHosts hosts() const { return {refs_.refs(), &forms_}; }
  // Drops the providers' forms until the next call needs them again (the calls are done).
  void releaseForms() const { forms_.clear(); }
  // The node-event generation this snapshot was built at.
  uint64_t generation() const { return generation_; }

  const Membership& membership() const { return membership_; }
  // Upstream's nodesSufficientlyEqual: the same node names with the same providerIDs.
  bool sameMembers(const NodeSet& other) const { return membership_ == other.membership_; }

  // "[a b c <N more>]" with at most `limit` names (for event messages).
  std::string loggableNames(size_t limit = 20) const;

 private:
  std::vector<std::shared_ptr<const kube::Node>> nodes_;
  NodeRefs refs_;
  plugin::HostForms forms_;
  Membership membership_;
  uint64_t generation_ = 0;
};

// Whether a load balancer last synced with `synced` (nullopt: never) has the members of
// `current` (a null set has none to compare: false).
bool sameMembers(const std::optional<Membership>& synced,
                 const std::shared_ptr<const NodeSet>& current);

}  // namespace ccm::controllers::service
