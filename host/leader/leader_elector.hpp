// LeaderElector: leader election over a coordination.k8s.io/v1 Lease, with client-go's
// algorithm and cloud-controller-manager's defaults (15 s lease, 10 s renew deadline, 2 s
// retry period, lease kube-system/cloud-controller-manager, identity <hostname>_<uuid>).
//
//  - Candidates try every retry period (x up to 2.2 with jitter) to create or take over the
//    Lease. A Lease held by someone else is respected while it keeps changing: it is taken
//    over only when its spec has not changed for leaseDurationSeconds as measured by this
//    process's monotonic clock (never by comparing the server's timestamps).
//  - The leader renews every retry period. Each renewal must succeed within renew deadline
//    of the start of the last successful one (requests are cut off at that deadline);
//    otherwise leadership is lost: on_stopped_leading runs and run() returns ABORTED
//    ("leaderelection lost"); the process should exit non-zero, as upstream does. Since a
//    candidate waits a full lease duration (> renew deadline) after the last change it saw,
//    two leaders never overlap, however slow the API server.
//  - On stop (SIGTERM), a leader releases the Lease (empty holder, 1 s duration) so another
//    replica takes over within about one retry period.
//  - check() is the /healthz probe: it fails only when this process is the leader and its
//    last successful renewal is older than lease duration + 20 s.
//
// THREAD: run() on one thread (it blocks); isLeader()/leader()/check() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>

#include "host/kube/write/event_recorder.hpp"
#include "host/leader/lease_lock.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/status.hpp"

namespace ccm::kube {
class Random;
}

namespace ccm::leader {

// Filled by host/options; defaults are cloud-controller-manager's.
struct LeaderElectionOptions {
  bool leader_elect = true;                                // --leader-elect
  std::chrono::milliseconds lease_duration{15000};         // --leader-elect-lease-duration
  std::chrono::milliseconds renew_deadline{10000};         // --leader-elect-renew-deadline
  std::chrono::milliseconds retry_period{2000};            // --leader-elect-retry-period
  std::string resource_lock = "leases";                    // --leader-elect-resource-lock
  std::string resource_name = "cloud-controller-manager";  // --leader-elect-resource-name
  std::string resource_namespace = "kube-system";          // --leader-elect-resource-namespace
  std::string identity;                                    // empty: defaultIdentity()
  bool release_on_cancel = true;
};

// Checks lease > renew deadline > 1.2 x retry period > 0 and resource_lock == "leases".
Status validate(const LeaderElectionOptions& options);

// "<hostname>_<random UUID>"
std::string defaultIdentity();

struct LeaderCallbacks {
  // Runs on the run() thread when leadership is acquired; must return quickly (start the
  // controllers elsewhere).
  std::function<void()> on_started_leading;
  // Runs on the run() thread when leadership ends (lost, or stopped), before the lease is
  // released: stop the controllers here (it may block until they have stopped).
  std::function<void()> on_stopped_leading;
  // The observed leader changed (may be this process).
  std::function<void(const std::string& identity)> on_new_leader;
};

class LeaderElector {
 public:
  // `recorder` (optional) receives "<id> became leader" / "<id> stopped leading" events.
  LeaderElector(LeaseLock& lock, LeaderElectionOptions options, LeaderCallbacks callbacks,
                Clock& clock = Clock::real(), kube::EventRecorder recorder = {});

  // Acquires, then renews until stop (releases; returns OK) or loss (returns ABORTED).
  Status run(std::stop_token stop);

  bool isLeader() const;
  // Leading, and the last successful renewal began less than renew deadline ago by this
  // process's monotonic clock: the window in which no other replica can have taken over
  // (they wait a full lease duration from the last change they saw). False at once after a
  // pause (SIGSTOP, a frozen VM) longer than that, before run() has noticed. Fences writes.
  bool leadingNow() const;
  // The holder this process last observed ("" when none).
  std::string leader() const;
  const std::string& identity() const { return options_.identity; }
  // Healthy unless leading with the last renewal older than lease duration + tolerance.
  Status check(std::chrono::milliseconds tolerance = std::chrono::seconds(20)) const;

  // One acquire-or-renew attempt (exposed for tests). `deadline` bounds the requests.
  bool tryAcquireOrRenew(Clock::MonoTime deadline);
  // Gives the Lease up if held (exposed for tests).
  bool release();

  void setRandomForTest(kube::Random* random) { random_ = random; }

 private:
  void setObserved(const LeaseRecord& record, Clock::MonoTime when);
  // A write started at `sent` succeeded: counts it if its answer came before `deadline`.
  bool commit(Clock::MonoTime sent, Clock::MonoTime deadline);
  std::chrono::milliseconds timeoutUntil(Clock::MonoTime deadline) const;
  void emit(const std::string& what);

  LeaseLock& lock_;
  LeaderElectionOptions options_;
  LeaderCallbacks callbacks_;
  Clock& clock_;
  kube::EventRecorder recorder_;
  kube::Random* random_ = nullptr;

  mutable std::mutex mu_;
  LeaseRecord observed_;               // guarded by mu_
  Clock::MonoTime observed_time_{};    // guarded by mu_; when observed_ last changed
  Clock::MonoTime last_renew_sent_{};  // guarded by mu_; start of the last successful write
  std::string reported_leader_;        // run() thread only
  std::atomic<bool> leading_{false};
};

}  // namespace ccm::leader
