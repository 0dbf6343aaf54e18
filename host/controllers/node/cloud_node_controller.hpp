// The cloud node controller (cloud-node-controller, alias cloud-node): initialises every node
// the kubelet registered with the uninitialized taint, keeps node addresses current, and keeps
// the stable topology labels in step with the beta ones.
//
// Initialisation, per node (differences from upstream in brackets):
//   1. metadata from the provider, batched across nodes when the provider can
//      [upstream: one call per node, one worker by default];
//   2. addresses written to nodes/status first, while the node is still tainted, conditional
//      on the cached resourceVersion (on 409: again unconditionally, the answer decoded)
//      [upstream writes them after the taint is gone, leaving a window where a schedulable
//      node lacks its cloud addresses];
//   3. one strategic-merge PATCH, conditional on the version the address write produced,
//      that sets providerID, the instance-type/zone/region labels (stable and beta) and
//      additional labels, and removes the uninitialized taint [upstream: a full PUT];
//   4. a Synced event and the two upstream histograms.
// A provider error, timeout or NOT_FOUND leaves the node tainted and retries it with
// back-off; a conflict re-reads the node and tries again; nothing is ever half-applied.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "host/controllers/common/controller.hpp"
#include "host/controllers/node/metadata_batcher.hpp"
#include "host/runtime/work_queue.hpp"

namespace ccm::controllers::node {

class CloudNodeController final : public Controller {
 public:
  explicit CloudNodeController(ControllerContext& context);
  ~CloudNodeController() override;

  std::string_view name() const override { return "cloud-node-controller"; }
  void start() override;
  void stop() override;

  // One reconcile of a node (the work a worker does for a key). Exposed for tests.
  Status syncNode(const std::string& name);
  // One pass of the periodic address refresh. Exposed for tests.
  void refreshAddresses(std::stop_token stop);

 private:
  Status initialize(const std::shared_ptr<const kube::Node>& node);
  Status fixStableLabels(const kube::Node& node, const std::vector<std::pair<std::string, std::string>>& fixes);
  void onNode(const std::shared_ptr<const kube::Node>& node, bool update);
  // Whether this update is the watch event of this controller's own address write, which
  // still shows the taint: queueing the node again for it would only give it a second,
  // empty pass after its worker finished. Forgets the node's write either way.
  bool isOwnAddressWrite(const kube::Node& node);
  void worker();
  void refreshLoop(std::stop_token stop);

  ControllerContext& ctx_;
  kube::EventRecorder recorder_;
  WorkQueue queue_;
  MetadataBatcher batcher_;
  metrics::Histogram* taint_removal_delay_ = nullptr;
  metrics::Histogram* initial_sync_delay_ = nullptr;
  metrics::Counter* initialized_ = nullptr;

  // Node name -> the resourceVersion our address write produced, until the node's next
  // watch event (at most one entry per node being initialised).
  std::mutex writes_mu_;
  std::unordered_map<std::string, std::string> address_writes_;  // guarded by writes_mu_

  std::mutex mu_;
  bool started_ = false;  // guarded by mu_
  bool stopped_ = false;  // guarded by mu_
  std::vector<std::thread> workers_;
  std::jthread refresher_;
};

StatusOr<ControllerOrSkip> makeCloudNodeController(ControllerContext& context);

}  // namespace ccm::controllers::node
