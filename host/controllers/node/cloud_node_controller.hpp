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
//
// With a provider that has the batch capability and no tight client-side rate limit, a worker
// takes up to kInitBatch queued nodes at once (a fair share of the queue among the workers)
// and takes them through each step together: the address writes of step 2 go to the API
// server as one pipelined batch (KubeApi::writeBatch), then the PATCHes of step 3 as another.
// Every node keeps its own answer, its own conflict handling and its own retry; only the round
// trips are shared [upstream: one node at a time per worker].
//
// When the queue drains after a burst (kBurstReleaseItems nodes or more handled since the
// last time), the worker that found it empty gives freed heap back to the kernel
// (runtime::BurstRelease), so the resident set after a burst falls back to what is kept.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "host/controllers/common/controller.hpp"
#include "host/controllers/common/pass_cost.hpp"
#include "host/controllers/node/metadata_batcher.hpp"
#include "host/kube/api/kube_api.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "host/runtime/burst_release.hpp"
#include "host/runtime/work_queue.hpp"

namespace ccm::controllers::node {

class CloudNodeController final : public Controller {
 public:
  explicit CloudNodeController(ControllerContext& context);
  ~CloudNodeController() override;

  std::string_view name() const override { return "cloud-node-controller"; }
  void start() override;
  void stop() override;
  Status healthy() const override { return queue_.progress(kStuckAfter); }

  // The most nodes a worker takes from the queue at once: 1 without the batch capability,
  // and fewer under a client-side rate limit (at most kMaxTokenWait of tokens per batch).
  static constexpr size_t kInitBatch = 16;
  static constexpr std::chrono::milliseconds kMaxTokenWait{100};
  // How long reading a batch's answers waits for more of them, when none is waiting, per
  // write of the batch: roughly what the API server takes for a write when every worker has
  // a batch in flight. Waking once for several answers instead of once per answer is most of
  // what batching saves: in the 5,000-node burst the node workers took 0.28–0.32 CPU-s with
  // no wait, 0.19–0.20 with this one (0.42 before batches), and the last node was not
  // initialised later (bench/RESULTS.md).
  static constexpr std::chrono::microseconds kWriteGatherPerNode{400};
  // A drained queue gives freed heap back when at least this many nodes were handled since
  // the last time, and not more often than this.
  static constexpr size_t kBurstReleaseItems = 1000;
  static constexpr std::chrono::milliseconds kBurstReleaseInterval{2000};

  // One reconcile of a node (the work a worker does for a key). Exposed for tests.
  Status syncNode(const std::string& name);
  // The reconciles of several nodes together (a worker's share of the queue), one status per
  // name. Exposed for tests.
  std::vector<Status> syncNodes(const std::vector<std::string>& names);
  // One pass of the periodic address refresh. Exposed for tests.
  void refreshAddresses(std::stop_token stop);

 private:
  // One node's initialisation as it goes through the steps of a batch.
  struct Init {
    std::shared_ptr<const kube::Node> cached;  // the node as queued
    std::string name;
    std::shared_ptr<const kube::Node> node;  // as last known: what step 3 works from
    plugin::InstanceMetadata md;
    std::string version;                       // step 3's precondition
    std::vector<kube::AddressSpec> addresses;  // step 2's, empty when current
    std::vector<std::string> warnings;         // labels step 3 could not apply
    std::optional<Status> outcome;             // set once the node needs no further step
  };
  void initialize(std::vector<Init>& batch);
  void prepare(Init& in, MetadataAnswer answer);
  void writeAddresses(std::vector<Init>& batch);
  void addressesWritten(Init& in, kube::ApiResult<std::string> written);
  void writeTaints(std::vector<Init>& batch);
  std::string taintPatch(Init& in);
  void finish(Init& in, const kube::ApiStatus& first);
  Status fixStableLabels(const kube::Node& node,
                         const std::vector<std::pair<std::string, std::string>>& fixes);
  void onNode(const std::shared_ptr<const kube::Node>& node, bool update);
  // Whether this update is the watch event of this controller's own address write, which
  // still shows the taint: queueing the node again for it would only give it a second,
  // empty pass after its worker finished. Forgets the node's write either way.
  bool isOwnAddressWrite(const kube::Node& node);
  void worker(size_t most, size_t workers);
  void refreshLoop(std::stop_token stop);

  ControllerContext& ctx_;
  kube::EventRecorder recorder_;
  WorkQueue queue_;
  MetadataBatcher batcher_;
  runtime::BurstRelease burst_release_;
  metrics::Histogram* taint_removal_delay_ = nullptr;
  metrics::Histogram* initial_sync_delay_ = nullptr;
  metrics::Counter* initialized_ = nullptr;
  PassCost refresh_cost_;  // the address refresh's, controller="cloud-node"

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
