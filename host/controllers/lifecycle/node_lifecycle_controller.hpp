// The cloud node lifecycle controller (cloud-node-lifecycle-controller, alias
// cloud-node-lifecycle): every --node-monitor-period it checks nodes that are not Ready
// against the provider, taints shut-down machines and deletes nodes whose machine is gone.
//
// Safer than upstream, which deletes a NotReady node on the first "does not exist" and has
// deleted whole clusters on a bad cloud answer:
//   - only NOT_FOUND counts; an error, a timeout or UNKNOWN never leads to a deletion and
//     resets the count;
//   - a deletion needs NOT_FOUND observed twice, at least one monitor period apart;
//   - deletions are rate-limited per zone with the eviction semantics of the Kubernetes node
//     documentation: --node-eviction-rate in healthy zones; in a zone where at least
//     --unhealthy-zone-threshold of the nodes (and more than two) are NotReady,
//     --secondary-node-eviction-rate if the zone has more than --large-cluster-size-threshold
//     nodes, else none; a zone with no Ready node at all uses the normal rate, unless every
//     zone is in that state — then nothing is deleted (that is a partition between the API
//     server and the nodes, not a cloud event);
//   - a node is deleted with a UID precondition, so a node re-registered under the same name
//     is never removed by mistake.
// Confirmed deletions a zone's budget does not allow at once wait in that zone's queue (oldest
// first) and are made as its token bucket refills between monitor passes — like upstream's
// eviction queues, which are processed every 100 ms — so a zone deletes at its configured rate,
// not at most one node per monitor period. A queued node is deleted only if the cache still
// has it (same UID) and it is still not Ready; each pass rebuilds the queues.
// The shutdown taint (node.cloudprovider.kubernetes.io/shutdown:NoSchedule) is added to
// NotReady nodes whose machine is shut down and removed when the node is Ready again.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "host/controllers/common/controller.hpp"
#include "host/controllers/common/pass_cost.hpp"

namespace ccm::controllers::lifecycle {

enum class ZoneState { Normal, PartialDisruption, FullDisruption };
std::string_view zoneStateName(ZoneState s);

// Upstream's zone classification from ready/not-ready counts.
ZoneState computeZoneState(int ready, int not_ready, double unhealthy_threshold);

// Why a confirmed deletion waits (ccm_node_deletions_deferred_total{reason} and the log):
// the zone's budget is spent (rate_limit), the zone is partially disrupted and deletes at
// the secondary rate or not at all (partial_disruption), or every zone is fully disrupted
// (partition).
enum class DeferralReason { RateLimit, PartialDisruption, Partition };
DeferralReason deferralReason(ZoneState state, bool all_fully_disrupted);
std::string_view deferralReasonName(DeferralReason reason);
std::string_view deferralMessage(DeferralReason reason);

class NodeLifecycleController final : public Controller {
 public:
  explicit NodeLifecycleController(ControllerContext& context);
  ~NodeLifecycleController() override;

  std::string_view name() const override { return "cloud-node-lifecycle-controller"; }
  void start() override;
  void stop() override;
  // Fails when the monitor loop has not finished a pass for kStuckAfter plus a period.
  Status healthy() const override;

  // One monitor pass (exposed for tests).
  void monitorNodes(std::stop_token stop);
  // Deletes queued nodes the zones' budgets allow now; returns how long until the next token
  // of a zone with queued nodes (nullopt: nothing queued that a token could release). Called
  // by the monitor thread between passes (exposed for tests).
  std::optional<std::chrono::nanoseconds> deleteQueued();
  // Nodes waiting for their zone's budget (exposed for tests).
  size_t queuedForTest() const;
  // Nodes the last pass handed to its parallel part (not Ready, or Ready with the shutdown
  // taint to remove); every other node costs a pass only its count in its zone (for tests).
  size_t checkedLastPassForTest() const { return checked_last_pass_.load(); }

  struct ZoneStatus {
    ZoneState state = ZoneState::Normal;
    int size = 0;
    int not_ready = 0;
    double deletion_rate = 0;  // nodes per second
  };
  std::map<std::string, ZoneStatus> zonesForTest() const;

 private:
  struct Bucket {
    double rate = 0;
    double tokens = 1;
    Clock::MonoTime at{};
  };
  struct Observation {
    Clock::MonoTime first_not_found{};
    bool seen = false;
  };
  // Lets the maps keyed by std::string be searched with a string_view (no copy).
  struct ViewHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  void loop(std::stop_token stop);
  void setShutdownTaint(const kube::Node& node, bool present);
  bool takeToken(const std::string& zone, Clock::MonoTime now);
  void deleteNode(const std::shared_ptr<const kube::Node>& node);
  static std::string_view zoneOf(const kube::Node& node);
  // The zone as budgets and states are kept: zoneOf, or with several providers (a hybrid
  // cluster) "<owning provider's name>|<zone>" ("|<zone>" while no provider is known to own
  // the node), so each provider's zones are its own.
  std::string zoneKey(const std::shared_ptr<const kube::Node>& node) const;
  // The provider part of a zoneKey ("" with one provider).
  std::string_view providerOfZone(std::string_view zone_key) const;

  ControllerContext& ctx_;
  bool per_provider_zones_ = false;  // several --cloud-provider
  kube::EventRecorder recorder_;
  PassCost monitor_cost_;  // controller="cloud-node-lifecycle"
  std::jthread thread_;
  // When the monitor loop last started or finished a pass (clock ticks; 0 before start).
  std::atomic<Clock::MonoTime::rep> heartbeat_{0};
  std::atomic<size_t> checked_last_pass_{0};

  mutable std::mutex mu_;
  // By node UID, only for nodes whose instance the last pass found missing; guarded by mu_.
  std::unordered_map<std::string, Observation, ViewHash, std::equal_to<>> observations_;
  std::map<std::string, Bucket> buckets_;                       // by zone; guarded by mu_
  std::map<std::string, ZoneStatus> zones_;                     // guarded by mu_
  // Confirmed deletions waiting for their zone's budget, oldest first; guarded by mu_.
  std::map<std::string, std::deque<std::shared_ptr<const kube::Node>>> queued_;
  bool started_ = false;                                        // guarded by mu_
};

StatusOr<ControllerOrSkip> makeNodeLifecycleController(ControllerContext& context);

}  // namespace ccm::controllers::lifecycle
