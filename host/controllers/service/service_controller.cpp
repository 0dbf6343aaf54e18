// The service controller: load balancers for Services of type LoadBalancer.
#include "host/controllers/service/service_controller.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "ccm/validation.hpp"
#include "host/controllers/common/provider_refs.hpp"
#include "host/controllers/common/well_known.hpp"
#include "host/controllers/service/service_predicates.hpp"
#include "host/kube/api/kube_api.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "host/log/log.hpp"
#include "host/runtime/rate_limiter.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::controllers::service {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

// Upstream's constants (not flags).
constexpr std::chrono::seconds kServiceResync{30};
// The node queue's one key: upstream queues node names and runs a full pass per name; one key
// makes a burst of node events (a cluster coming up) collapse into one pass per round.
constexpr const char* kNodeSyncKey = "node-set";
// A node event schedules the pass this much later; the events that follow meanwhile join it.
// Without it each event of a burst woke the node worker once (10,000+ thread wake-ups for
// 5,000 joining nodes); with it a burst costs one pass per 100 ms, and a lone join reaches
// the load balancers 100 ms later.
constexpr std::chrono::milliseconds kNodeSyncGather{100};

double seconds(Clock::MonoTime::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::vector<kube::IngressSpec> toIngressSpecs(const plugin::LoadBalancerStatus& status) {
  std::vector<kube::IngressSpec> out;
  out.reserve(status.ingress.size());
  for (const auto& in : status.ingress) {
    kube::IngressSpec s;
    s.ip = in.ip;
    s.hostname = in.hostname;
    s.ip_mode = in.ip_mode;
    for (const auto& p : in.ports) {
      std::optional<std::string> error;
      if (!p.error.empty()) {
        error.emplace(p.error);
      }
      s.ports.push_back(kube::PortStatusSpec{p.port, p.protocol, std::move(error)});
    }
    out.push_back(std::move(s));
  }
  return out;
}

// True when some entry of an ingress list (IngressSpec or a decoded LoadBalancerIngress)
// carries an ipMode.
template <typename IngressList>
bool hasIpMode(const IngressList& ingress) {
  return std::any_of(ingress.begin(), ingress.end(),
                     [](const auto& in) { return !in.ip_mode.empty(); });
}

// FAILED_PRECONDITION with a retry-after: the cloud is still working on the load balancer
// (a provider's "busy, come back then"). Normal progress, so a Normal event and an info log,
// not a Warning.
bool cloudBusy(const Status& st) {
  return st.code() == Code::FailedPrecondition && st.retryAfter().count() > 0;
}

// A provider error wrapped with context; code and retry-after kept.
Status wrap(std::string_view what, const Status& st) {
  return Status(st.code(), fmt::format("{}: {}", what, st.toString()), st.retryAfter());
}

Status wrapApi(std::string_view what, const kube::ApiStatus& st) {
  Status s = st.toStatus();
  return Status(s.code(), fmt::format("{}: {}", what, st.toString()), s.retryAfter());
}

bool validKey(const std::string& key) {
  size_t slash = key.find('/');
  return slash != std::string::npos && slash > 0 && slash + 1 < key.size() &&
         key.find('/', slash + 1) == std::string::npos;
}

}  // namespace

// One node pass: records service_controller_nodesync_latency_seconds when the last host update
// it queued has been processed (its last reference is dropped).
struct ServiceController::NodePass {
  NodePass(Clock& clock, metrics::Histogram* histogram)
      : clock_(clock), histogram_(histogram), start_(clock.now()) {}
  ~NodePass() {
    if (histogram_ != nullptr) {
      histogram_->observe(seconds(clock_.now() - start_));
    }
  }
  NodePass(const NodePass&) = delete;
  NodePass& operator=(const NodePass&) = delete;

  Clock& clock_;
  metrics::Histogram* histogram_;
  Clock::MonoTime start_;
};

ServiceController::ServiceController(const ControllerContext& context,
                                     std::function<bool()> release)
    : context_(context),
      cluster_name_(context.options.cluster_name),
      // Load-balancer work never waits for room in the event queue: a wave of thousands of
      // ensures or host updates (a restart, a node joining with 10,000 balancers) would be
      // paced to the API server's event rate (two events per balancer; 10 balancers a second
      // at the default 20 QPS). Past 1,000 queued events the rest are dropped and counted,
      // as client-go's recorder drops them; the node controllers keep the pacing.
      recorder_(context.events.recorder(std::string(kComponent), /*may_wait=*/false)),
      workers_(std::max(1, context.options.concurrent_service_syncs)),
      classes_(ClassSelection::fromFlags(context.options.load_balancer_classes,
                                         context.options.load_balancer_class_only)),
      burst_release_({.min_items = kBurstReleaseHosts, .min_interval = kBurstReleaseInterval},
                     context.clock, std::move(release)),
      guard_(std::make_shared<HandlerGuard>()) {
  service_queue_ = std::make_unique<WorkQueue>("service", serviceControllerRateLimiter(),
                                               context.clock, &context.metrics);
  node_queue_ = std::make_unique<WorkQueue>("node", serviceControllerRateLimiter(), context.clock,
                                            &context.metrics);
  auto& r = context.metrics;
  lb_sync_total_ = r.counter(
      "service_controller_loadbalancer_sync_total",
      "Number of load balancer host updates (UpdateLoadBalancer calls) made by the service "
      "controller after Node changes.",
      {}, metrics::Stability::Alpha);
  nodesync_error_total_ =
      r.counter("service_controller_nodesync_error_total",
                "Number of load balancer host updates that failed and were retried.", {},
                metrics::Stability::Alpha);
  nodesync_latency_ = r.histogram(
      "service_controller_nodesync_latency_seconds",
      "Time from a Node change until every load balancer's host set was updated for it.",
      metrics::exponentialBuckets(1, 2, 15), {}, metrics::Stability::Alpha);
  host_update_latency_ =
      r.histogram("service_controller_update_loadbalancer_host_latency_seconds",
                  "Duration of one load balancer host update (UpdateLoadBalancer).",
                  metrics::exponentialBuckets(1, 2, 15), {}, metrics::Stability::Alpha);
  if (auto* g = r.gauge("ccm_service_host_set_bytes",
                        "Heap bytes of the load balancers' current host set: its copy of the "
                        "hosts' strings (part=text) and the provider refs with their pairs and "
                        "addresses (part=refs).",
                        {"part"})) {
    host_set_text_bytes_ = &g->labels({"text"});
    host_set_ref_bytes_ = &g->labels({"refs"});
  }
  if (auto* g = r.gauge("ccm_service_host_set_nodes",
                        "Nodes in the load balancers' current host set.", {})) {
    host_set_nodes_ = &g->noLabels();
  }
  guard_->self = this;
}

ServiceController::~ServiceController() {
  stop();
}

void ServiceController::start() {
  if (started_ || stopped_) {
    return;
  }
  started_ = true;
  registerHandlers();
  for (int i = 0; i < workers_; ++i) {
    threads_.emplace_back([this, i] { serviceWorker(i); });
  }
  threads_.emplace_back([this] { nodeWorker(); });
  setControllerRunning(context_.metrics, kMetricName, true);
  log::info("Started the service controller", {{"workers", workers_}, {"cluster", cluster_name_}});
}

void ServiceController::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  {
    std::lock_guard lock(guard_->mu);
    guard_->self = nullptr;
  }
  service_queue_->shutDown();
  node_queue_->shutDown();
  for (auto& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
  threads_.clear();
  if (started_) {
    setControllerRunning(context_.metrics, kMetricName, false);
    log::info("Stopped the service controller");
  }
}

// ---- handlers --------------------------------------------------------------------------------

void ServiceController::registerHandlers() {
  std::call_once(handlers_once_, [this] {
    auto g = guard_;
    kube::EventHandlers<kube::Service> sh;
    sh.on_add = [g](const auto& svc) {
      std::lock_guard lock(g->mu);
      if (g->self != nullptr) {
        g->self->onServiceAdd(svc);
      }
    };
    sh.on_update = [g](const auto& o, const auto& n) {
      std::lock_guard lock(g->mu);
      if (g->self != nullptr) {
        g->self->onServiceUpdate(o, n);
      }
    };
    sh.on_delete = [g](const auto& last, bool) {
      std::lock_guard lock(g->mu);
      if (g->self != nullptr) {
        g->self->onServiceDelete(last);
      }
    };
    context_.services.addEventHandler(std::move(sh), kServiceResync);

    kube::EventHandlers<kube::Node> nh;
    nh.on_add = [g](const auto& n) {
      std::lock_guard lock(g->mu);
      if (g->self != nullptr) {
        g->self->onNodeAdd(n);
      }
    };
    nh.on_update = [g](const auto& o, const auto& n) {
      std::lock_guard lock(g->mu);
      if (g->self != nullptr) {
        g->self->onNodeUpdate(o, n);
      }
    };
    nh.on_delete = [g](const auto& n, bool) {
      std::lock_guard lock(g->mu);
      if (g->self != nullptr) {
        g->self->onNodeDelete(n);
      }
    };
    // No resync: upstream's 100 s node resync never triggers anything (identical objects).
    context_.nodes.addEventHandler(std::move(nh));
  });
}

void ServiceController::onServiceAdd(const std::shared_ptr<const kube::Service>& svc) {
  if (wantsLoadBalancer(*svc, classes_) || needsCleanup(*svc, classes_)) {
    enqueueFull(std::string(svc->key()));
  }
}

void ServiceController::onServiceUpdate(const std::shared_ptr<const kube::Service>& old_svc,
                                        const std::shared_ptr<const kube::Service>& new_svc) {
  auto entry = cache_.get(std::string(new_svc->key()));
  const AnnotationWrite* own = entry ? &entry->annotations_written : nullptr;
  if (needsUpdate(old_svc.get(), *new_svc, classes_, own) || needsCleanup(*new_svc, classes_)) {
    enqueueFull(std::string(new_svc->key()));
  }
}

void ServiceController::onServiceDelete(const std::shared_ptr<const kube::Service>& last) {
  // Upstream has no delete handler: a Service that vanishes without our finalizer (stripped,
  // or from before the finalizer era) leaks its load balancer. Sync the key: the deletion
  // path cleans up from our cache. A Service we already cleaned up has no entry (nothing to
  // do); one we never synced but that wanted a load balancer and never carried the finalizer
  // is remembered from its last state.
  std::string key(last->key());
  if (cache_.contains(key)) {
    enqueueFull(key);
    return;
  }
  // Its status is not evidence either way (it may have been cleared): the provider's
  // deletion is idempotent, so ask for it.
  if (wantsLoadBalancer(*last, classes_) &&
      !last->hasFinalizer(keys::kLoadBalancerCleanupFinalizer) && last->deletion_timestamp == 0) {
    CachedService e;
    e.service = last;
    cache_.set(key, std::move(e));
    enqueueFull(key);
  }
}

void ServiceController::onNodeAdd(const std::shared_ptr<const kube::Node>&) {
  node_generation_.fetch_add(1);
  node_queue_->addAfter(kNodeSyncKey, kNodeSyncGather);
}

void ServiceController::onNodeUpdate(const std::shared_ptr<const kube::Node>& old_node,
                                     const std::shared_ptr<const kube::Node>& new_node) {
  if (old_node == new_node) {
    return;
  }
  // Rebuild the snapshot for later calls when anything the provider sees changed, but sync
  // host sets only on upstream's triggers (never on readiness or taint flaps).
  if (nodeChangedForProvider(*old_node, *new_node)) {
    node_generation_.fetch_add(1);
  }
  if (shouldSyncUpdatedNode(*old_node, *new_node)) {
    node_queue_->addAfter(kNodeSyncKey, kNodeSyncGather);
  }
}

void ServiceController::onNodeDelete(const std::shared_ptr<const kube::Node>&) {
  node_generation_.fetch_add(1);
  node_queue_->addAfter(kNodeSyncKey, kNodeSyncGather);
}

// ---- queues ----------------------------------------------------------------------------------

void ServiceController::enqueueFull(const std::string& key) {
  {
    std::lock_guard lock(pending_mu_);
    pending_[key].full = true;
  }
  service_queue_->add(key);
}

void ServiceController::enqueueHosts(const std::string& key, std::shared_ptr<NodePass> pass) {
  {
    std::lock_guard lock(pending_mu_);
    Pending& p = pending_[key];
    p.hosts = true;
    if (pass) {
      p.pass = std::move(pass);
    }
  }
  service_queue_->add(key);
}

ServiceController::Pending ServiceController::takePending(const std::string& key) {
  std::lock_guard lock(pending_mu_);
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    return {};
  }
  Pending p = std::move(it->second);
  pending_.erase(it);
  return p;
}

bool ServiceController::processNextServiceItem() {
  auto key = service_queue_->get();
  if (!key) {
    return false;
  }
  syncs_in_work_.fetch_add(1);
  if (!validKey(*key)) {
    log::error("Dropping a service queue key of unexpected format", {{"key", *key}});
    service_queue_->forget(*key);
  } else {
    Status st = syncService(*key);
    handleResult(*key, st);
  }
  service_queue_->done(*key);
  noteSyncDone();
  return true;
}

void ServiceController::noteSyncDone() {
  // The last sync of a burst to finish (none in work, none ready) releases: a drain seen
  // while other workers still hold their calls' inputs would leave those to the heap.
  if (syncs_in_work_.fetch_sub(1) == 1 && service_queue_->len() == 0) {
    // The wave of load-balancer calls is over: the host set (a copy of every host's fields a
    // provider reads, and the provider's converted forms of it) is not kept until the next
    // one. Node changes meanwhile compare members only (currentMembers); the next call that
    // needs the hosts builds the set again from the cache.
    std::shared_ptr<const NodeSet> set;
    {
      std::lock_guard lock(node_set_mu_);
      set = std::move(node_set_);
      noteHostSet(nullptr);
    }
    if (set) {
      set->releaseForms();
    }
    set.reset();  // freed here, before the release below (a call still holding it frees it)
    burst_release_.noteDrained();
  }
}

void ServiceController::handleResult(const std::string& key, const Status& st) {
  if (st.ok()) {
    service_queue_->forget(key);
    return;
  }
  if (st.code() == Code::Cancelled) {
    // The host cancelled the call (shutting down or lost leadership): not the Service's
    // problem. Retried if we keep running.
    log::infoV(2, "Service sync cancelled", {{"service", key}});
    service_queue_->addRateLimited(key);
    return;
  }
  {
    std::lock_guard lock(pending_mu_);
    pending_[key].full = true;  // a failed sync is retried in full, like upstream
  }
  if (st.retryAfter().count() > 0) {
    // The provider said when to come back: a fixed delay that neither grows nor resets the
    // key's exponential back-off.
    if (cloudBusy(st)) {
      log::info("The cloud is still working on the load balancer; retrying as the provider asked",
                {{"service", key}, {"retryAfter", st.retryAfter()}, {"reason", st.toString()}});
    } else {
      log::warning("Error processing service, retrying as the provider asked",
                   {{"service", key}, {"retryAfter", st.retryAfter()}, {"err", st.toString()}});
    }
    service_queue_->addAfter(key, st.retryAfter());
    return;
  }
  log::error("Error processing service, retrying with back-off",
             {{"service", key}, {"err", st.toString()}});
  service_queue_->addRateLimited(key);
}

bool ServiceController::processNextNodeItem() {
  auto key = node_queue_->get();
  if (!key) {
    return false;
  }
  syncNodes();
  node_queue_->forget(*key);
  node_queue_->done(*key);
  return true;
}

void ServiceController::serviceWorker(int index) {
  runtime::nameThisThread(fmt::format("svc-sync-{}", index));
  while (processNextServiceItem()) {
  }
}

void ServiceController::nodeWorker() {
  runtime::nameThisThread("svc-nodes");
  while (processNextNodeItem()) {
  }
}

// ---- node set --------------------------------------------------------------------------------

std::shared_ptr<const NodeSet> ServiceController::currentNodeSet() {
  std::lock_guard lock(node_set_mu_);
  uint64_t gen = node_generation_.load();
  if (!node_set_ || node_set_->generation() != gen) {
    node_set_ = std::make_shared<const NodeSet>(context_.nodes.list(), gen);
    members_ = node_set_->membership();
    members_generation_ = gen;
    noteHostSet(node_set_.get());
  }
  return node_set_;
}

std::shared_ptr<const NodeSet> ServiceController::heldNodeSet() {
  std::lock_guard lock(node_set_mu_);
  return node_set_;
}

Membership ServiceController::currentMembers() {
  std::lock_guard lock(node_set_mu_);
  uint64_t gen = node_generation_.load();
  if (node_set_ && node_set_->generation() == gen) {
    return node_set_->membership();
  }
  if (members_generation_ != gen) {
    members_ = membershipOf(context_.nodes.list());
    members_generation_ = gen;
    if (host_set_nodes_ != nullptr) {
      host_set_nodes_->set(static_cast<double>(members_.count));
    }
  }
  return members_;
}

void ServiceController::noteHostSet(const NodeSet* set) {  // node_set_mu_ held
  if (host_set_nodes_ != nullptr && set != nullptr) {
    host_set_nodes_->set(static_cast<double>(set->size()));
  }
  if (host_set_text_bytes_ != nullptr) {
    host_set_text_bytes_->set(set != nullptr ? static_cast<double>(set->textBytes()) : 0.0);
    host_set_ref_bytes_->set(set != nullptr ? static_cast<double>(set->refBytes()) : 0.0);
  }
}

void ServiceController::syncNodes() {
  // Only the members are compared (names and providerIDs, no host set is built): while no
  // service has a load balancer (a node burst in a cluster without LoadBalancer services) a
  // node event costs nothing, and a change that leaves the members as they were costs a
  // sort and a digest of the names.
  std::optional<Membership> members;
  auto pass = std::make_shared<NodePass>(
      context_.clock, nodesync_latency_ != nullptr ? &nodesync_latency_->noLabels() : nullptr);
  std::vector<std::string> keys;
  cache_.forEach([&](const std::string& key, const CachedService& e) {
    if (!e.ensured || !e.service || !wantsLoadBalancer(*e.service, classes_)) {
      return;
    }
    if (!members) {
      members = currentMembers();
    }
    if (!sameMembers(e.synced_members, *members)) {
      keys.push_back(key);
    }
  });
  if (!keys.empty()) {
    log::infoV(2, "Load balancer host set changed; updating services",
               {{"nodes", members->count}, {"services", keys.size()}});
  }
  for (const auto& k : keys) {
    enqueueHosts(k, pass);
  }
}

void ServiceController::recheckHosts(const std::string& key,
                                     const std::shared_ptr<const NodeSet>& used) {
  if (used->membership() != currentMembers()) {
    enqueueHosts(key, nullptr);
  }
}

// ---- sync ------------------------------------------------------------------------------------

Status ServiceController::syncService(const std::string& key) {
  if (!validKey(key)) {
    return Status(Code::InvalidArgument, fmt::format("unexpected key format: \"{}\"", key));
  }
  Pending pending = takePending(key);  // its node pass (if any) completes when we return
  auto start = context_.clock.now();
  auto svc = context_.services.get(key);
  Status st;
  if (!svc) {
    st = processServiceDeletion(key);
  } else {
    std::optional<Status> hosts;
    if (pending.hosts && !pending.full) {
      hosts = syncHosts(key, svc);
    }
    st = hosts ? *hosts : processServiceCreateOrUpdate(key, svc);
  }
  log::infoV(4, "Finished syncing service",
             {{"service", key}, {"duration", context_.clock.now() - start}});
  return st;
}

Status ServiceController::processServiceDeletion(const std::string& key) {
  auto entry = cache_.get(key);
  if (!entry) {
    return okStatus();
  }
  if (entry->service && wantsLoadBalancer(*entry->service, classes_)) {
    CCM_RETURN_IF_ERROR(deleteVanished(entry->service));
  }
  cache_.remove(key);
  return okStatus();
}

Status ServiceController::deleteVanished(const std::shared_ptr<const kube::Service>& svc) {
  auto ref = kube::referenceTo(*svc);
  log::info("Deleting the load balancer of a service that no longer exists",
            {{"service", svc->key()}, {"uid", svc->uid}});
  recorder_.event(ref, kube::EventType::Normal, "DeletingLoadBalancer", "Deleting load balancer");
  ServiceRefHolder holder(svc);
  Status st = context_.provider.ensureLoadBalancerDeleted(cluster_name_, holder.ref());
  if (!st.ok() && st.code() != Code::ImplementedElsewhere) {
    recorder_.eventf(ref, kube::EventType::Warning, "DeleteLoadBalancerFailed",
                     "Error deleting load balancer: {}", st.toString());
    return st;
  }
  recorder_.event(ref, kube::EventType::Normal, "DeletedLoadBalancer", "Deleted load balancer");
  return okStatus();
}

Status ServiceController::processServiceCreateOrUpdate(
    const std::string& key, const std::shared_ptr<const kube::Service>& svc) {
  auto entry = cache_.get(key);
  if (entry && entry->service && entry->service->uid != svc->uid) {
    // Deleted and recreated under the same name without our finalizer having held it: the
    // old object's load balancer goes first.
    if (wantsLoadBalancer(*entry->service, classes_)) {
      CCM_RETURN_IF_ERROR(deleteVanished(entry->service));
    }
    cache_.remove(key);
    entry.reset();
  }
  if (belongsElsewhere(*svc, classes_)) {
    // Another controller's class: no finalizer, no status, no cloud call for this Service.
    // The one exception is a load balancer ccm made for an earlier state of it (its type went
    // LoadBalancer → ClusterIP → LoadBalancer with another class faster than ccm saw): that
    // load balancer is ccm's own and is deleted as if the Service had vanished, still without
    // a write to the Service.
    if (entry && entry->service &&
        (entry->ensure_attempted || entry->wanted_load_balancer ||
         wantsLoadBalancer(*entry->service, classes_))) {
      CCM_RETURN_IF_ERROR(deleteVanished(entry->service));
    }
    if (entry) {
      cache_.remove(key);
    }
    return okStatus();
  }
  CachedService e = entry ? std::move(*entry) : CachedService{};
  if (e.service && wantsLoadBalancer(*e.service, classes_)) {
    e.wanted_load_balancer = true;
    e.wanted_class = std::string(e.service->load_balancer_class);
  }
  e.service = svc;
  e.ensured = false;
  cache_.set(key, std::move(e));

  auto [op, st] = syncLoadBalancerIfNeeded(key, svc);
  if (!st.ok()) {
    if (st.code() == Code::Cancelled) {
      return st;  // the host is stopping the controllers: no event
    }
    if (cloudBusy(st)) {
      recorder_.eventf(kube::referenceTo(*svc), kube::EventType::Normal, "LoadBalancerPending",
                       "Waiting for the cloud: {}", st.message());
      return st;
    }
    recorder_.eventf(kube::referenceTo(*svc), kube::EventType::Warning, "SyncLoadBalancerFailed",
                     "Error syncing load balancer: {}", st.message());
    return st;
  }
  if (op == Op::Delete) {
    cache_.remove(key);
  } else if (op == Op::Ensure) {
    cache_.update(key, [](CachedService& c) { c.ensured = true; });
  }
  return okStatus();
}

std::pair<ServiceController::Op, Status> ServiceController::syncLoadBalancerIfNeeded(
    const std::string& key, const std::shared_ptr<const kube::Service>& svc) {
  // Being deleted counts even when the cache does not show our finalizer (yet): no ensure of
  // a Service on its way out.
  if (!wantsLoadBalancer(*svc, classes_) || needsCleanup(*svc, classes_) ||
      svc->deletion_timestamp != 0) {
    return deletePath(key, svc);
  }
  return ensurePath(key, svc);
}

std::pair<ServiceController::Op, Status> ServiceController::deletePath(
    const std::string& key, const std::shared_ptr<const kube::Service>& svc) {
  auto ref = kube::referenceTo(*svc);
  auto entry = cache_.get(key);
  // The cache may not show yet the finalizer we added a moment ago.
  bool has_finalizer =
      svc->hasFinalizer(keys::kLoadBalancerCleanupFinalizer) || (entry && entry->finalizer_added);
  bool attempted = entry && (entry->ensure_attempted || entry->wanted_load_balancer);
  // Whether the Service may still own a load balancer is decided from what ccm recorded
  // itself: its finalizer (persisted on the Service, so it survives a restart) and its cache
  // (an Ensure attempted, or an earlier version that wanted a load balancer).
  // status.loadBalancer is only a hint: the API server clears it when the type changes away
  // from LoadBalancer. A Service with none of these cannot have a load balancer of ours: no
  // cloud call (upstream asks GetLoadBalancer for every such Service).
  if (has_finalizer || attempted || !svc->ingress.empty()) {
    ServiceRefHolder holder(svc);
    plugin::ServiceRef cleanup = holder.ref();
    // The API server clears spec.loadBalancerClass when the type changes away from
    // LoadBalancer; the load balancer was made for the class of the last version we saw
    // (with several providers, the class chooses the provider that made it).
    if (cleanup.load_balancer_class.empty() && entry) {
      cleanup.load_balancer_class = entry->wanted_class;
    }
    auto exists = context_.provider.getLoadBalancer(cluster_name_, cleanup);
    if (!exists.ok()) {
      return {Op::Delete,
              wrap("failed to check if load balancer exists before cleanup", exists.status())};
    }
    if (exists->has_value()) {
      log::infoV(2, "Deleting existing load balancer", {{"service", key}});
      recorder_.event(ref, kube::EventType::Normal, "DeletingLoadBalancer",
                      "Deleting load balancer");
      Status st = context_.provider.ensureLoadBalancerDeleted(cluster_name_, cleanup);
      if (!st.ok()) {
        if (st.code() != Code::ImplementedElsewhere) {
          return {Op::Delete, wrap("failed to delete load balancer", st)};
        }
        log::infoV(4, "Load balancer implemented elsewhere; ignoring the deletion error",
                   {{"service", key}});
      }
    }
    // Only now, with the load balancer gone, may the Service go.
    if (has_finalizer) {
      Status st = removeFinalizer(*svc);
      if (!st.ok()) {
        return {Op::Delete, st};
      }
      cache_.update(key, [](CachedService& c) {
        c.finalizer_added = false;
        c.finalizer_added_rv.clear();
      });
    }
    recorder_.event(ref, kube::EventType::Normal, "DeletedLoadBalancer", "Deleted load balancer");
  }
  return {Op::Delete, patchStatus(key, *svc, {})};
}

std::pair<ServiceController::Op, Status> ServiceController::ensurePath(
    const std::string& key, const std::shared_ptr<const kube::Service>& svc) {
  auto ref = kube::referenceTo(*svc);
  log::infoV(2, "Ensuring load balancer", {{"service", key}});
  recorder_.event(ref, kube::EventType::Normal, "EnsuringLoadBalancer", "Ensuring load balancer");

  // The finalizer goes first, so no load balancer can exist without it.
  Status fin = addFinalizer(key, *svc);
  if (!fin.ok()) {
    return {Op::Ensure, fin};
  }

  auto nodes = currentNodeSet();
  if (nodes->empty()) {
    recorder_.event(ref, kube::EventType::Warning, "UnAvailableLoadBalancer",
                    "There are no available nodes for LoadBalancer");
  }
  cache_.update(key, [&](CachedService& c) {
    c.synced_members = nodes->membership();
    c.ensure_attempted = true;
  });

  ServiceRefHolder holder(svc);
  auto status =
      context_.provider.ensureLoadBalancerShared(cluster_name_, holder.ref(), nodes->hosts());
  burst_release_.noteDone(nodes->size());
  if (!status.ok()) {
    if (status.status().code() == Code::ImplementedElsewhere) {
      log::infoV(4, "Load balancer implemented elsewhere; nothing to do", {{"service", key}});
      return {Op::Ensure, okStatus()};
    }
    return {Op::Ensure, wrap("failed to ensure load balancer", status.status())};
  }
  recorder_.event(ref, kube::EventType::Normal, "EnsuredLoadBalancer", "Ensured load balancer");
  Status st = patchStatus(key, *svc, toIngressSpecs(*status));
  if (st.ok()) {
    st = patchAnnotations(key, *svc, *status);
  }
  if (st.ok()) {
    recheckHosts(key, nodes);
  }
  return {Op::Ensure, st};
}

std::optional<Status> ServiceController::syncHosts(
    const std::string& key, const std::shared_ptr<const kube::Service>& svc) {
  auto entry = cache_.get(key);
  if (!entry || !entry->ensured || !entry->service || entry->service->uid != svc->uid ||
      !wantsLoadBalancer(*svc, classes_) || needsCleanup(*svc, classes_) ||
      needsUpdate(entry->service.get(), *svc, classes_, &entry->annotations_written)) {
    return std::nullopt;  // not a plain host update: run the whole sync
  }
  if (sameMembers(entry->synced_members, currentMembers())) {
    return okStatus();  // no host set is built to find that nothing changed
  }
  auto nodes = currentNodeSet();
  cache_.update(key, [&](CachedService& c) { c.synced_members = nodes->membership(); });

  ServiceRefHolder holder(svc);
  auto ref = kube::referenceTo(*svc);
  auto start = context_.clock.now();
  Status st =
      context_.provider.updateLoadBalancerShared(cluster_name_, holder.ref(), nodes->hosts());
  burst_release_.noteDone(nodes->size());
  if (lb_sync_total_ != nullptr) {
    lb_sync_total_->noLabels().inc();
  }
  if (host_update_latency_ != nullptr) {
    host_update_latency_->noLabels().observe(seconds(context_.clock.now() - start));
  }
  if (st.ok()) {
    if (nodes->empty()) {
      recorder_.event(ref, kube::EventType::Warning, "UnAvailableLoadBalancer",
                      "There are no available nodes for LoadBalancer");
    } else {
      recorder_.event(ref, kube::EventType::Normal, "UpdatedLoadBalancer",
                      "Updated load balancer with new hosts");
    }
    recheckHosts(key, nodes);
    return okStatus();
  }
  if (st.code() == Code::ImplementedElsewhere) {
    return okStatus();
  }
  auto exists = context_.provider.getLoadBalancer(cluster_name_, holder.ref());
  if (exists.ok() && !exists->has_value()) {
    // Upstream counts this as done and leaves the Service without a load balancer until its
    // spec changes. It wants one, so ensure it again now.
    log::warning("Load balancer vanished from the cloud; ensuring it again", {{"service", key}});
    cache_.update(key, [](CachedService& c) { c.ensured = false; });
    return std::nullopt;
  }
  if (nodesync_error_total_ != nullptr) {
    nodesync_error_total_->noLabels().inc();
  }
  if (cloudBusy(st)) {
    recorder_.eventf(ref, kube::EventType::Normal, "LoadBalancerPending",
                     "Waiting for the cloud before updating hosts: {}", st.message());
    cache_.update(key, [](CachedService& c) { c.ensured = false; });
    return wrap("failed to update load balancer hosts", st);
  }
  recorder_.eventf(ref, kube::EventType::Warning, "UpdateLoadBalancerFailed",
                   "Error updating load balancer with new hosts {} [node names limited, total "
                   "number of nodes: {}], error: {}",
                   nodes->loggableNames(), nodes->size(), st.toString());
  cache_.update(key, [](CachedService& c) { c.ensured = false; });
  return wrap("failed to update load balancer hosts", st);
}

// ---- writes ----------------------------------------------------------------------------------

Status ServiceController::addFinalizer(const std::string& key, const kube::Service& svc) {
  if (svc.hasFinalizer(keys::kLoadBalancerCleanupFinalizer)) {
    return okStatus();
  }
  std::string rv(svc.resource_version);
  auto entry = cache_.get(key);
  if (entry && !rv.empty() && entry->finalizer_added_rv == rv) {
    return okStatus();  // added already; the informer has not caught up yet
  }
  auto r = context_.api.patch(kube::serviceStatusPath(svc.namespace_, svc.name),
                              kube::PatchType::Strategic,
                              kube::finalizerAddPatch(keys::kLoadBalancerCleanupFinalizer));
  if (!r.ok()) {
    return wrapApi("failed to add load balancer cleanup finalizer", r.status());
  }
  cache_.update(key, [&](CachedService& c) {
    c.finalizer_added = true;
    c.finalizer_added_rv = rv;
  });
  return okStatus();
}

Status ServiceController::removeFinalizer(const kube::Service& svc) {
  auto r = context_.api.patch(kube::serviceStatusPath(svc.namespace_, svc.name),
                              kube::PatchType::Strategic,
                              kube::finalizerRemovePatch(keys::kLoadBalancerCleanupFinalizer));
  if (!r.ok() && !r.status().isNotFound()) {
    return wrapApi("failed to remove load balancer cleanup finalizer", r.status());
  }
  return okStatus();
}

Status ServiceController::patchStatus(const std::string& key, const kube::Service& svc,
                                      const std::vector<kube::IngressSpec>& wanted) {
  std::vector<kube::IngressSpec> desired = wanted;
  if (server_drops_ip_mode_.load(std::memory_order_relaxed)) {
    for (auto& in : desired) {
      in.ip_mode.clear();
    }
  }
  std::string rv(svc.resource_version);
  auto entry = cache_.get(key);
  const auto* written = entry && entry->status_written ? &*entry->status_written : nullptr;
  if (kube::ingressEqual(svc.ingress, desired)) {
    // Equal in the cache, and no write of ours that the cache may not show yet says
    // otherwise (say, the ingress we wrote just before the Service stopped wanting an LB).
    if (written == nullptr || *written == desired) {
      return okStatus();
    }
  } else if (written != nullptr && *written == desired && !rv.empty() &&
             entry->status_written_rv == rv) {
    return okStatus();  // written already; the informer has not caught up yet
  }
  auto r =
      context_.api.patch(kube::serviceStatusPath(svc.namespace_, svc.name),
                         kube::PatchType::Strategic, kube::serviceLoadBalancerStatusPatch(desired));
  if (!r.ok()) {
    if (r.status().isNotFound()) {
      return okStatus();  // the Service is gone (usually: our finalizer was its last)
    }
    return wrapApi("failed to update load balancer status", r.status());
  }
  if (hasIpMode(desired) && !server_drops_ip_mode_.load(std::memory_order_relaxed)) {
    auto answered = kube::decodeService(r.value());
    if (answered.ok() && !hasIpMode(answered.value()->ingress) &&
        !server_drops_ip_mode_.exchange(true)) {
      ccm::log::info(
          "the API server does not keep status.loadBalancer.ingress[].ipMode (Kubernetes before "
          "1.29, or the LoadBalancerIPMode feature gate off): load balancer status is written "
          "without it from now on",
          {{"service", key}});
      for (auto& in : desired) {
        in.ip_mode.clear();  // what the server stored, so the cache compares equal
      }
    }
  }
  cache_.update(key, [&](CachedService& c) {
    c.status_written_rv = rv;
    c.status_written = desired;
  });
  return okStatus();
}

Status ServiceController::patchAnnotations(const std::string& key, const kube::Service& svc,
                                           const plugin::LoadBalancerStatus& status) {
  if (status.annotations.empty() && status.removed_annotations.empty()) {
    return okStatus();
  }
  // The host checked every key against the provider's domain when the status was emitted;
  // checked again here, so no write can ever touch an annotation outside it.
  std::string_view domain = context_.provider.annotationDomainFor(
      svc.has_load_balancer_class ? std::string_view(svc.load_balancer_class) : "");
  std::map<std::string, std::optional<std::string>> changes;
  for (const auto& [k, v] : status.annotations) {
    if (auto e = sdk::checkAnnotationKey(k, domain); !e.empty()) {
      return Status(Code::Internal, "refusing to write provider annotations: " + e);
    }
    auto current = svc.annotation(k);
    if (!current || *current != v) {
      changes[k] = v;
    }
  }
  for (const auto& k : status.removed_annotations) {
    if (auto e = sdk::checkAnnotationKey(k, domain); !e.empty()) {
      return Status(Code::Internal, "refusing to remove provider annotations: " + e);
    }
    if (svc.annotation(k)) {
      changes[k] = std::nullopt;
    }
  }
  if (changes.empty()) {
    return okStatus();
  }
  std::string rv(svc.resource_version);
  auto entry = cache_.get(key);
  if (entry && !rv.empty() && entry->annotations_written_rv == rv &&
      entry->annotations_written == changes) {
    return okStatus();  // written already; the informer has not caught up yet
  }
  // Recorded before the write: the watch event of this patch may reach onServiceUpdate before
  // the patch call returns here, and it must already read as the host's own write (else it
  // would queue a full sync, and a node joining meanwhile would get an ensure, not an update).
  std::string previous_rv;
  AnnotationWrite previous;
  cache_.update(key, [&](CachedService& c) {
    previous_rv = std::exchange(c.annotations_written_rv, rv);
    previous = std::exchange(c.annotations_written, changes);
  });
  // Through the status subresource, like the finalizer: metadata changes are kept there, and
  // the host needs no write access to Services themselves.
  auto r = context_.api.patch(kube::serviceStatusPath(svc.namespace_, svc.name),
                              kube::PatchType::Merge, kube::annotationsMergePatch(changes));
  if (!r.ok()) {
    cache_.update(key, [&](CachedService& c) {
      c.annotations_written_rv = std::move(previous_rv);
      c.annotations_written = std::move(previous);
    });
    if (r.status().isNotFound()) {
      return okStatus();
    }
    return wrapApi("failed to write the provider's annotations", r.status());
  }
  log::infoV(2, "Wrote the provider's annotations", {{"service", key}, {"changed", changes.size()}});
  return okStatus();
}

// ---- factory ---------------------------------------------------------------------------------

StatusOr<ControllerOrSkip> makeServiceController(ControllerContext& context) {
  const plugin::ProviderInfo& info = context.provider.info();
  if (!info.load_balancer.present) {
    return ControllerOrSkip(NotStarted{fmt::format(
        "the cloud provider {} does not support external load balancers (no ccm.loadbalancer/1 "
        "capability)",
        info.name)});
  }
  // A provider may declare the capability yet not implement it: ask for a name (no cloud
  // resource is touched) and believe an UNIMPLEMENTED answer.
  plugin::ServiceRef probe;
  probe.namespace_name = "kube-system";
  probe.name = "ccm-load-balancer-probe";
  probe.uid = "00000000-0000-0000-0000-000000000000";
  probe.type = "LoadBalancer";
  auto name = context.provider.getLoadBalancerName(context.options.cluster_name, probe);
  if (!name.ok() && name.status().code() == Code::Unimplemented) {
    return ControllerOrSkip(
        NotStarted{fmt::format("the cloud provider {} does not implement external load balancers "
                               "(GetLoadBalancerName answered {})",
                               info.name, name.status().toString())});
  }
  return ControllerOrSkip(std::make_unique<service::ServiceController>(context));
}

Status ServiceController::healthy() const {
  for (const WorkQueue* q : {service_queue_.get(), node_queue_.get()}) {
    if (q == nullptr) {
      continue;
    }
    if (Status s = q->progress(kStuckAfter); !s.ok()) {
      return s;
    }
  }
  return okStatus();
}

}  // namespace ccm::controllers::service
