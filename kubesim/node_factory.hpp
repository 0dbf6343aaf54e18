// NodeFactory: Node and node Lease objects as a kubelet started with
// --cloud-provider=external registers them — the node.cloudprovider.kubernetes.io/uninitialized
// taint, a Hostname address (plus the provided-node-ip annotation when configured), node info,
// capacity/allocatable, the four kubelet conditions and an image list, so each Node is several
// KB like a real one. Sizes vary deterministically with the node's index.
//
// THREAD: stateless apart from its options; safe from any thread.
#pragma once

#include <string>

#include "kubesim/json_util.hpp"

namespace ccm::kubesim {

class NodeFactory {
 public:
  struct Options {
    std::string kubelet_version = "v1.32.0";
    bool provided_node_ip = false;  // annotate alpha.kubernetes.io/provided-node-ip
    int lease_duration_seconds = 40;
  };

  explicit NodeFactory(Options options) : options_(std::move(options)) {}

  // The node name for index i (1-based) with prefix: "<prefix><5-digit index>".
  static std::string nodeName(const std::string& prefix, int index);
  // A private IPv4 address derived from the index (10.x.y.z).
  static std::string nodeIp(int index);

  // The Node a kubelet registers (JSON body for create).
  std::string node(const std::string& name, int index, WallTime now) const;
  // Its Lease in kube-node-lease, owned by the Node.
  std::string lease(const std::string& name, const std::string& node_uid, WallTime now) const;

  // Sets the Ready condition (and for "Unknown" every condition, as the node lifecycle
  // controller does) with kubelet-like reasons; bumps lastTransitionTime on changes and
  // lastHeartbeatTime always.
  static void setConditions(JsonValue& node, JsonAllocator& alloc, const std::string& ready,
                            WallTime now);

 private:
  Options options_;
};

}  // namespace ccm::kubesim
