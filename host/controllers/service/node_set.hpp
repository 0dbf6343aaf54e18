// NodeSet: an immutable snapshot of the Nodes that belong in every load balancer's host set
// (the stable node set predicates), sorted by name, with their provider NodeRefs built once
// and shared by every EnsureLoadBalancer / UpdateLoadBalancer call made with this snapshot.
//
// THREAD: immutable after construction; share as std::shared_ptr<const NodeSet>.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "host/controllers/common/provider_refs.hpp"
#include "host/kube/objects/node.hpp"

namespace ccm::controllers::service {

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
  // The node-event generation this snapshot was built at.
  uint64_t generation() const { return generation_; }

  // Upstream's nodesSufficientlyEqual: the same node names with the same providerIDs.
  bool sameMembers(const NodeSet& other) const;

  // "[a b c <N more>]" with at most `limit` names (for event messages).
  std::string loggableNames(size_t limit = 20) const;

 private:
  std::vector<std::shared_ptr<const kube::Node>> nodes_;
  NodeRefs refs_;
  uint64_t generation_ = 0;
};

// Same members; a null set equals nothing (not even another null set).
bool sameMembers(const std::shared_ptr<const NodeSet>& a, const std::shared_ptr<const NodeSet>& b);

}  // namespace ccm::controllers::service
