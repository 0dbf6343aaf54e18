// The cloud node lifecycle controller.
#include "host/controllers/lifecycle/node_lifecycle_controller.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <set>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "host/controllers/common/parallel.hpp"
#include "host/controllers/common/provider_refs.hpp"
#include "host/controllers/common/well_known.hpp"
#include "host/kube/api/retry.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "host/log/log.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::controllers::lifecycle {
namespace {

bool isReady(const kube::Node& node) {
  std::optional<kube::NodeCondition> c = node.condition(keys::kReady);
  return c && c->status == "True";
}

enum class Verdict { Ready, Exists, NotFound, Unknown };

// How far ahead of the node it is counting a pass prefetches nodes, and their arrays.
constexpr size_t kPrefetchNode = 16;
constexpr size_t kPrefetchArrays = 8;

struct ReadyCounts {
  int ready = 0;
  int not_ready = 0;
};

}  // namespace

std::string_view zoneStateName(ZoneState s) {
  switch (s) {
    case ZoneState::Normal:
      return "Normal";
    case ZoneState::PartialDisruption:
      return "PartialDisruption";
    case ZoneState::FullDisruption:
      return "FullDisruption";
  }
  return "Normal";
}

ZoneState computeZoneState(int ready, int not_ready, double unhealthy_threshold) {
  if (ready == 0 && not_ready > 0) {
    return ZoneState::FullDisruption;
  }
  if (not_ready > 2 && static_cast<double>(not_ready) / static_cast<double>(not_ready + ready) >=
                           unhealthy_threshold) {
    return ZoneState::PartialDisruption;
  }
  return ZoneState::Normal;
}

NodeLifecycleController::NodeLifecycleController(ControllerContext& context)
    : ctx_(context),
      per_provider_zones_(context.options.cloud_provider.find(',') != std::string::npos),
      recorder_(context.events.recorder("cloud-node-lifecycle-controller")),
      monitor_cost_(context.metrics, "cloud-node-lifecycle") {}

NodeLifecycleController::~NodeLifecycleController() {
  stop();
}

std::string_view NodeLifecycleController::zoneOf(const kube::Node& node) {
  if (auto z = node.label(keys::kZone)) {
    return *z;
  }
  if (auto z = node.label(keys::kZoneBeta)) {
    return *z;
  }
  return "";
}

std::string NodeLifecycleController::zoneKey(
    const std::shared_ptr<const kube::Node>& node) const {
  if (!per_provider_zones_) {
    return std::string(zoneOf(*node));
  }
  // By owning provider, as the calls are routed: a node without a providerID that a node
  // selector gives to a provider is in that provider's zones.
  NodeRefs refs;
  std::string key = ctx_.provider.ownerNameOf(refs.add(node));
  key += '|';
  key += zoneOf(*node);
  return key;
}

std::string_view NodeLifecycleController::providerOfZone(std::string_view zone_key) const {
  if (!per_provider_zones_) {
    return "";
  }
  return zone_key.substr(0, zone_key.find('|'));
}

void NodeLifecycleController::start() {
  {
    std::lock_guard lock(mu_);
    if (started_) {
      return;
    }
    started_ = true;
  }
  ctx_.nodes.addEventHandler({
      .on_add = nullptr,
      .on_update = nullptr,
      .on_delete =
          [this](const auto& n, bool) {
            std::lock_guard lock(mu_);
            if (auto it = observations_.find(n->uid()); it != observations_.end()) {
              observations_.erase(it);
            }
          },
  });
  thread_ = std::jthread([this](std::stop_token stop) {
    runtime::nameThisThread("node-lifecycle");
    loop(stop);
  });
  setControllerRunning(ctx_.metrics, "cloud-node-lifecycle", true);
  log::info("Started cloud node lifecycle controller",
            {{"monitorPeriod", ctx_.options.node_monitor_period}});
}

void NodeLifecycleController::stop() {
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
    setControllerRunning(ctx_.metrics, "cloud-node-lifecycle", false);
  }
}

Status NodeLifecycleController::healthy() const {
  Clock::MonoTime::rep beat = heartbeat_.load();
  if (beat == 0 || !thread_.joinable()) {
    return okStatus();
  }
  auto since = ctx_.clock.now() - Clock::MonoTime(Clock::MonoTime::duration(beat));
  if (since > kStuckAfter + ctx_.options.node_monitor_period) {
    return Status(Code::Unavailable,
                  fmt::format("no node monitor pass started or finished for {}s",
                              std::chrono::duration_cast<std::chrono::seconds>(since).count()));
  }
  return okStatus();
}

void NodeLifecycleController::loop(std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  // Never wake more often than this to release queued deletions (upstream's eviction queues
  // are processed every 100 ms).
  constexpr auto kMinWait = std::chrono::milliseconds(100);
  while (!stop.stop_requested()) {
    heartbeat_.store(ctx_.clock.now().time_since_epoch().count());
    monitorNodes(stop);
    heartbeat_.store(ctx_.clock.now().time_since_epoch().count());
    // The period counts from the end of a pass (as upstream's wait.Until).
    auto next_pass = std::chrono::steady_clock::now() + ctx_.options.node_monitor_period;
    // Between passes, make the deletions the zones' budgets allow as their tokens refill.
    while (!stop.stop_requested()) {
      auto now = std::chrono::steady_clock::now();
      if (now >= next_pass) {
        break;
      }
      std::chrono::nanoseconds wait = next_pass - now;
      if (auto next_token = deleteQueued()) {
        wait = std::min(wait, std::max<std::chrono::nanoseconds>(*next_token, kMinWait));
      }
      std::unique_lock lock(m);
      cv.wait_for(lock, stop, wait, [] { return false; });
    }
  }
}

size_t NodeLifecycleController::queuedForTest() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [zone, q] : queued_) {
    n += q.size();
  }
  return n;
}

std::optional<std::chrono::nanoseconds> NodeLifecycleController::deleteQueued() {
  std::vector<std::shared_ptr<const kube::Node>> now_due;
  std::optional<std::chrono::nanoseconds> next;
  {
    std::lock_guard lock(mu_);
    auto now = ctx_.clock.now();
    for (auto& [zone, q] : queued_) {
      while (!q.empty()) {
        // Still a candidate? The cache must have the same node (UID), still not Ready.
        auto current = ctx_.nodes.get(q.front()->name());
        if (!current || current->uid() != q.front()->uid() || isReady(*current)) {
          q.pop_front();
          continue;
        }
        if (!takeToken(zone, now)) {
          break;
        }
        now_due.push_back(std::move(current));
        q.pop_front();
      }
      if (q.empty()) {
        continue;
      }
      const Bucket& b = buckets_[zone];
      if (b.rate > 0) {
        auto refill = std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::duration<double>((1.0 - b.tokens) / b.rate));
        next = next ? std::min(*next, refill) : refill;
      }
    }
  }
  for (const auto& node : now_due) {
    deleteNode(node);
  }
  return next;
}

std::map<std::string, NodeLifecycleController::ZoneStatus> NodeLifecycleController::zonesForTest()
    const {
  std::lock_guard lock(mu_);
  return zones_;
}

bool NodeLifecycleController::takeToken(const std::string& zone, Clock::MonoTime now) {
  // mu_ held by the caller.
  Bucket& b = buckets_[zone];
  if (b.rate <= 0) {
    return false;
  }
  double elapsed = std::chrono::duration<double>(now - b.at).count();
  b.tokens = std::min(1.0, b.tokens + elapsed * b.rate);
  b.at = now;
  if (b.tokens < 1.0) {
    return false;
  }
  b.tokens -= 1.0;
  return true;
}

void NodeLifecycleController::monitorNodes(std::stop_token stop) {
  PassTimer pass(monitor_cost_);
  const options::Options& o = ctx_.options;
  auto nodes = ctx_.nodes.list();
  auto now = ctx_.clock.now();

  // One look at every node: count it in its zone, and keep it for the parallel part only if
  // it needs a provider call (not Ready) or the shutdown taint removed (Ready and tainted).
  // A Ready node costs a pass no allocation: its zone is looked up as a view of its label.
  std::unordered_map<std::string, ReadyCounts, ViewHash, std::equal_to<>> counts;  // by zone
  std::vector<size_t> checked;  // indexes into nodes
  {
    ReadyCounts* last = nullptr;  // the previous node's zone (a hit saves hashing its name)
    std::string_view last_zone;
    for (size_t i = 0; i < nodes.size(); ++i) {
      // The pass is bound by memory latency (each node is a heap object whose lists lie a few
      // cache lines after its fields): ask for the node 16 ahead, and for the lists of the
      // node 8 ahead, whose fields the earlier prefetch should have brought in by now.
      if (i + kPrefetchNode < nodes.size()) {
        __builtin_prefetch(nodes[i + kPrefetchNode].get());
      }
      if (i + kPrefetchArrays < nodes.size()) {
        const kube::Node& ahead = *nodes[i + kPrefetchArrays];
        __builtin_prefetch(ahead.conditions().data());
        __builtin_prefetch(ahead.labels().data());
      }
      const kube::Node& node = *nodes[i];
      bool ready = isReady(node);
      ReadyCounts* c = nullptr;
      if (per_provider_zones_) {
        c = &counts.try_emplace(zoneKey(nodes[i])).first->second;
      } else {
        std::string_view zone = zoneOf(node);
        if (last == nullptr || zone != last_zone) {
          auto it = counts.find(zone);
          if (it == counts.end()) {
            it = counts.try_emplace(std::string(zone)).first;
          }
          last = &it->second;  // stays valid: an unordered_map never moves its elements
          last_zone = zone;
        }
        c = last;
      }
      (ready ? c->ready : c->not_ready)++;
      if (!ready || node.hasTaint(keys::kShutdownTaint, keys::kNoSchedule)) {
        checked.push_back(i);
      }
    }
  }
  checked_last_pass_.store(checked.size());

  // Zones, their health and the deletion rate each may use.
  std::map<std::string, ZoneStatus> zones;
  // Per provider (one, "", unless several are loaded): is every zone of it fully disrupted?
  std::map<std::string, bool, std::less<>> all_full;
  for (const auto& [zone, c] : counts) {
    ZoneStatus z;
    z.size = c.ready + c.not_ready;
    z.not_ready = c.not_ready;
    z.state = computeZoneState(c.ready, c.not_ready, o.unhealthy_zone_threshold);
    bool& full = all_full.try_emplace(std::string(providerOfZone(zone)), true).first->second;
    full = full && z.state == ZoneState::FullDisruption;
    switch (z.state) {
      case ZoneState::Normal:
      case ZoneState::FullDisruption:
        z.deletion_rate = o.node_eviction_rate;
        break;
      case ZoneState::PartialDisruption:
        z.deletion_rate =
            z.size > o.large_cluster_size_threshold ? o.secondary_node_eviction_rate : 0;
        break;
    }
    zones[zone] = z;
  }
  for (auto& [zone, z] : zones) {
    if (all_full.find(providerOfZone(zone))->second) {
      z.deletion_rate = 0;
    }
  }
  auto* state_gauge = ctx_.metrics.gauge("ccm_node_lifecycle_zone_state",
                                         "The state of each zone as the lifecycle controller "
                                         "sees it (1 for the current state).",
                                         {"zone", "state"});
  auto* size_gauge = ctx_.metrics.gauge("node_collector_zone_size",
                                        "Gauge measuring number of registered Nodes per zones.",
                                        {"zone"}, metrics::Stability::Alpha);
  auto* unhealthy_gauge = ctx_.metrics.gauge("node_collector_unhealthy_nodes_in_zone",
                                             "Gauge measuring number of not Ready Nodes per "
                                             "zones.",
                                             {"zone"}, metrics::Stability::Alpha);
  auto* health_gauge = ctx_.metrics.gauge("node_collector_zone_health",
                                          "Gauge measuring percentage of healthy nodes per "
                                          "zone.",
                                          {"zone"}, metrics::Stability::Alpha);
  auto* rate_gauge =
      ctx_.metrics.gauge("ccm_node_lifecycle_zone_deletion_rate",
                         "Node deletions per second each zone may make now.", {"zone"});
  for (const auto& [zone, z] : zones) {
    for (ZoneState s :
         {ZoneState::Normal, ZoneState::PartialDisruption, ZoneState::FullDisruption}) {
      if (state_gauge != nullptr) {
        state_gauge->labels({zone, std::string(zoneStateName(s))}).set(z.state == s ? 1 : 0);
      }
    }
    if (size_gauge != nullptr) {
      size_gauge->labels({zone}).set(z.size);
    }
    if (unhealthy_gauge != nullptr) {
      unhealthy_gauge->labels({zone}).set(z.not_ready);
    }
    if (health_gauge != nullptr) {
      health_gauge->labels({zone}).set(z.size == 0 ? 100 : 100.0 * (z.size - z.not_ready) / z.size);
    }
    if (rate_gauge != nullptr) {
      rate_gauge->labels({zone}).set(z.deletion_rate);
    }
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& [zone, z] : zones) {
      Bucket& b = buckets_[zone];
      if (b.rate != z.deletion_rate) {
        // Upstream swaps the zone's limiter on a state change; a fresh bucket may delete at
        // once, then at the new rate.
        b = Bucket{z.deletion_rate, 1.0, now};
      }
    }
    zones_ = zones;
  }

  // Ask the provider about every node that is not Ready (concurrently); remove the shutdown
  // taint of Ready nodes that have it. verdicts[k] is checked[k]'s.
  std::vector<Verdict> verdicts(checked.size(), Verdict::Ready);
  int workers = o.concurrent_node_status_updates > 0 ? o.concurrent_node_status_updates
                                                     : o.concurrent_node_syncs;
  auto threads = static_cast<size_t>(std::max(1, workers));
  auto helper_cpu = parallelFor(checked.size(), threads, stop, [&](size_t i) {
    const auto& node = nodes[checked[i]];
    if (isReady(*node)) {
      if (node->hasTaint(keys::kShutdownTaint, keys::kNoSchedule)) {
        setShutdownTaint(*node, false);
      }
      verdicts[i] = Verdict::Ready;
      return;
    }
    NodeRefs refs;
    plugin::NodeRef ref = refs.add(node);
    auto exists = ctx_.provider.instanceExists(ref);
    if (!exists.ok() || *exists == plugin::Existence::Unknown) {
      verdicts[i] = Verdict::Unknown;
      log::infoV(2, "Cannot tell whether the node's instance exists; leaving it alone",
                 {{"node", node->name()},
                  {"err", exists.ok() ? std::string("UNKNOWN") : exists.status().toString()}});
      return;
    }
    if (*exists == plugin::Existence::NotFound) {
      verdicts[i] = Verdict::NotFound;
      return;
    }
    verdicts[i] = Verdict::Exists;
    auto power = ctx_.provider.instanceShutdown(ref);
    if (!power.ok()) {
      if (power.status().code() != Code::Unimplemented) {
        log::infoV(2, "Cannot tell whether the node's instance is shut down",
                   {{"node", node->name()}, {"err", power.status().toString()}});
      }
      return;
    }
    if (*power == plugin::Power::Shutdown &&
        !node->hasTaint(keys::kShutdownTaint, keys::kNoSchedule)) {
      setShutdownTaint(*node, true);
    }
  });
  pass.addOtherThreads(helper_cpu);
  if (stop.stop_requested()) {
    return;
  }

  // Deletions: confirmed NOT_FOUNDs, within each zone's budget, oldest first.
  std::vector<std::pair<Clock::MonoTime, size_t>> due;
  {
    std::lock_guard lock(mu_);
    // Only a node whose instance was NOT_FOUND in this pass keeps its observation: any other
    // entry is of a node that is Ready now, got another answer, or left the cache.
    if (!observations_.empty()) {
      std::unordered_set<std::string_view> not_found;
      for (size_t k = 0; k < checked.size(); ++k) {
        if (verdicts[k] == Verdict::NotFound) {
          not_found.insert(nodes[checked[k]]->uid());
        }
      }
      std::erase_if(observations_,
                    [&](const auto& entry) { return !not_found.contains(entry.first); });
    }
    for (size_t k = 0; k < checked.size(); ++k) {
      if (verdicts[k] != Verdict::NotFound) {
        continue;
      }
      size_t i = checked[k];
      auto it = observations_.find(nodes[i]->uid());
      if (it == observations_.end()) {
        it = observations_.try_emplace(std::string(nodes[i]->uid())).first;
      }
      Observation& obs = it->second;
      if (!obs.seen) {
        obs = Observation{now, true};
        log::info(
            "Instance not found in the cloud; will delete the node if this is confirmed "
            "after a monitor period",
            {{"node", nodes[i]->name()}});
        continue;
      }
      if (now - obs.first_not_found >= o.node_monitor_period) {
        due.emplace_back(obs.first_not_found, i);
      }
    }
  }
  std::sort(due.begin(), due.end());
  auto* deferred = ctx_.metrics.counter(
      "ccm_node_deletions_deferred_total",
      "Node deletions postponed, per monitor pass, by why: rate_limit (the zone's deletion "
      "budget is spent), partial_disruption (the zone is partially disrupted: reduced or no "
      "deletions), partition (every zone is fully disrupted).",
      {"zone", "reason"});
  // Queue the confirmed deletions per zone, oldest first (this pass's view replaces the last
  // one's), then make those the budgets allow now; the rest are made between passes.
  {
    std::lock_guard lock(mu_);
    queued_.clear();
    for (const auto& [first, i] : due) {
      queued_[zoneKey(nodes[i])].push_back(nodes[i]);
    }
  }
  deleteQueued();
  {
    std::lock_guard lock(mu_);
    for (const auto& [zone, q] : queued_) {
      auto z = zones_.find(zone);
      ZoneState state = z == zones_.end() ? ZoneState::Normal : z->second.state;
      double rate = z == zones_.end() ? 0 : z->second.deletion_rate;
      auto full = all_full.find(providerOfZone(zone));
      DeferralReason why = deferralReason(state, full != all_full.end() && full->second);
      for (const auto& c : q) {
        if (deferred != nullptr) {
          deferred->labels({zone, std::string(deferralReasonName(why))}).inc();
        }
        log::infoV(2, deferralMessage(why),
                   {{"node", c->name()},
                    {"zone", zone},
                    {"zoneState", zoneStateName(state)},
                    {"deletionRate", rate},
                    {"reason", deferralReasonName(why)}});
      }
    }
  }
  for (const auto& [provider, full] : all_full) {
    if (!full) {
      continue;
    }
    size_t candidates = 0;
    for (const auto& [first, i] : due) {
      candidates += providerOfZone(zoneKey(nodes[i])) == provider ? 1 : 0;
    }
    if (candidates == 0) {
      continue;
    }
    if (per_provider_zones_) {
      log::warning(
          "Every zone of a provider is fully disrupted: not deleting any of its nodes (this "
          "looks like a partition between the API server and its nodes, not a cloud event)",
          {{"provider", provider}, {"candidates", candidates}});
    } else {
      log::warning(
          "Every zone is fully disrupted: not deleting any node (this looks like a "
          "partition between the API server and the nodes, not a cloud event)",
          {{"candidates", due.size()}});
    }
  }
  pass.finish(nodes.size());
}

DeferralReason deferralReason(ZoneState state, bool all_fully_disrupted) {
  if (all_fully_disrupted) {
    return DeferralReason::Partition;
  }
  if (state == ZoneState::PartialDisruption) {
    return DeferralReason::PartialDisruption;
  }
  return DeferralReason::RateLimit;
}

std::string_view deferralReasonName(DeferralReason reason) {
  switch (reason) {
    case DeferralReason::RateLimit:
      return "rate_limit";
    case DeferralReason::PartialDisruption:
      return "partial_disruption";
    case DeferralReason::Partition:
      return "partition";
  }
  return "rate_limit";
}

std::string_view deferralMessage(DeferralReason reason) {
  switch (reason) {
    case DeferralReason::RateLimit:
      return "Node deletion postponed: the zone's deletion rate limit is spent for now";
    case DeferralReason::PartialDisruption:
      return "Node deletion postponed: the zone is partially disrupted, so it deletes at the "
             "reduced rate or not at all";
    case DeferralReason::Partition:
      return "Node deletion postponed: every zone is fully disrupted";
  }
  return "Node deletion postponed";
}

void NodeLifecycleController::deleteNode(const std::shared_ptr<const kube::Node>& node) {
  std::string zone = zoneKey(node);
  recorder_.eventf(kube::referenceTo(*node), kube::EventType::Normal, "DeletingNode",
                   "Deleting node {} because it does not exist in the cloud provider",
                   node->name());
  log::info("Deleting node because its instance does not exist in the cloud provider",
            {{"node", node->name()}, {"zone", zone}});
  kube::ApiStatus st = ctx_.api.remove(kube::nodePath(node->name()),
                                       kube::Preconditions{std::string(node->uid()), ""});
  if (!st.ok() && !st.isNotFound()) {
    recorder_.eventf(kube::referenceTo(*node), kube::EventType::Warning, "DeletingNodeFailed",
                     "Failed deleting node {}: {}", node->name(), st.message());
    log::error("Failed deleting node", {{"node", node->name()}, {"err", st.message()}});
    return;
  }
  {
    std::lock_guard lock(mu_);
    observations_.erase(std::string(node->uid()));
  }
  if (auto* f = ctx_.metrics.counter("ccm_node_deletions_total",
                                     "Nodes deleted because their instance was gone.", {"zone"})) {
    f->labels({zone}).inc();
  }
}

void NodeLifecycleController::setShutdownTaint(const kube::Node& cached, bool present) {
  std::string name(cached.name());
  std::string rv(cached.resourceVersion());
  std::vector<kube::TaintSpec> taints = kube::taintSpecs(cached.taints());
  int attempt = 0;
  kube::ApiStatus st = kube::retryOnConflict(kube::kUpdateBackoff, [&]() -> kube::ApiStatus {
    if (attempt++ > 0) {
      auto fresh = ctx_.api.get(kube::nodePath(name));
      if (!fresh.ok()) {
        return fresh.status();
      }
      auto node = kube::decodeNode(*fresh);
      if (!node.ok()) {
        return node.status();
      }
      rv = std::string((*node)->resourceVersion());
      taints = kube::taintSpecs((*node)->taints());
    }
    auto it = std::find_if(taints.begin(), taints.end(), [](const kube::TaintSpec& t) {
      return t.key == keys::kShutdownTaint && t.effect == keys::kNoSchedule;
    });
    if (present == (it != taints.end())) {
      return kube::ApiStatus();  // already as wanted
    }
    if (present) {
      taints.push_back({std::string(keys::kShutdownTaint), "", std::string(keys::kNoSchedule), 0});
    } else {
      taints.erase(it);
    }
    kube::NodePatch patch;
    patch.resourceVersion(rv).taints(taints);
    return ctx_.api.patch(kube::nodePath(name), kube::PatchType::Strategic, patch.build()).status();
  });
  if (!st.ok()) {
    log::error(present ? "Failed to add the shutdown taint" : "Failed to remove the shutdown taint",
               {{"node", name}, {"err", st.message()}});
    return;
  }
  log::info(present ? "Node's instance is shut down: tainted it"
                    : "Node is Ready again: removed the shutdown taint",
            {{"node", name}});
}

StatusOr<ControllerOrSkip> makeNodeLifecycleController(ControllerContext& context) {
  if (!context.provider.info().instances.present) {
    return ControllerOrSkip(NotStarted{"the cloud provider does not support instances"});
  }
  return ControllerOrSkip(std::make_unique<NodeLifecycleController>(context));
}

}  // namespace ccm::controllers::lifecycle
