// The route controller (node-route-controller, alias "route"): one cloud route per pod CIDR of
// every Node, through the provider's ccm.routes/1 capability, and the Nodes'
// NetworkUnavailable condition (False/RouteCreated once all of a Node's routes exist,
// True/NoRouteCreated when one could not be created).
//
// Passes: a full pass (ListRoutes, diff, calls) every --route-reconciliation-period, measured
// from the start of the previous one; an incremental pass (the same diff against the
// controller's view of the cloud, no ListRoutes) whenever a Node is added or deleted or its
// pod CIDRs or addresses change, and when a call's completion unblocks work. A pass never
// waits for its calls: they run on a pool of at most 200 (or the provider's declared limit),
// and a destination CIDR with a call in flight is never asked for again until that call
// returns — so there are no "already exists" storms, and a new Node gets its route at once
// even while a long pass's calls are still running.
//
// The view of the cloud is the last ListRoutes answer plus the controller's own successful
// calls that completed after that listing started, so a listing taken while creates were in
// flight does not make them look missing.
//
// Failed calls are retried with a per-route back-off (2 s doubling to 5 min, or the provider's
// retry-after when longer); a RESOURCE_EXHAUSTED answer with a retry-after pauses all new calls
// until then.
//
// Docs: docs/controllers/route.md.
// THREAD: start()/stop() from the owner's thread; test hooks from a test thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "host/controllers/common/cidr.hpp"
#include "host/controllers/common/controller.hpp"
#include "host/controllers/common/pass_cost.hpp"
#include "host/controllers/route/call_pool.hpp"
#include "host/controllers/route/route_planner.hpp"
#include "host/runtime/work_queue.hpp"

namespace ccm::controllers::route {

// Not started without --configure-cloud-routes or without ccm.routes/1; an error Status for an
// invalid --cluster-cidr.
StatusOr<ControllerOrSkip> makeRouteController(ControllerContext& context);

class RouteController final : public Controller {
 public:
  static constexpr std::string_view kName = "node-route-controller";
  static constexpr std::string_view kMetricName = "route";
  static constexpr std::string_view kComponent = "route_controller";
  static constexpr size_t kMaxInFlight = 200;
  static constexpr std::chrono::seconds kRetryBase{2};
  static constexpr std::chrono::seconds kRetryMax{300};

  RouteController(const ControllerContext& context, std::vector<Cidr> cluster_cidrs);
  ~RouteController() override;

  std::string_view name() const override { return kName; }
  void start() override;
  void stop() override;
  // Fails when a queue's workers are stuck or gone.
  Status healthy() const override;

  // ---- Seams for tests (start() runs these on its threads) ----
  void registerHandlers();
  // One pass. list: ask the provider for its routes first (always done for the first pass).
  // Dispatches calls and returns without waiting for them. Errors: the listing failed.
  Status reconcile(bool list);
  // One route worker iteration (blocking): a full pass for "list" (then the next one is
  // scheduled a period after this one started), an incremental one for "sync". False once
  // shut down.
  bool processNextRouteItem();
  // Blocks until no provider call is queued or running.
  void waitForCalls() const;
  size_t callsPending() const { return pool_->pending(); }
  // One condition worker iteration (blocking); false once shut down.
  bool processNextConditionItem();
  WorkQueue& routesQueue() { return *routes_queue_; }
  WorkQueue& conditionQueue() { return *condition_queue_; }
  size_t peakCallsInFlight() const { return pool_->peakRunning(); }
  // The controller's view of the cloud's routes.
  std::vector<plugin::Route> knownRoutes() const;

 private:
  struct Failure {
    int count = 0;
    Clock::MonoTime not_before{};
  };
  struct Written {
    std::string resource_version;
    bool created = false;
  };
  struct HandlerGuard {
    std::mutex mu;
    RouteController* self = nullptr;  // guarded by mu; null once stopped
  };
  struct Op {
    uint64_t seq = 0;
    bool create = false;
    plugin::Route route;
  };

  void onNodeAdd(const std::shared_ptr<const kube::Node>& node);
  void onNodeUpdate(const std::shared_ptr<const kube::Node>& old_node,
                    const std::shared_ptr<const kube::Node>& new_node);
  void onNodeDelete(const std::shared_ptr<const kube::Node>& node);

  void applyListingLocked(std::vector<plugin::Route> routes, uint64_t listed_at);
  void recordOpLocked(bool create, const plugin::Route& route);
  // Where a Node stands; nullopt = leave its condition alone for now.
  std::optional<bool> routesCreatedLocked(const NodeRouteState& state) const;
  NodeRouteState stateOfLocked(const std::shared_ptr<const kube::Node>& node) const;
  bool backingOffLocked(const std::string& op_key, Clock::MonoTime now,
                        Clock::MonoTime* wake) const;
  std::chrono::nanoseconds failLocked(const std::string& op_key, const Status& st,
                                      Clock::MonoTime now);

  void dispatchCreate(PlannedCreate create);
  void dispatchDelete(plugin::Route route);
  void onCreateDone(const PlannedCreate& create, const Status& st, Clock::MonoTime started);
  void onDeleteDone(const plugin::Route& route, const Status& st);
  // Queues a NetworkUnavailable write for the node when its condition is not what it should be.
  void updateConditionFor(const std::shared_ptr<const kube::Node>& node, bool created);
  void checkNodeCondition(const std::string& name);

  void routeWorker();
  void conditionWorker(int index);

  ControllerContext context_;  // a copy: a bundle of references to the host's objects
  const std::string cluster_name_;
  const std::vector<Cidr> cluster_cidrs_;
  const std::chrono::milliseconds period_;
  kube::EventRecorder recorder_;

  std::unique_ptr<WorkQueue> routes_queue_;     // keys "list" and "sync"
  std::unique_ptr<WorkQueue> condition_queue_;  // node names
  std::unique_ptr<CallPool> pool_;

  mutable std::mutex mu_;
  bool listed_ = false;                                     // guarded by mu_
  std::map<RouteKey, plugin::Route> known_;                 // guarded by mu_
  uint64_t op_seq_ = 0;                                     // guarded by mu_
  std::vector<Op> op_log_;                                  // guarded by mu_
  std::map<std::string, int> cidrs_in_flight_;              // guarded by mu_; canonical CIDR
  std::set<RouteKey> creates_in_flight_;                    // guarded by mu_
  std::unordered_map<std::string, Failure> failures_;       // guarded by mu_; op key
  Clock::MonoTime paused_until_{};                          // guarded by mu_
  std::unordered_map<std::string, bool> condition_wanted_;  // guarded by mu_; node -> created
  std::unordered_map<std::string, Written> written_;        // guarded by mu_

  metrics::Family<metrics::Counter>* route_sync_total_ = nullptr;
  std::unique_ptr<PassCost> full_pass_cost_;  // controller="route": passes that list

  std::shared_ptr<HandlerGuard> guard_;
  std::once_flag handlers_once_;
  std::vector<std::jthread> threads_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace ccm::controllers::route
