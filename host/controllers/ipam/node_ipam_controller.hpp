// The node IPAM controller (node-ipam-controller, alias node-ipam), started with
// --allocate-node-cidrs: gives every node without one a pod CIDR from --cluster-cidr (one
// per family for a dual-stack pair), sized by --node-cidr-mask-size(-ipv4/-ipv6), and frees
// it when the node is deleted. The allocation map is rebuilt from the nodes at start, so a
// restart loses nothing. Exhaustion: a CIDRNotAvailable event on the node, a metric, retries
// with back-off (a deleted node frees a range). A 409 on the pod-CIDR write (the node changed
// meanwhile) is retried after re-reading the node; a Warning CIDRAssignmentFailed event and
// an error log come only when three attempts failed, as upstream's range allocator does.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "host/controllers/common/controller.hpp"
#include "host/controllers/ipam/cidr_set.hpp"
#include "host/runtime/work_queue.hpp"

namespace ccm::controllers::ipam {

class NodeIpamController final : public Controller {
 public:
  NodeIpamController(ControllerContext& context, std::vector<CidrSet> sets);
  ~NodeIpamController() override;

  std::string_view name() const override { return "node-ipam-controller"; }
  void start() override;
  void stop() override;
  Status healthy() const override { return queue_.progress(kStuckAfter); }

  Status syncNode(const std::string& name);  // exposed for tests
  // Used/total ranges of each cluster CIDR (for tests).
  std::vector<std::pair<uint64_t, uint64_t>> usage() const;

 private:
  void rebuild();
  void occupyLocked(const kube::Node& node);
  // Frees the node's ranges: `cidrs` (its podCIDRs) and what it was assigned.
  void releaseLocked(const std::string& uid, std::vector<std::string> cidrs);
  // Publishes the sets' usage and their allocation/release counts as metrics.
  void publishLocked();
  // Writes the reserved ranges to the node: up to three attempts, re-reading the node after a
  // 409; a Warning event and an error log only when the attempts are spent.
  Status writePodCidrs(const kube::Node& node, const std::vector<std::string>& cidrs);
  void worker();

  ControllerContext& ctx_;
  kube::EventRecorder recorder_;
  WorkQueue queue_;

  mutable std::mutex mu_;
  std::vector<CidrSet> sets_;                                    // guarded by mu_
  std::unordered_map<std::string, std::vector<std::string>> assigned_;  // uid -> cidrs; mu_
  // Per set, the allocation and release counts already added to the counters; mu_.
  std::vector<std::pair<uint64_t, uint64_t>> published_;
  bool started_ = false;
  bool stopped_ = false;
  std::vector<std::thread> workers_;
};

StatusOr<ControllerOrSkip> makeNodeIpamController(ControllerContext& context);

}  // namespace ccm::controllers::ipam
