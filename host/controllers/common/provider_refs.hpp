// Conversions from the informer's compact objects (kube::Node, kube::Service) to the
// provider's inputs (plugin::NodeRef, plugin::ServiceRef). The refs are views: keep the
// holder (and the snapshot it was built from) alive for the provider call.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "host/kube/objects/node.hpp"
#include "host/kube/objects/service.hpp"
#include "host/plugin/provider.hpp"

namespace ccm::controllers {

// What a string of a NodeRef is, for a builder that copies the strings (buildNodeRef's `text`).
enum class NodeText {
  Name,             // the node's name (first, before any other string)
  Own,              // unique to the node: uid, providerID, machine/system/boot IDs
  Shared,           // likely repeated across nodes: keys, address types, versions, OS
  LabelValue,       // a label's value
  AnnotationValue,  // an annotation's value
  Address,          // an address
};

// The provider ref of `n`, the one mapping of a kube::Node to a plugin::NodeRef: its pairs
// are written at *kv and its addresses at *addr (both advanced past them; the caller sized
// the blocks), and every string is what text(view, NodeText) returns for it: the view itself
// for refs that view the Node, a copy for refs that must outlive it.
template <typename Text>
plugin::NodeRef buildNodeRef(const kube::Node& n, plugin::KeyValueRef*& kv,
                             plugin::AddressRef*& addr, Text&& text) {
  plugin::NodeRef r;
  r.name = text(n.name(), NodeText::Name);
  r.uid = text(n.uid(), NodeText::Own);
  r.provider_id = text(n.providerId(), NodeText::Own);
  r.labels = {kv, n.labels().size()};
  for (const auto& p : n.labels()) {
    *kv++ = {text(p.key, NodeText::Shared), text(p.value, NodeText::LabelValue)};
  }
  r.annotations = {kv, n.annotations().size()};
  for (const auto& p : n.annotations()) {
    *kv++ = {text(p.key, NodeText::Shared), text(p.value, NodeText::AnnotationValue)};
  }
  r.addresses = {addr, n.addresses().size()};
  for (const auto& a : n.addresses()) {
    *addr++ = {text(a.type, NodeText::Shared), text(a.address, NodeText::Address)};
  }
  const auto& ni = n.nodeInfo();
  r.node_info = {text(ni.machine_id, NodeText::Own),
                 text(ni.system_uuid, NodeText::Own),
                 text(ni.boot_id, NodeText::Own),
                 text(ni.kernel_version, NodeText::Shared),
                 text(ni.os_image, NodeText::Shared),
                 text(ni.container_runtime_version, NodeText::Shared),
                 text(ni.kubelet_version, NodeText::Shared),
                 text(ni.operating_system, NodeText::Shared),
                 text(ni.architecture, NodeText::Shared)};
  return r;
}

// Holds NodeRefs for a set of nodes. The refs' arrays (labels, annotations, addresses) of
// all the nodes given to one add() share one block each, never moved once filled, so a ref
// stays valid until the NodeRefs goes: one add() of 100,000 nodes makes two blocks, not two
// vectors per node. The refs view the Nodes' own strings, so a NodeRefs keeps its Nodes
// alive; the service controller's NodeSet, kept across heartbeats, copies the strings
// instead (host/controllers/service/node_set.hpp).
class NodeRefs {
 public:
  NodeRefs() = default;
  explicit NodeRefs(std::span<const std::shared_ptr<const kube::Node>> nodes) { add(nodes); }
  NodeRefs(const NodeRefs&) = delete;
  NodeRefs& operator=(const NodeRefs&) = delete;

  void add(std::span<const std::shared_ptr<const kube::Node>> nodes);
  // Adds one node; returns its ref (a copy: later adds may move the stored refs, never the
  // arrays it points to).
  plugin::NodeRef add(const std::shared_ptr<const kube::Node>& node);

  std::span<const plugin::NodeRef> refs() const { return refs_; }
  const plugin::NodeRef& operator[](size_t i) const { return refs_[i]; }
  size_t size() const { return refs_.size(); }

 private:
  std::vector<std::shared_ptr<const kube::Node>> nodes_;  // keeps the viewed strings alive
  std::vector<std::unique_ptr<plugin::KeyValueRef[]>> pair_blocks_;
  std::vector<std::unique_ptr<plugin::AddressRef[]>> address_blocks_;
  std::vector<plugin::NodeRef> refs_;
};

// Holds a ServiceRef for one service.
class ServiceRefHolder {
 public:
  explicit ServiceRefHolder(std::shared_ptr<const kube::Service> service);
  ServiceRefHolder(const ServiceRefHolder&) = delete;
  ServiceRefHolder& operator=(const ServiceRefHolder&) = delete;
  const plugin::ServiceRef& ref() const { return ref_; }

 private:
  std::shared_ptr<const kube::Service> service_;
  std::vector<plugin::KeyValueRef> labels_;
  std::vector<plugin::KeyValueRef> annotations_;
  std::vector<plugin::ServicePortRef> ports_;
  std::vector<std::string> target_ports_;
  plugin::LoadBalancerStatus status_;
  plugin::ServiceRef ref_;
};

}  // namespace ccm::controllers
