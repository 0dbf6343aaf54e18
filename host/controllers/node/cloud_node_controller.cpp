// The cloud node controller.
#include "host/controllers/node/cloud_node_controller.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>

#include "host/controllers/common/parallel.hpp"
#include "host/controllers/common/provider_refs.hpp"
#include "host/controllers/common/well_known.hpp"
#include "host/controllers/node/node_addresses.hpp"
#include "host/controllers/node/node_labels.hpp"
#include "host/kube/api/retry.hpp"
#include "host/kube/config/kube_config.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "host/log/log.hpp"
#include "host/runtime/memory.hpp"
#include "host/runtime/rate_limiter.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::controllers::node {
namespace {

std::vector<kube::AddressSpec> toSpecs(const Addresses& addresses) {
  std::vector<kube::AddressSpec> out;
  out.reserve(addresses.size());
  for (const auto& a : addresses) {
    out.push_back({a.type, a.address});
  }
  return out;
}

// The node's taints without the uninitialized one.
std::vector<kube::TaintSpec> taintsWithoutUninitialized(const kube::Node& node) {
  std::vector<kube::TaintSpec> out;
  for (const auto& t : node.taints()) {
    if (t.key != keys::kUninitializedTaint) {
      out.push_back(kube::TaintSpec{std::string(t.key), std::string(t.value), std::string(t.effect),
                                    t.time_added});
    }
  }
  return out;
}

std::vector<double> delayBuckets() {
  return {1, 4, 16, 64, 256, 1024};
}

// How many nodes a worker takes at once.
//  - Without the batch capability, every node's metadata is a provider call of its own, made
//    one after the other by the worker: several nodes per worker would make the first wait
//    for all the others' calls. One.
//  - Under a client-side rate limit, each write of a batch waits for its token, and so does
//    every other worker's: a batch of n nodes holds each of them back by up to
//    workers x n / QPS per step, time in which a kubelet's status update turns the next
//    step's precondition into a conflict. A batch is kept to what the budget grants all
//    workers in kMaxTokenWait (at upstream's default of 20 QPS: one node).
size_t initBatchSize(bool batch_capability, double qps, int workers) {
  if (!batch_capability) {
    return 1;
  }
  qps = kube::effectiveQps(qps);  // as the client applies --kube-api-qps
  if (qps < 0) {
    return CloudNodeController::kInitBatch;  // no client-side limit
  }
  double budget = qps * std::chrono::duration<double>(CloudNodeController::kMaxTokenWait).count() /
                  std::max(1, workers);
  return std::clamp<size_t>(static_cast<size_t>(budget), 1, CloudNodeController::kInitBatch);
}

std::chrono::microseconds gatherFor(size_t writes) {
  return CloudNodeController::kWriteGatherPerNode * static_cast<int64_t>(writes);
}

}  // namespace

CloudNodeController::CloudNodeController(ControllerContext& context)
    : ctx_(context),
      recorder_(context.events.recorder("cloud-node-controller")),
      queue_("Nodes", defaultControllerRateLimiter(), context.clock, &context.metrics),
      batcher_(
          context.provider, [this](std::string_view n) { return ctx_.nodes.get(n); },
          context.clock),
      burst_release_({.min_items = kBurstReleaseItems, .min_interval = kBurstReleaseInterval},
                     context.clock),
      refresh_cost_(context.metrics, "cloud-node") {
  auto& reg = context.metrics;
  if (auto* f = reg.histogram("node_controller_cloud_provider_taint_removal_delay_seconds",
                              "Number of seconds after node creation when NodeController removed "
                              "the cloud-provider taint of a single node.",
                              delayBuckets(), {}, metrics::Stability::Alpha)) {
    taint_removal_delay_ = &f->noLabels();
  }
  if (auto* f = reg.histogram("node_controller_initial_node_sync_delay_seconds",
                              "Number of seconds after node creation when NodeController "
                              "finished the initial synchronization of a single node.",
                              delayBuckets(), {}, metrics::Stability::Alpha)) {
    initial_sync_delay_ = &f->noLabels();
  }
  if (auto* f = reg.counter("ccm_nodes_initialized_total",
                            "Nodes this process initialised (uninitialized taint removed).")) {
    initialized_ = &f->noLabels();
  }
}

CloudNodeController::~CloudNodeController() {
  stop();
}

void CloudNodeController::onNode(const std::shared_ptr<const kube::Node>& node, bool update) {
  // Kubelets update their nodes constantly; only nodes with work to do are queued.
  if (update && isOwnAddressWrite(*node)) {
    return;
  }
  if (node->hasTaint(keys::kUninitializedTaint)) {
    batcher_.prefetch(node->name());
    queue_.add(std::string(node->name()));
  } else if (!stableLabelFixes(*node).empty()) {
    queue_.add(std::string(node->name()));
  }
}

bool CloudNodeController::isOwnAddressWrite(const kube::Node& node) {
  std::lock_guard lock(writes_mu_);
  if (address_writes_.empty()) {
    return false;
  }
  auto it = address_writes_.find(std::string(node.name()));
  if (it == address_writes_.end()) {
    return false;
  }
  bool own = it->second == node.resourceVersion();
  address_writes_.erase(it);
  return own;
}

void CloudNodeController::start() {
  {
    std::lock_guard lock(mu_);
    if (started_) {
      return;
    }
    started_ = true;
  }
  ctx_.nodes.addEventHandler({
      .on_add = [this](const auto& n) { onNode(n, false); },
      .on_update = [this](const auto&, const auto& n) { onNode(n, true); },
      .on_delete =
          [this](const auto& n, bool) {
            batcher_.forget(n->name());
            std::lock_guard lock(writes_mu_);
            address_writes_.erase(std::string(n->name()));
          },
  });
  int workers = std::max(1, ctx_.options.concurrent_node_syncs);
  size_t most = initBatchSize(ctx_.provider.info().instances_batch.present,
                              ctx_.options.kube_api_qps, workers);
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this, workers, most] {
      runtime::nameThisThread("node-sync");
      worker(most, static_cast<size_t>(workers));
    });
  }
  refresher_ = std::jthread([this](std::stop_token stop) {
    runtime::nameThisThread("node-refresh");
    refreshLoop(stop);
  });
  setControllerRunning(ctx_.metrics, "cloud-node", true);
  log::info(
      "Started cloud node controller",
      {{"workers", workers}, {"batchMetadata", ctx_.provider.info().instances_batch.present}});
}

void CloudNodeController::stop() {
  {
    std::lock_guard lock(mu_);
    if (!started_ || stopped_) {
      return;
    }
    stopped_ = true;
  }
  queue_.shutDown();
  refresher_.request_stop();
  for (auto& t : workers_) {
    t.join();
  }
  if (refresher_.joinable()) {
    refresher_.join();
  }
  setControllerRunning(ctx_.metrics, "cloud-node", false);
}

void CloudNodeController::worker(size_t most, size_t workers) {
  for (;;) {
    auto keys = queue_.getUpTo(most, workers);
    if (keys.empty()) {
      return;  // shut down
    }
    auto statuses = syncNodes(keys);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (statuses[i].ok()) {
        queue_.forget(keys[i]);
      } else if (statuses[i].code() == Code::Cancelled && queue_.shuttingDown()) {
        log::infoV(2, "Node left for the next start", {{"node", keys[i]}});
      } else {
        log::error("Error syncing node; will retry",
                   {{"node", keys[i]}, {"err", statuses[i].toString()}});
        queue_.addRateLimited(keys[i]);
      }
      queue_.done(keys[i]);
    }
    burst_release_.noteDone(keys.size());
    if (queue_.len() == 0) {
      burst_release_.noteDrained();
    }
  }
}

Status CloudNodeController::syncNode(const std::string& name) {
  return std::move(syncNodes({name}).front());
}

std::vector<Status> CloudNodeController::syncNodes(const std::vector<std::string>& names) {
  std::vector<Status> out(names.size(), okStatus());
  std::vector<Init> batch;
  std::vector<size_t> batch_at;  // names index of each batch entry
  for (size_t i = 0; i < names.size(); ++i) {
    auto node = ctx_.nodes.get(names[i]);
    if (!node) {
      continue;  // deleted meanwhile
    }
    if (node->hasTaint(keys::kUninitializedTaint)) {
      auto& in = batch.emplace_back();
      in.cached = std::move(node);
      in.name = names[i];
      batch_at.push_back(i);
    } else if (auto fixes = stableLabelFixes(*node); !fixes.empty()) {
      out[i] = fixStableLabels(*node, fixes);
    }
  }
  if (!batch.empty()) {
    initialize(batch);
    for (size_t k = 0; k < batch.size(); ++k) {
      out[batch_at[k]] = std::move(*batch[k].outcome);
    }
  }
  return out;
}

Status CloudNodeController::fixStableLabels(
    const kube::Node& node, const std::vector<std::pair<std::string, std::string>>& fixes) {
  kube::NodePatch patch;
  for (const auto& [k, v] : fixes) {
    patch.setLabel(k, v);
  }
  kube::ApiStatus st = kube::retryOnConflict(kube::kUpdateBackoff, [&] {
    return ctx_.api.patch(kube::nodePath(node.name()), kube::PatchType::Strategic, patch.build())
        .status();
  });
  if (!st.ok()) {
    return st.toStatus().withPrefix(fmt::format("failed update labels for node {}", node.name()));
  }
  log::infoV(2, "Reconciled stable node labels from beta labels", {{"node", node.name()}});
  return okStatus();
}

void CloudNodeController::initialize(std::vector<Init>& batch) {
  if (batch.size() > 1) {
    log::infoV(4, "Initializing nodes together", {{"nodes", batch.size()}});
  }
  if (queue_.shuttingDown()) {
    // Provider calls may be slow: a stopping process does not start more.
    for (auto& in : batch) {
      in.outcome = Status(Code::Cancelled, "the controller is stopping");
    }
    return;
  }
  // The whole share's metadata at once: one batch call (with the batch capability) for the
  // nodes no other worker's batch fetched already.
  std::vector<std::shared_ptr<const kube::Node>> nodes;
  nodes.reserve(batch.size());
  for (const auto& in : batch) {
    log::infoV(2, "Initializing node with cloud provider", {{"node", in.name}});
    nodes.push_back(in.cached);
  }
  auto answers = batcher_.getAll(nodes);
  for (size_t i = 0; i < batch.size(); ++i) {
    prepare(batch[i], std::move(answers[i]));
  }
  writeAddresses(batch);
  writeTaints(batch);
}

void CloudNodeController::prepare(Init& in, MetadataAnswer answer) {
  if (!answer.ok()) {
    in.outcome = answer.status().withPrefix(
        fmt::format("failed to get instance metadata for node {}", in.name));
    return;
  }
  if (!answer->has_value()) {
    // Upstream's nil metadata: nothing to apply yet. The node stays tainted and is retried on
    // its next update.
    log::info("Provider has no metadata for the node yet; skipping initialization",
              {{"node", in.name}});
    in.outcome = okStatus();
    return;
  }
  in.md = std::move(**answer);
  if (in.md.provider_id.empty() && in.cached->providerId().empty()) {
    in.outcome =
        Status(Code::FailedPrecondition,
               fmt::format("cloud provider does not set node provider ID for node {}", in.name));
    return;
  }
  in.node = in.cached;
  in.version = std::string(in.node->resourceVersion());
  auto desired = desiredAddresses(*in.node, in.md.addresses);
  if (!desired.ok()) {
    in.outcome = desired.status().withPrefix(fmt::format(
        "failed to get node modifiers from cloud provider: provided node ip for node \"{}\" is "
        "not valid",
        in.name));
    return;
  }
  if (desired->has_value() && addressesChanged(in.node->addresses(), **desired)) {
    in.addresses = toSpecs(**desired);
  }
}

// Step 2: addresses, written while the node is still tainted, conditional on the cached
// version. When that holds, the version the write produces differs from the cached node in
// these addresses only, so the taint PATCH (step 3) works from the cache and needs only that
// version from the answer: the server is asked for the answer's metadata only, and the version
// is read by a parse that stops a few bytes in (decoding the whole answer was 9 % of the node
// workers' time in the 5,000-node burst). When the cache lagged or someone else wrote
// meanwhile (409), the addresses are written unconditionally and the whole answer is asked for
// and decoded.
void CloudNodeController::writeAddresses(std::vector<Init>& batch) {
  std::vector<Init*> todo;
  std::vector<kube::Write> writes;
  for (auto& in : batch) {
    if (!in.outcome && !in.addresses.empty()) {
      todo.push_back(&in);
      writes.push_back({kube::Write::Verb::Patch, kube::nodeStatusPath(in.name),
                        kube::nodeAddressesPatch(in.addresses, in.version),
                        kube::PatchType::Strategic});
    }
  }
  if (todo.empty()) {
    return;
  }
  kube::CallOptions version_only;  // the server is asked for the answer's metadata only
  version_only.want_response = true;
  version_only.metadata_only = true;
  auto results = ctx_.api.writeBatch(std::move(writes), version_only, gatherFor(todo.size()));
  for (size_t k = 0; k < todo.size(); ++k) {
    addressesWritten(*todo[k], std::move(results[k]));
  }
}

void CloudNodeController::addressesWritten(Init& in, kube::ApiResult<std::string> written) {
  bool conflict = !written.ok() && written.status().isConflict();
  if (conflict) {
    kube::CallOptions whole;
    whole.want_response = true;
    written = ctx_.api.patch(kube::nodeStatusPath(in.name), kube::PatchType::Strategic,
                             kube::nodeAddressesPatch(in.addresses), whole);
  }
  if (!written.ok()) {
    in.outcome = written.status().toStatus().withPrefix(
        fmt::format("failed to write the cloud addresses of node {}", in.name));
    return;
  }
  if (!conflict) {
    // Without a version in the answer, the taint PATCH's precondition (the cached version)
    // fails and the node is read again.
    if (auto produced = kube::resourceVersionOf(*written)) {
      in.version = std::move(*produced);
      std::lock_guard lock(writes_mu_);
      address_writes_[in.name] = in.version;
    }
  } else if (auto fresh = kube::decodeNode(*written, kube::NodeParts::kMetadataAndSpec);
             fresh.ok()) {
    // Step 3 reads the version, providerID, labels and taints: the status is not needed.
    in.node = *fresh;
    in.version = std::string(in.node->resourceVersion());
    if (!in.node->hasTaint(keys::kUninitializedTaint)) {
      // An earlier sync (or incarnation) already initialised the node.
      log::infoV(2, "Node was initialized meanwhile; nothing to do", {{"node", in.name}});
      in.outcome = okStatus();
    }
  }
}

// Step 3: one PATCH per node for providerID, labels and the taint, conditional on the version
// step 2 produced (or the cached one). The batch's answers that are not conflicts are taken
// first, so a node that has to be read again and retried after a back-off does not hold up
// the others' events.
void CloudNodeController::writeTaints(std::vector<Init>& batch) {
  std::vector<Init*> todo;
  std::vector<kube::Write> writes;
  for (auto& in : batch) {
    if (!in.outcome) {
      todo.push_back(&in);
      writes.push_back({kube::Write::Verb::Patch, kube::nodePath(in.name), taintPatch(in),
                        kube::PatchType::Strategic});
    }
  }
  if (todo.empty()) {
    return;
  }
  auto results = ctx_.api.writeBatch(std::move(writes), {}, gatherFor(todo.size()));
  for (bool conflicts : {false, true}) {
    for (size_t k = 0; k < todo.size(); ++k) {
      if (results[k].status().isConflict() == conflicts) {
        finish(*todo[k], results[k].status());
      }
    }
  }
}

std::string CloudNodeController::taintPatch(Init& in) {
  in.warnings.clear();
  kube::NodePatch patch;
  patch.resourceVersion(in.version);
  if (in.node->providerId().empty() && !in.md.provider_id.empty()) {
    patch.providerId(in.md.provider_id);
  }
  for (const auto& [k, v] : labelsFromMetadata(*in.node, in.md, &in.warnings)) {
    patch.setLabel(k, v);
  }
  patch.taints(taintsWithoutUninitialized(*in.node));
  return patch.build();
}

void CloudNodeController::finish(Init& in, const kube::ApiStatus& first) {
  // A conflict re-reads the node and tries again, with upstream's back-off.
  int attempt = 0;
  bool initialized_meanwhile = false;
  kube::ApiStatus st = kube::retryOnConflict(kube::kNodeInitBackoff, [&]() -> kube::ApiStatus {
    if (attempt++ == 0) {
      return first;  // the batch's answer
    }
    auto again = ctx_.api.get(kube::nodePath(in.name));
    if (!again.ok()) {
      return again.status();
    }
    auto decoded = kube::decodeNode(*again);
    if (!decoded.ok()) {
      return decoded.status();
    }
    in.node = *decoded;
    in.version = std::string(in.node->resourceVersion());
    if (!in.node->hasTaint(keys::kUninitializedTaint)) {
      initialized_meanwhile = true;  // by an earlier sync or another incarnation of us
      return kube::ApiStatus();
    }
    return ctx_.api.patch(kube::nodePath(in.name), kube::PatchType::Strategic, taintPatch(in))
        .status();
  });
  if (!st.ok()) {
    in.outcome = st.toStatus().withPrefix(fmt::format("failed to initialize node {}", in.name));
    return;
  }
  in.outcome = okStatus();
  if (initialized_meanwhile) {
    // Not initialised by this sync: no second Synced event, count or delay observation.
    log::infoV(2, "Node was initialized meanwhile; nothing to do", {{"node", in.name}});
    return;
  }
  for (const auto& w : in.warnings) {
    log::warning("Node label not applied", {{"node", in.name}, {"reason", w}});
  }
  double age = std::max<double>(
      0, std::chrono::duration<double>(ctx_.clock.wallNow().time_since_epoch()).count() -
             static_cast<double>(in.cached->creationTimestamp()));
  if (taint_removal_delay_ != nullptr) {
    taint_removal_delay_->observe(age);
  }
  if (initial_sync_delay_ != nullptr) {
    initial_sync_delay_->observe(age);
  }
  if (initialized_ != nullptr) {
    initialized_->inc();
  }
  recorder_.event(kube::referenceTo(*in.cached), kube::EventType::Normal, "Synced",
                  "Node synced successfully");
  log::info("Successfully initialized node with cloud provider",
            {{"node", in.name},
             {"providerID", in.md.provider_id.empty() ? std::string(in.cached->providerId())
                                                      : in.md.provider_id}});
}

void CloudNodeController::refreshLoop(std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    refreshAddresses(stop);
    std::unique_lock lock(m);
    cv.wait_for(lock, stop, ctx_.options.node_status_update_frequency, [] { return false; });
  }
}

namespace {
// The most nodes a batched address refresh hands the provider at once (see below).
constexpr size_t kRefreshNodesInFlight = 1000;
}  // namespace

void CloudNodeController::refreshAddresses(std::stop_token stop) {
  auto started = std::chrono::steady_clock::now();
  PassTimer pass(refresh_cost_);
  std::vector<std::shared_ptr<const kube::Node>> nodes;
  for (auto& n : ctx_.nodes.list()) {
    if (!n->hasTaint(keys::kUninitializedTaint)) {
      nodes.push_back(std::move(n));
    }
  }
  int workers = ctx_.options.concurrent_node_status_updates > 0
                    ? ctx_.options.concurrent_node_status_updates
                    : ctx_.options.concurrent_node_syncs;
  std::atomic<int> updated{0};
  std::atomic<int> failed{0};
  auto apply = [&](const std::shared_ptr<const kube::Node>& node, const MetadataAnswer& answer) {
    if (!answer.ok()) {
      ++failed;
      Code code = answer.status().code();
      if (code == Code::Unauthenticated || code == Code::PermissionDenied) {
        // The provider's credentials are refused: nothing will refresh until someone acts.
        log::error("Cannot refresh node addresses: the cloud refused the provider's credentials",
                   {{"node", node->name()}, {"err", answer.status().toString()}});
      } else {
        log::warning("Cannot refresh node addresses",
                     {{"node", node->name()}, {"err", answer.status().toString()}});
      }
      return;
    }
    if (!answer->has_value()) {
      return;  // upstream crashes here (nil metadata); nothing to do
    }
    auto desired = desiredAddresses(*node, (*answer)->addresses);
    if (!desired.ok()) {
      log::error("Not updating node addresses",
                 {{"node", node->name()}, {"err", desired.status().toString()}});
      return;
    }
    if (!desired->has_value() || !addressesChanged(node->addresses(), **desired)) {
      return;
    }
    auto r = ctx_.api.patch(kube::nodeStatusPath(node->name()), kube::PatchType::Strategic,
                            kube::nodeAddressesPatch(toSpecs(**desired)));
    if (r.ok()) {
      ++updated;
    } else {
      ++failed;
      log::error("Failed to update node addresses",
                 {{"node", node->name()}, {"err", r.status().message()}});
    }
  };
  if (ctx_.provider.info().instances_batch.present) {
    size_t chunk =
        ctx_.provider.info().max_batch_size > 0 ? ctx_.provider.info().max_batch_size : 500;
    size_t chunks = (nodes.size() + chunk - 1) / chunk;
    // Every node of a chunk in flight is copied into the call's ABI input and the provider's
    // answer (about 3 KB per node for realistic nodes): bound the nodes in flight, so a
    // refresh of 5,000 nodes does not hold them all at once (it used to, 15 MiB at the peak).
    size_t parallel = std::clamp<size_t>(kRefreshNodesInFlight / chunk, 1,
                                         static_cast<size_t>(std::max(1, workers)));
    pass.addOtherThreads(parallelFor(chunks, parallel, stop, [&](size_t c) {
      auto part = std::span(nodes).subspan(c * chunk, std::min(chunk, nodes.size() - c * chunk));
      NodeRefs refs(part);
      auto results = ctx_.provider.instanceMetadataBatch(refs.refs());
      for (size_t i = 0; i < part.size(); ++i) {
        if (!results.ok()) {
          apply(part[i], results.status());
        } else {
          auto& r = (*results)[i];
          apply(part[i], r.ok() ? MetadataAnswer(std::optional(std::move(r).value()))
                                : MetadataAnswer(r.status()));
        }
      }
    }));
  } else {
    pass.addOtherThreads(
        parallelFor(nodes.size(), static_cast<size_t>(std::max(1, workers)), stop, [&](size_t i) {
          NodeRefs refs;
          apply(nodes[i], ctx_.provider.instanceMetadata(refs.add(nodes[i])));
        }));
  }
  // The chunks' copies are freed: give their pages back rather than keep them resident
  // until the next refresh.
  runtime::releaseFreeMemory();
  pass.finish(nodes.size());
  log::infoV(2, "Refreshed node addresses",
             {{"nodes", nodes.size()},
              {"updated", updated.load()},
              {"failed", failed.load()},
              {"took", std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - started)}});
}

StatusOr<ControllerOrSkip> makeCloudNodeController(ControllerContext& context) {
  if (!context.provider.info().instances.present) {
    return ControllerOrSkip(NotStarted{"the cloud provider does not support instances"});
  }
  return ControllerOrSkip(std::make_unique<CloudNodeController>(context));
}

}  // namespace ccm::controllers::node
