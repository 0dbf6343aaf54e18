// NodeSet: an immutable snapshot of the Nodes that belong in every load balancer's host set
// (the stable node set predicates), sorted by name, with their provider NodeRefs built once
// and shared by every EnsureLoadBalancer / UpdateLoadBalancer call made with this snapshot.
//
// The set owns what its refs view: a copy of the fields a provider reads (name, UID,
// providerID, labels, annotations, addresses, nodeInfo), not the kube::Node objects. The set
// is rebuilt only when a node changes in a way the provider sees; a kubelet heartbeat makes a
// new cached Node without a new set, and a set holding the Nodes kept the old version of
// every heartbeating node alive beside the cached one (every node twice). The copy is a few
// large allocations: each node's own strings (name, UID, providerID, addresses, machine and
// boot IDs) in one block, strings that repeat across nodes (label and annotation keys and
// values, address types, kernel and kubelet versions) once per set in a few more, and the
// refs' pairs and addresses in one array each.
//
// The service controller holds a set only while load-balancer calls use it: when its queue
// drains the set is dropped (at 100,000 nodes it is ≈ 100 MB), and node changes in between
// are compared by membership alone (membershipOf), so a set is built again only by the next
// call that needs the hosts.
//
// Membership: what a load balancer remembers of the set it was last synced with. Not the
// snapshot: a snapshot holds every node, and with many load balancers each synced at a
// different node generation the host kept one snapshot per load balancer alive, memory
// growing with nodes x load balancers.
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

#include "host/kube/objects/node.hpp"
#include "host/plugin/provider.hpp"

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

  size_t size() const { return refs_.size(); }
  bool empty() const { return refs_.empty(); }
  // Sorted by name; views into the set, valid as long as it lives.
  std::span<const plugin::NodeRef> refs() const { return refs_; }
  // The refs with this snapshot's provider forms: a provider converts the hosts once for all
  // the load balancers synced with this snapshot.
  plugin::SharedHosts hosts() const { return {refs_, &forms_}; }
  // Drops the providers' forms until the next call needs them again (the calls are done).
  void releaseForms() const { forms_.clear(); }
  // The node-event generation this snapshot was built at.
  uint64_t generation() const { return generation_; }

  const Membership& membership() const { return membership_; }
  // Upstream's nodesSufficientlyEqual: the same node names with the same providerIDs.
  bool sameMembers(const NodeSet& other) const { return membership_ == other.membership_; }

  // "[a b c <N more>]" with at most `limit` names (for event messages).
  std::string loggableNames(size_t limit = 20) const;

  // Heap bytes of the strings the refs view (the blocks as allocated).
  size_t textBytes() const { return text_bytes_; }
  // Heap bytes of the refs themselves, their pairs and addresses (without the text).
  size_t refBytes() const;

 private:
  // Each node's own strings, then the strings shared across nodes (blocks never moved).
  std::vector<std::unique_ptr<char[]>> text_;
  size_t text_bytes_ = 0;
  std::unique_ptr<plugin::KeyValueRef[]> pairs_;     // every node's labels, then annotations
  std::unique_ptr<plugin::AddressRef[]> addresses_;  // every node's addresses
  size_t pair_count_ = 0;
  size_t address_count_ = 0;
  std::vector<plugin::NodeRef> refs_;
  plugin::HostForms forms_;
  Membership membership_;
  uint64_t generation_ = 0;
};

// The membership of the set these Nodes would make (the ones passing nodeInLoadBalancerSet),
// without building it: no refs, no copy of their strings. Equal to NodeSet(nodes).membership().
Membership membershipOf(std::vector<std::shared_ptr<const kube::Node>> nodes);

// Whether a load balancer last synced with `synced` (nullopt: never) has the `current` members.
bool sameMembers(const std::optional<Membership>& synced, const Membership& current);

}  // namespace ccm::controllers::service
