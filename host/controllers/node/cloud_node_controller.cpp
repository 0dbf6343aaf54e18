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
#include "host/kube/patch_builder.hpp"
#include "host/kube/retry.hpp"
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
  for (const auto& t : node.taints) {
    if (t.key != keys::kUninitializedTaint) {
      out.push_back(kube::TaintSpec{std::string(t.key), std::string(t.value),
                                    std::string(t.effect), t.time_added});
    }
  }
  return out;
}

std::vector<double> delayBuckets() { return {1, 4, 16, 64, 256, 1024}; }

}  // namespace

CloudNodeController::CloudNodeController(ControllerContext& context)
    : ctx_(context),
      recorder_(context.events.recorder("cloud-node-controller")),
      queue_("Nodes", defaultControllerRateLimiter(), context.clock, &context.metrics),
      batcher_(context.provider, [this](std::string_view n) { return ctx_.nodes.get(n); },
               context.clock) {
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

CloudNodeController::~CloudNodeController() { stop(); }

void CloudNodeController::onNode(const std::shared_ptr<const kube::Node>& node, bool update) {
  // Kubelets update their nodes constantly; only nodes with work to do are queued.
  if (update && isOwnAddressWrite(*node)) {
    return;
  }
  if (node->hasTaint(keys::kUninitializedTaint)) {
    batcher_.prefetch(node->name);
    queue_.add(std::string(node->name));
  } else if (!stableLabelFixes(*node).empty()) {
    queue_.add(std::string(node->name));
  }
}

bool CloudNodeController::isOwnAddressWrite(const kube::Node& node) {
  std::lock_guard lock(writes_mu_);
  if (address_writes_.empty()) {
    return false;
  }
  auto it = address_writes_.find(std::string(node.name));
  if (it == address_writes_.end()) {
    return false;
  }
  bool own = it->second == node.resource_version;
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
            batcher_.forget(n->name);
            std::lock_guard lock(writes_mu_);
            address_writes_.erase(std::string(n->name));
          },
  });
  int workers = std::max(1, ctx_.options.concurrent_node_syncs);
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this] {
      runtime::nameThisThread("node-sync");
      worker();
    });
  }
  refresher_ = std::jthread([this](std::stop_token stop) {
    runtime::nameThisThread("node-refresh");
    refreshLoop(stop);
  });
  setControllerRunning(ctx_.metrics, "cloud-node", true);
  log::info("Started cloud node controller",
            {{"workers", workers},
             {"batchMetadata", ctx_.provider.info().instances_batch.present}});
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

void CloudNodeController::worker() {
  while (auto key = queue_.get()) {
    Status s = syncNode(*key);
    if (s.ok()) {
      queue_.forget(*key);
    } else {
      log::error("Error syncing node; will retry", {{"node", *key}, {"err", s.toString()}});
      queue_.addRateLimited(*key);
    }
    queue_.done(*key);
  }
}

Status CloudNodeController::syncNode(const std::string& name) {
  auto node = ctx_.nodes.get(name);
  if (!node) {
    return okStatus();  // deleted meanwhile
  }
  if (node->hasTaint(keys::kUninitializedTaint)) {
    return initialize(node);
  }
  auto fixes = stableLabelFixes(*node);
  return fixes.empty() ? okStatus() : fixStableLabels(*node, fixes);
}

Status CloudNodeController::fixStableLabels(
    const kube::Node& node, const std::vector<std::pair<std::string, std::string>>& fixes) {
  kube::NodePatch patch;
  for (const auto& [k, v] : fixes) {
    patch.setLabel(k, v);
  }
  kube::ApiStatus st = kube::retryOnConflict(kube::kUpdateBackoff, [&] {
    return ctx_.api.patch(kube::nodePath(node.name), kube::PatchType::Strategic, patch.build())
        .status();
  });
  if (!st.ok()) {
    return st.toStatus().withPrefix(fmt::format("failed update labels for node {}", node.name));
  }
  log::infoV(2, "Reconciled stable node labels from beta labels", {{"node", node.name}});
  return okStatus();
}

Status CloudNodeController::initialize(const std::shared_ptr<const kube::Node>& cached) {
  std::string name(cached->name);
  log::infoV(2, "Initializing node with cloud provider", {{"node", name}});
  MetadataAnswer answer = batcher_.get(cached);
  if (!answer.ok()) {
    return answer.status().withPrefix(
        fmt::format("failed to get instance metadata for node {}", name));
  }
  if (!answer->has_value()) {
    // Upstream's nil metadata: nothing to apply yet. The node stays tainted and is retried on
    // its next update.
    log::info("Provider has no metadata for the node yet; skipping initialization",
              {{"node", name}});
    return okStatus();
  }
  const plugin::InstanceMetadata& md = **answer;
  if (md.provider_id.empty() && cached->provider_id.empty()) {
    return Status(Code::FailedPrecondition,
                  fmt::format("cloud provider does not set node provider ID for node {}", name));
  }

  // Step 1: addresses, written while the node is still tainted, conditional on the cached
  // version. When that holds, the version the write produces differs from the cached node in
  // these addresses only, so the taint PATCH (step 2) works from the cache and needs only that
  // version from the answer: the server is asked for the answer's metadata only, and the
  // version is read by a parse that stops a few bytes in (decoding the whole answer was 9 % of
  // the node workers' time in the 5,000-node burst). When the cache lagged or someone else
  // wrote meanwhile (409), the addresses are written unconditionally and the whole answer is
  // asked for and decoded.
  std::shared_ptr<const kube::Node> node = cached;
  std::string version(node->resource_version);
  auto desired = desiredAddresses(*node, md.addresses);
  if (!desired.ok()) {
    return desired.status().withPrefix(fmt::format(
        "failed to get node modifiers from cloud provider: provided node ip for node \"{}\" is "
        "not valid",
        name));
  }
  if (desired->has_value() && addressesChanged(node->addresses, **desired)) {
    kube::CallOptions version_only;  // the server is asked for the answer's metadata only
    version_only.want_response = true;
    version_only.metadata_only = true;
    auto specs = toSpecs(**desired);
    auto written = ctx_.api.patch(kube::nodeStatusPath(name), kube::PatchType::Strategic,
                                  kube::nodeAddressesPatch(specs, version), version_only);
    bool conflict = !written.ok() && written.status().isConflict();
    if (conflict) {
      kube::CallOptions whole;
      whole.want_response = true;
      written = ctx_.api.patch(kube::nodeStatusPath(name), kube::PatchType::Strategic,
                               kube::nodeAddressesPatch(specs), whole);
    }
    if (!written.ok()) {
      return written.status().toStatus().withPrefix(
          fmt::format("failed to write the cloud addresses of node {}", name));
    }
    if (!conflict) {
      // Without a version in the answer, the taint PATCH's precondition (the cached version)
      // fails and the node is read again.
      if (auto produced = kube::resourceVersionOf(*written)) {
        version = std::move(*produced);
        std::lock_guard lock(writes_mu_);
        address_writes_[name] = version;
      }
    } else if (auto fresh = kube::decodeNode(*written, kube::NodeParts::kMetadataAndSpec);
               fresh.ok()) {
      // Step 2 reads the version, providerID, labels and taints: the status is not needed.
      node = *fresh;
      version = std::string(node->resource_version);
      if (!node->hasTaint(keys::kUninitializedTaint)) {
        // An earlier sync (or incarnation) already initialised the node.
        log::infoV(2, "Node was initialized meanwhile; nothing to do", {{"node", name}});
        return okStatus();
      }
    }
  }

  // Step 2: one PATCH for providerID, labels and the taint, conditional on that version.
  std::vector<std::string> warnings;
  int attempt = 0;
  bool initialized_meanwhile = false;
  kube::ApiStatus st = kube::retryOnConflict(kube::kNodeInitBackoff, [&]() -> kube::ApiStatus {
    if (attempt++ > 0) {
      auto again = ctx_.api.get(kube::nodePath(name));
      if (!again.ok()) {
        return again.status();
      }
      auto decoded = kube::decodeNode(*again);
      if (!decoded.ok()) {
        return decoded.status();
      }
      node = *decoded;
      version = std::string(node->resource_version);
      if (!node->hasTaint(keys::kUninitializedTaint)) {
        initialized_meanwhile = true;  // by an earlier sync or another incarnation of us
        return kube::ApiStatus();
      }
    }
    warnings.clear();
    kube::NodePatch patch;
    patch.resourceVersion(version);
    if (node->provider_id.empty() && !md.provider_id.empty()) {
      patch.providerId(md.provider_id);
    }
    for (const auto& [k, v] : labelsFromMetadata(*node, md, &warnings)) {
      patch.setLabel(k, v);
    }
    patch.taints(taintsWithoutUninitialized(*node));
    return ctx_.api.patch(kube::nodePath(name), kube::PatchType::Strategic, patch.build())
        .status();
  });
  if (!st.ok()) {
    return st.toStatus().withPrefix(fmt::format("failed to initialize node {}", name));
  }
  if (initialized_meanwhile) {
    // Not initialised by this sync: no second Synced event, count or delay observation.
    log::infoV(2, "Node was initialized meanwhile; nothing to do", {{"node", name}});
    return okStatus();
  }
  for (const auto& w : warnings) {
    log::warning("Node label not applied", {{"node", name}, {"reason", w}});
  }
  double age = std::max<double>(
      0, std::chrono::duration<double>(ctx_.clock.wallNow().time_since_epoch()).count() -
             static_cast<double>(cached->creation_timestamp));
  if (taint_removal_delay_ != nullptr) {
    taint_removal_delay_->observe(age);
  }
  if (initial_sync_delay_ != nullptr) {
    initial_sync_delay_->observe(age);
  }
  if (initialized_ != nullptr) {
    initialized_->inc();
  }
  recorder_.event(kube::referenceTo(*cached), kube::EventType::Normal, "Synced",
                  "Node synced successfully");
  log::info("Successfully initialized node with cloud provider",
            {{"node", name}, {"providerID", md.provider_id.empty() ? std::string(cached->provider_id)
                                                                   : md.provider_id}});
  return okStatus();
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
      log::infoV(2, "Cannot refresh node addresses", {{"node", node->name},
                                                      {"err", answer.status().toString()}});
      return;
    }
    if (!answer->has_value()) {
      return;  // upstream crashes here (nil metadata); nothing to do
    }
    auto desired = desiredAddresses(*node, (*answer)->addresses);
    if (!desired.ok()) {
      log::error("Not updating node addresses", {{"node", node->name},
                                                 {"err", desired.status().toString()}});
      return;
    }
    if (!desired->has_value() || !addressesChanged(node->addresses, **desired)) {
      return;
    }
    auto r = ctx_.api.patch(kube::nodeStatusPath(node->name), kube::PatchType::Strategic,
                            kube::nodeAddressesPatch(toSpecs(**desired)));
    if (r.ok()) {
      ++updated;
    } else {
      ++failed;
      log::error("Failed to update node addresses", {{"node", node->name},
                                                     {"err", r.status().message()}});
    }
  };
  if (ctx_.provider.info().instances_batch.present) {
    size_t chunk = ctx_.provider.info().max_batch_size > 0 ? ctx_.provider.info().max_batch_size
                                                           : 500;
    size_t chunks = (nodes.size() + chunk - 1) / chunk;
    // Every node of a chunk in flight is copied into the call's ABI input and the provider's
    // answer (about 3 KB per node for realistic nodes): bound the nodes in flight, so a
    // refresh of 5,000 nodes does not hold them all at once (it used to, 15 MiB at the peak).
    size_t parallel = std::clamp<size_t>(kRefreshNodesInFlight / chunk, 1,
                                         static_cast<size_t>(std::max(1, workers)));
    parallelFor(chunks, parallel, stop, [&](size_t c) {
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
    });
  } else {
    parallelFor(nodes.size(), static_cast<size_t>(std::max(1, workers)), stop, [&](size_t i) {
      NodeRefs refs;
      apply(nodes[i], ctx_.provider.instanceMetadata(refs.add(nodes[i])));
    });
  }
  // The chunks' copies are freed: give their pages back rather than keep them resident
  // until the next refresh.
  runtime::releaseFreeMemory();
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
