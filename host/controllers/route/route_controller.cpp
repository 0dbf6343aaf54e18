// The route controller: cloud routes for the Nodes' pod CIDRs.
#include "host/controllers/route/route_controller.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "host/controllers/common/well_known.hpp"
#include "host/kube/api/kube_api.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "host/log/log.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::controllers::route {
namespace {

constexpr const char* kListKey = "list";
constexpr const char* kSyncKey = "sync";
constexpr int kConditionWorkers = 2;

std::string opKey(bool create, std::string_view node, std::string_view cidr_key) {
  return fmt::format("{}|{}|{}", create ? 'c' : 'd', node, cidr_key);
}

bool conditionMatches(const kube::Node& node, bool created) {
  std::optional<kube::NodeCondition> c = node.condition(keys::kNetworkUnavailable);
  if (!c) {
    return false;
  }
  return created ? (c->status == "False" && c->reason == "RouteCreated")
                 : (c->status == "True" && c->reason == "NoRouteCreated");
}

bool sameStrings(const kube::NodeList<std::string_view>& a,
                 const kube::NodeList<std::string_view>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

bool sameAddresses(const kube::Node& a, const kube::Node& b) {
  return std::equal(
      a.addresses().begin(), a.addresses().end(), b.addresses().begin(), b.addresses().end(),
      [](const auto& x, const auto& y) { return x.type == y.type && x.address == y.address; });
}

}  // namespace

RouteController::RouteController(const ControllerContext& context, std::vector<Cidr> cluster_cidrs)
    : context_(context),
      cluster_name_(context.options.cluster_name),
      cluster_cidrs_(std::move(cluster_cidrs)),
      period_(context.options.route_reconciliation_period.count() > 0
                  ? context.options.route_reconciliation_period
                  : std::chrono::milliseconds(10000)),
      recorder_(context.events.recorder(std::string(kComponent))),
      guard_(std::make_shared<HandlerGuard>()) {
  routes_queue_ = std::make_unique<WorkQueue>("Routes", nullptr, context.clock, &context.metrics);
  // Internal (no metrics): NetworkUnavailable writes, one key per Node.
  condition_queue_ = std::make_unique<WorkQueue>("route-conditions", nullptr, context.clock);
  uint32_t declared = context.provider.info().routes.max_concurrency;
  size_t limit = declared > 0 ? std::min<size_t>(kMaxInFlight, declared) : kMaxInFlight;
  pool_ = std::make_unique<CallPool>("route-call", limit);
  route_sync_total_ =
      context.metrics.counter("route_controller_route_sync_total",
                              "Number of route reconcile passes that listed the cloud's routes.",
                              {}, metrics::Stability::Alpha);
  full_pass_cost_ = std::make_unique<PassCost>(context.metrics, "route");
  guard_->self = this;
}

RouteController::~RouteController() {
  stop();
}

void RouteController::start() {
  if (started_ || stopped_) {
    return;
  }
  started_ = true;
  routes_queue_->add(kListKey);  // the first pass lists
  registerHandlers();
  threads_.emplace_back([this] { routeWorker(); });
  for (int i = 0; i < kConditionWorkers; ++i) {
    threads_.emplace_back([this, i] { conditionWorker(i); });
  }
  setControllerRunning(context_.metrics, kMetricName, true);
  std::string cidrs;
  for (const auto& c : cluster_cidrs_) {
    cidrs += (cidrs.empty() ? "" : ",") + c.toString();
  }
  log::info("Started the route controller",
            {{"clusterCIDRs", cidrs}, {"period", period_}, {"cluster", cluster_name_}});
}

void RouteController::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  {
    std::lock_guard lock(guard_->mu);
    guard_->self = nullptr;
  }
  routes_queue_->shutDown();
  condition_queue_->shutDown();
  for (auto& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
  threads_.clear();
  pool_->stop();
  if (started_) {
    setControllerRunning(context_.metrics, kMetricName, false);
    log::info("Stopped the route controller");
  }
}

// ---- handlers --------------------------------------------------------------------------------

void RouteController::registerHandlers() {
  std::call_once(handlers_once_, [this] {
    auto g = guard_;
    kube::EventHandlers<kube::Node> h;
    h.on_add = [g](const auto& n) {
      std::lock_guard lock(g->mu);
      if (g->self != nullptr) {
        g->self->onNodeAdd(n);
      }
    };
    h.on_update = [g](const auto& o, const auto& n) {
      std::lock_guard lock(g->mu);
      if (g->self != nullptr) {
        g->self->onNodeUpdate(o, n);
      }
    };
    h.on_delete = [g](const auto& n, bool) {
      std::lock_guard lock(g->mu);
      if (g->self != nullptr) {
        g->self->onNodeDelete(n);
      }
    };
    context_.nodes.addEventHandler(std::move(h));
  });
}

void RouteController::onNodeAdd(const std::shared_ptr<const kube::Node>&) {
  routes_queue_->add(kSyncKey);
}

void RouteController::onNodeUpdate(const std::shared_ptr<const kube::Node>& o,
                                   const std::shared_ptr<const kube::Node>& n) {
  if (o == n) {
    return;
  }
  if (o->podCidr() != n->podCidr() || !sameStrings(o->podCidrs(), n->podCidrs()) ||
      !sameAddresses(*o, *n)) {
    routes_queue_->add(kSyncKey);
  }
}

void RouteController::onNodeDelete(const std::shared_ptr<const kube::Node>& node) {
  {
    std::lock_guard lock(mu_);
    condition_wanted_.erase(std::string(node->name()));
    written_.erase(std::string(node->name()));
  }
  routes_queue_->add(kSyncKey);
}

// ---- the cloud view --------------------------------------------------------------------------

std::vector<plugin::Route> RouteController::knownRoutes() const {
  std::lock_guard lock(mu_);
  std::vector<plugin::Route> out;
  out.reserve(known_.size());
  for (const auto& [_, r] : known_) {
    out.push_back(r);
  }
  return out;
}

void RouteController::applyListingLocked(std::vector<plugin::Route> routes, uint64_t listed_at) {
  known_.clear();
  for (auto& r : routes) {
    RouteKey k = routeKey(r);
    known_.emplace(std::move(k), std::move(r));
  }
  // Our own calls that completed after the listing started may be missing from it (or still
  // in it): replay them on top.
  for (const auto& op : op_log_) {
    if (op.seq <= listed_at) {
      continue;
    }
    if (op.create) {
      known_[routeKey(op.route)] = op.route;
    } else {
      known_.erase(routeKey(op.route));
    }
  }
  std::erase_if(op_log_, [&](const Op& op) { return op.seq <= listed_at; });
  listed_ = true;
}

void RouteController::recordOpLocked(bool create, const plugin::Route& route) {
  op_log_.push_back(Op{++op_seq_, create, route});
  if (create) {
    known_[routeKey(route)] = route;
  } else {
    known_.erase(routeKey(route));
  }
}

bool RouteController::backingOffLocked(const std::string& op_key, Clock::MonoTime now,
                                       Clock::MonoTime* wake) const {
  auto it = failures_.find(op_key);
  if (it == failures_.end() || it->second.not_before <= now) {
    return false;
  }
  *wake = std::min(*wake, it->second.not_before);
  return true;
}

std::chrono::nanoseconds RouteController::failLocked(const std::string& op_key, const Status& st,
                                                     Clock::MonoTime now) {
  Failure& f = failures_[op_key];
  ++f.count;
  std::chrono::nanoseconds delay = kRetryBase * (1LL << std::min(f.count - 1, 20));
  delay = std::min<std::chrono::nanoseconds>(delay, kRetryMax);
  if (st.retryAfter() > delay) {
    delay = st.retryAfter();
  }
  f.not_before = now + delay;
  if (st.code() == Code::ResourceExhausted && st.retryAfter().count() > 0) {
    paused_until_ = std::max(paused_until_, now + st.retryAfter());
  }
  return delay;
}

NodeRouteState RouteController::stateOfLocked(const std::shared_ptr<const kube::Node>& node) const {
  NodeRouteState state;
  state.node = node;
  std::string name(node->name());
  for (const auto& cidr : podCidrsOf(*node)) {
    std::string key = canonicalCidr(cidr);
    if (std::find(state.cidr_keys.begin(), state.cidr_keys.end(), key) != state.cidr_keys.end()) {
      continue;
    }
    state.cidr_keys.push_back(key);
    auto it = known_.find({name, key});
    if (it == known_.end() ||
        (it->second.enable_node_addresses && !routeAddressesMatch(*node, it->second))) {
      state.missing.push_back(key);
    }
  }
  return state;
}

std::optional<bool> RouteController::routesCreatedLocked(const NodeRouteState& state) const {
  if (state.cidr_keys.empty()) {
    return false;  // routes point at it but it has no pod CIDRs (upstream's rule)
  }
  std::string name(state.node->name());
  for (const auto& key : state.missing) {
    if (creates_in_flight_.count({name, key}) > 0) {
      return std::nullopt;  // the answer is on its way
    }
    auto it = failures_.find(opKey(true, name, key));
    if (it == failures_.end() || it->second.count == 0) {
      return std::nullopt;  // not asked for yet (waiting for a delete, or paused)
    }
  }
  return state.missing.empty();
}

// ---- passes ----------------------------------------------------------------------------------

Status RouteController::reconcile(bool list) {
  bool need_list = false;
  uint64_t listed_at = 0;
  {
    std::lock_guard lock(mu_);
    need_list = list || !listed_;
    listed_at = op_seq_;
  }
  if (need_list) {
    if (route_sync_total_ != nullptr) {
      route_sync_total_->noLabels().inc();
    }
    auto routes = context_.provider.listRoutes(cluster_name_);
    if (!routes.ok()) {
      log::error("Couldn't reconcile node routes",
                 {{"err", "error listing routes: " + routes.status().toString()}});
      return Status(routes.status().code(), "error listing routes: " + routes.status().toString(),
                    routes.status().retryAfter());
    }
    std::lock_guard lock(mu_);
    applyListingLocked(std::move(*routes), listed_at);
  }

  auto nodes = context_.nodes.list();
  auto now = context_.clock.now();
  auto wake = Clock::MonoTime::max();
  std::vector<plugin::Route> deletes;
  std::vector<PlannedCreate> creates;
  std::vector<std::pair<std::shared_ptr<const kube::Node>, bool>> conditions;
  {
    // Planned and dispatched under one lock: a call completing in between would otherwise
    // leave the plan asking for a route that was just created.
    std::lock_guard lock(mu_);
    std::vector<ListedRoute> known;
    known.reserve(known_.size());
    for (const auto& [key, r] : known_) {
      known.push_back({key.second, &r});  // routeKey made the canonical destination
    }
    RoutePlan plan = planRoutes(nodes, known, cluster_cidrs_);
    bool paused = now < paused_until_;
    if (paused) {
      wake = paused_until_;
    }
    std::set<std::string> planned;
    for (const auto& d : plan.deletes) {
      planned.insert(opKey(false, d.target_node, canonicalCidr(d.destination_cidr)));
    }
    for (const auto& c : plan.creates) {
      planned.insert(opKey(true, c.route.target_node, c.cidr_key));
    }
    std::erase_if(failures_, [&](const auto& f) { return planned.count(f.first) == 0; });

    for (auto& d : plan.deletes) {
      std::string key = canonicalCidr(d.destination_cidr);
      if (cidrs_in_flight_.count(key) > 0 || paused ||
          backingOffLocked(opKey(false, d.target_node, key), now, &wake)) {
        continue;
      }
      ++cidrs_in_flight_[key];
      deletes.push_back(std::move(d));
    }
    for (auto& c : plan.creates) {
      // One call per destination at a time: a create waits for a delete of the same CIDR
      // (an update, or a CIDR moving between Nodes) and is never repeated while in flight.
      if (cidrs_in_flight_.count(c.cidr_key) > 0 || paused ||
          backingOffLocked(opKey(true, c.route.target_node, c.cidr_key), now, &wake)) {
        continue;
      }
      ++cidrs_in_flight_[c.cidr_key];
      creates_in_flight_.insert({c.route.target_node, c.cidr_key});
      creates.push_back(std::move(c));
    }
    for (const auto& [name, state] : plan.nodes) {
      if (auto created = routesCreatedLocked(state)) {
        conditions.emplace_back(state.node, *created);
      }
    }
  }
  if (!deletes.empty() || !creates.empty()) {
    log::infoV(2, "Reconciling routes",
               {{"creates", creates.size()}, {"deletes", deletes.size()}, {"listed", need_list}});
  }
  for (auto& d : deletes) {
    dispatchDelete(std::move(d));
  }
  for (auto& c : creates) {
    dispatchCreate(std::move(c));
  }
  for (const auto& [node, created] : conditions) {
    updateConditionFor(node, created);
  }
  if (wake != Clock::MonoTime::max()) {
    routes_queue_->addAfter(kSyncKey, wake - now);
  }
  return okStatus();
}

void RouteController::waitForCalls() const {
  pool_->waitIdle();
}

// ---- calls -----------------------------------------------------------------------------------

void RouteController::dispatchCreate(PlannedCreate create) {
  pool_->submit([this, c = std::move(create)] {
    auto started = context_.clock.now();
    Status st = context_.provider.createRoute(cluster_name_, c.node->uid(), c.route);
    onCreateDone(c, st, started);
  });
}

void RouteController::dispatchDelete(plugin::Route route) {
  pool_->submit([this, r = std::move(route)] {
    Status st = context_.provider.deleteRoute(cluster_name_, r);
    onDeleteDone(r, st);
  });
}

void RouteController::onCreateDone(const PlannedCreate& c, const Status& st,
                                   Clock::MonoTime started) {
  auto now = context_.clock.now();
  // ALREADY_EXISTS: our view was stale and the route is there; the next listing confirms.
  bool created = st.ok() || st.code() == Code::AlreadyExists;
  // Cancelled by the host (stopping, lost leadership): no failure to report or back off
  // from; the next pass asks again if we keep running.
  bool stopping = st.code() == Code::Cancelled;
  std::chrono::nanoseconds retry{0};
  const std::string& node = c.route.target_node;
  {
    std::lock_guard lock(mu_);
    auto it = cidrs_in_flight_.find(c.cidr_key);
    if (it != cidrs_in_flight_.end() && --it->second <= 0) {
      cidrs_in_flight_.erase(it);
    }
    creates_in_flight_.erase({node, c.cidr_key});
    if (created) {
      recordOpLocked(true, c.route);
      failures_.erase(opKey(true, node, c.cidr_key));
    } else if (!stopping) {
      retry = failLocked(opKey(true, node, c.cidr_key), st, now);
    }
  }
  if (stopping) {
    return;
  }
  if (created) {
    log::infoV(2, "Created route",
               {{"node", node}, {"cidr", c.route.destination_cidr}, {"duration", now - started}});
  } else {
    log::warning("Could not create route", {{"node", node},
                                            {"cidr", c.route.destination_cidr},
                                            {"err", st.toString()},
                                            {"retryIn", retry}});
    recorder_.eventf(kube::referenceTo(*c.node), kube::EventType::Warning, "FailedToCreateRoute",
                     "Could not create route {} {} for node {} after {}: {}", c.node->uid(),
                     c.route.destination_cidr, node,
                     log::Field::formatDuration(
                         std::chrono::duration_cast<std::chrono::microseconds>(now - started)),
                     st.toString());
    routes_queue_->addAfter(kSyncKey, retry);
  }
  checkNodeCondition(node);
}

void RouteController::onDeleteDone(const plugin::Route& route, const Status& st) {
  auto now = context_.clock.now();
  bool deleted = st.ok() || st.code() == Code::NotFound;
  bool stopping = st.code() == Code::Cancelled;
  std::string key = canonicalCidr(route.destination_cidr);
  std::chrono::nanoseconds retry{0};
  {
    std::lock_guard lock(mu_);
    auto it = cidrs_in_flight_.find(key);
    if (it != cidrs_in_flight_.end() && --it->second <= 0) {
      cidrs_in_flight_.erase(it);
    }
    if (deleted) {
      recordOpLocked(false, route);
      failures_.erase(opKey(false, route.target_node, key));
    } else if (!stopping) {
      retry = failLocked(opKey(false, route.target_node, key), st, now);
    }
  }
  if (stopping) {
    return;
  }
  // A route is known by its destination and target; the provider's name is logged only when
  // it gave one (not every cloud names its routes).
  std::string target = route.target_node.empty() ? std::string("(blackhole)") : route.target_node;
  if (deleted) {
    if (route.name.empty()) {
      log::info("Deleted route", {{"cidr", route.destination_cidr}, {"node", target}});
    } else {
      log::info("Deleted route",
                {{"cidr", route.destination_cidr}, {"node", target}, {"name", route.name}});
    }
    routes_queue_->add(kSyncKey);  // a create may have waited for this destination
  } else {
    log::warning("Could not delete route", {{"cidr", route.destination_cidr},
                                            {"node", target},
                                            {"name", route.name.empty() ? "(none)" : route.name},
                                            {"err", st.toString()},
                                            {"retryIn", retry}});
    routes_queue_->addAfter(kSyncKey, retry);
  }
  if (!route.target_node.empty()) {
    checkNodeCondition(route.target_node);
  }
}

// ---- NetworkUnavailable ----------------------------------------------------------------------

void RouteController::checkNodeCondition(const std::string& name) {
  auto node = context_.nodes.get(name);
  if (!node) {
    return;
  }
  std::optional<bool> created;
  {
    std::lock_guard lock(mu_);
    NodeRouteState state = stateOfLocked(node);
    if (state.cidr_keys.empty()) {
      auto it = known_.lower_bound({name, ""});
      if (it == known_.end() || it->first.first != name) {
        return;  // no pod CIDRs and no routes: not ours to judge
      }
    }
    created = routesCreatedLocked(state);
  }
  if (created) {
    updateConditionFor(node, *created);
  }
}

void RouteController::updateConditionFor(const std::shared_ptr<const kube::Node>& node,
                                         bool created) {
  std::string name(node->name());
  {
    std::lock_guard lock(mu_);
    condition_wanted_[name] = created;
  }
  if (!conditionMatches(*node, created)) {
    condition_queue_->add(name);
  }
}

bool RouteController::processNextConditionItem() {
  auto key = condition_queue_->get();
  if (!key) {
    return false;
  }
  bool created = false;
  Written written;
  {
    std::lock_guard lock(mu_);
    auto it = condition_wanted_.find(*key);
    if (it == condition_wanted_.end()) {
      condition_queue_->done(*key);
      return true;
    }
    created = it->second;
    auto w = written_.find(*key);
    if (w != written_.end()) {
      written = w->second;
    }
  }
  auto node = context_.nodes.get(*key);
  if (!node || conditionMatches(*node, created) ||
      (written.resource_version == node->resourceVersion() && written.created == created)) {
    // Gone, already right, or written by us and the cache has not caught up yet.
    condition_queue_->forget(*key);
    condition_queue_->done(*key);
    return true;
  }
  kube::ConditionSpec spec;
  spec.type = std::string(keys::kNetworkUnavailable);
  spec.status = created ? "False" : "True";
  spec.reason = created ? "RouteCreated" : "NoRouteCreated";
  spec.message =
      created ? "RouteController created a route" : "RouteController failed to create a route";
  int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(context_.clock.wallNow().time_since_epoch())
          .count();
  spec.last_heartbeat_time = now;
  // Upstream stamps lastTransitionTime on every write; keep it when the status stays.
  std::optional<kube::NodeCondition> current = node->condition(keys::kNetworkUnavailable);
  spec.last_transition_time =
      (current && current->status == spec.status && current->last_transition_time != 0)
          ? current->last_transition_time
          : now;
  auto r = context_.api.patch(kube::nodeStatusPath(node->name()), kube::PatchType::Strategic,
                              kube::nodeConditionsPatch({spec}));
  if (r.ok() || r.status().isNotFound()) {
    std::lock_guard lock(mu_);
    written_[*key] = Written{std::string(node->resourceVersion()), created};
    condition_queue_->forget(*key);
  } else {
    log::error("Error updating the NetworkUnavailable condition",
               {{"node", *key}, {"err", r.status().toString()}});
    condition_queue_->addRateLimited(*key);
  }
  condition_queue_->done(*key);
  return true;
}

// ---- threads ---------------------------------------------------------------------------------

bool RouteController::processNextRouteItem() {
  auto key = routes_queue_->get();
  if (!key) {
    return false;
  }
  bool list = *key == kListKey;
  auto start = context_.clock.now();
  {
    // The cost of a full pass (planning; the calls it dispatches run on the call pool).
    std::optional<PassTimer> pass;
    if (list) {
      pass.emplace(*full_pass_cost_);
    }
    (void)reconcile(list);  // failures are logged; the next pass retries
    if (pass) {
      pass->finish(context_.nodes.size());
    }
  }
  if (list) {
    // Non-sliding: the next full pass is due one period after this one started.
    auto next = std::chrono::duration_cast<std::chrono::nanoseconds>(
        period_ - (context_.clock.now() - start));
    routes_queue_->addAfter(kListKey, std::max(next, std::chrono::nanoseconds(0)));
  }
  routes_queue_->forget(*key);
  routes_queue_->done(*key);
  return true;
}

void RouteController::routeWorker() {
  runtime::nameThisThread("route-sync");
  while (processNextRouteItem()) {
  }
}

void RouteController::conditionWorker(int index) {
  runtime::nameThisThread(fmt::format("route-cond-{}", index));
  while (processNextConditionItem()) {
  }
}

// ---- factory ---------------------------------------------------------------------------------

StatusOr<ControllerOrSkip> makeRouteController(ControllerContext& context) {
  if (!context.options.configure_cloud_routes) {
    return ControllerOrSkip(NotStarted{"--configure-cloud-routes is false"});
  }
  const plugin::ProviderInfo& info = context.provider.info();
  if (!info.routes.present) {
    return ControllerOrSkip(NotStarted{fmt::format(
        "the cloud provider {} does not support routes (no ccm.routes/1 capability)", info.name)});
  }
  auto cidrs = parseClusterCidrs(context.options.cluster_cidr);
  if (!cidrs.ok()) {
    return cidrs.status().withPrefix(
        "the route controller needs the cluster's pod CIDR (or disable it with "
        "--configure-cloud-routes=false)");
  }
  return ControllerOrSkip(
      std::make_unique<route::RouteController>(context, std::move(cidrs).value()));
}

Status RouteController::healthy() const {
  for (const WorkQueue* q : {routes_queue_.get(), condition_queue_.get()}) {
    if (q == nullptr) {
      continue;
    }
    if (Status s = q->progress(kStuckAfter); !s.ok()) {
      return s;
    }
  }
  return okStatus();
}

}  // namespace ccm::controllers::route
