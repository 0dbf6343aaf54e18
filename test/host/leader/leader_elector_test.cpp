// LeaderElector: the acquire/renew/release steps on a FakeClock, the health check, options,
// and whole elections between threads sharing an in-memory Lease (with a slow and a failing
// "API server").
#include "host/leader/leader_elector.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <regex>
#include <thread>

#include "host/kube/api/retry.hpp"
#include "host/leader/lease_lock.hpp"
#include "test/support/wait.hpp"

namespace ccm::leader {
namespace {

using namespace std::chrono_literals;
using ccm::testing::waitUntil;
using kube::ApiResult;
using kube::ApiStatus;
using kube::Reason;

// One Lease in memory with optimistic concurrency; can be made slow or unavailable.
class MemoryLease {
 public:
  ApiResult<LeaseRecord> get() {
    std::lock_guard lock(mu_);
    if (down_)
      return ApiStatus::transport("connection refused");
    if (!exists_)
      return ApiStatus(404, Reason::NotFound, "leases \"l\" not found");
    return stored_;
  }
  ApiResult<LeaseRecord> create(const LeaseRecord& r) {
    std::lock_guard lock(mu_);
    if (down_)
      return ApiStatus::transport("connection refused");
    if (exists_)
      return ApiStatus(409, Reason::AlreadyExists, "exists");
    exists_ = true;
    return store(r);
  }
  ApiResult<LeaseRecord> update(const LeaseRecord& r) {
    std::unique_lock lock(mu_);
    if (down_)
      return ApiStatus::transport("connection refused");
    if (!exists_)
      return ApiStatus(404, Reason::NotFound, "gone");
    if (r.resource_version != stored_.resource_version) {
      return ApiStatus(409, Reason::Conflict, "the object has been modified");
    }
    LeaseRecord out = store(r);
    ++writes_;
    auto delay = response_delay_;
    lock.unlock();
    // The write is applied; the answer is slow to come back.
    std::this_thread::sleep_for(delay);
    return out;
  }
  void setDown(bool down) {
    std::lock_guard lock(mu_);
    down_ = down;
  }
  void setResponseDelay(std::chrono::milliseconds d) {
    std::lock_guard lock(mu_);
    response_delay_ = d;
  }
  LeaseRecord stored() {
    std::lock_guard lock(mu_);
    return stored_;
  }
  int writes() {
    std::lock_guard lock(mu_);
    return writes_;
  }

 private:
  LeaseRecord store(const LeaseRecord& r) {
    stored_ = r;
    stored_.resource_version = std::to_string(++rv_);
    stored_.spec_fingerprint =
        r.holder_identity + fmt::format("|{}", r.lease_duration_seconds) +
        fmt::format("|{}", r.lease_transitions) + "|" +
        std::to_string(r.renew_time ? r.renew_time->time_since_epoch().count() : 0);
    return stored_;
  }
  std::mutex mu_;
  bool exists_ = false;
  bool down_ = false;
  LeaseRecord stored_;
  int64_t rv_ = 0;
  int writes_ = 0;
  std::chrono::milliseconds response_delay_{0};
};

class MemoryLock final : public LeaseLock {
 public:
  explicit MemoryLock(MemoryLease& lease) : lease_(lease) {}
  ApiResult<LeaseRecord> get(std::chrono::milliseconds) override { return lease_.get(); }
  ApiResult<LeaseRecord> create(const LeaseRecord& r, std::chrono::milliseconds) override {
    return lease_.create(r);
  }
  ApiResult<LeaseRecord> update(const LeaseRecord& r, std::chrono::milliseconds) override {
    return lease_.update(r);
  }
  std::string describe() const override { return "kube-system/l"; }

 private:
  MemoryLease& lease_;
};

LeaderElectionOptions options(const std::string& id) {
  LeaderElectionOptions o;
  o.identity = id;
  return o;
}

}  // namespace

TEST_CASE("defaults are cloud-controller-manager's and are validated") {
  LeaderElectionOptions o;
  CHECK(o.leader_elect);
  CHECK(o.lease_duration == 15s);
  CHECK(o.renew_deadline == 10s);
  CHECK(o.retry_period == 2s);
  CHECK(o.resource_name == "cloud-controller-manager");
  CHECK(o.resource_namespace == "kube-system");
  CHECK(o.resource_lock == "leases");
  CHECK(validate(o).ok());
  LeaderElectionOptions bad = o;
  bad.renew_deadline = 15s;
  CHECK_FALSE(validate(bad).ok());
  bad = o;
  bad.retry_period = 9s;
  CHECK_FALSE(validate(bad).ok());
  bad = o;
  bad.resource_lock = "endpoints";
  CHECK(validate(bad).message() == "resourceLock value must be \"leases\"");
  CHECK(std::regex_match(
      defaultIdentity(),
      std::regex(".+_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
}

TEST_CASE("acquire, renew (keeping acquireTime), respect another holder, take over on expiry") {
  FakeClock clock;
  MemoryLease lease;
  MemoryLock lock_a(lease), lock_b(lease);
  LeaderElector a(lock_a, options("a"), {}, clock);
  LeaderElector b(lock_b, options("b"), {}, clock);
  auto far = [&clock] { return clock.now() + 10s; };

  REQUIRE(a.tryAcquireOrRenew(far()));
  LeaseRecord r = lease.stored();
  CHECK(r.holder_identity == "a");
  CHECK(r.lease_duration_seconds == 15);
  CHECK(r.lease_transitions == 0);
  auto acquired = r.acquire_time;

  CHECK_FALSE(b.tryAcquireOrRenew(far()));
  CHECK(b.leader() == "a");
  clock.advance(2s);
  REQUIRE(a.tryAcquireOrRenew(far()));  // fast path: one update, no read
  CHECK(lease.stored().acquire_time == acquired);
  CHECK(lease.stored().renew_time > acquired);
  // b keeps seeing the lease change, so it never takes over.
  for (int i = 0; i < 10; ++i) {
    clock.advance(5s);
    REQUIRE(a.tryAcquireOrRenew(far()));
    CHECK_FALSE(b.tryAcquireOrRenew(far()));
  }
  // a goes silent: b takes over only once the lease has not changed for 15 s (its clock).
  CHECK_FALSE(b.tryAcquireOrRenew(far()));
  clock.advance(14s);
  CHECK_FALSE(b.tryAcquireOrRenew(far()));
  clock.advance(1s + 1ms);
  REQUIRE(b.tryAcquireOrRenew(far()));
  r = lease.stored();
  CHECK(r.holder_identity == "b");
  CHECK(r.lease_transitions == 1);
  // a's cached version is stale: its renewal fails and it sees b.
  CHECK_FALSE(a.tryAcquireOrRenew(far()));
  CHECK(a.leader() == "b");
}

TEST_CASE("a released lease is taken at once") {
  FakeClock clock;
  MemoryLease lease;
  MemoryLock lock_a(lease), lock_b(lease);
  LeaderElector a(lock_a, options("a"), {}, clock);
  LeaderElector b(lock_b, options("b"), {}, clock);
  REQUIRE(a.tryAcquireOrRenew(clock.now() + 10s));
  CHECK_FALSE(b.tryAcquireOrRenew(clock.now() + 10s));
  REQUIRE(a.release());
  CHECK(lease.stored().holder_identity.empty());
  CHECK(lease.stored().lease_duration_seconds == 1);
  REQUIRE(b.tryAcquireOrRenew(clock.now() + 10s));
  CHECK(lease.stored().holder_identity == "b");
  CHECK(lease.stored().lease_transitions == 1);
}

TEST_CASE("the health check fails only for a leader whose renewals stopped") {
  FakeClock clock;
  MemoryLease lease;
  MemoryLock lock(lease);
  std::atomic<bool> started{false};
  LeaderCallbacks cb;
  cb.on_started_leading = [&] { started = true; };
  LeaderElectionOptions o = options("a");
  o.retry_period = 3600s;  // the run loop renews once, then sleeps
  o.renew_deadline = 7200s;
  o.lease_duration = 7300s;
  LeaderElector a(lock, o, cb, clock);
  CHECK(a.check().ok());  // not leader
  std::stop_source stop;
  std::thread t([&] { (void)a.run(stop.get_token()); });
  REQUIRE(waitUntil([&] { return started.load(); }));
  CHECK(a.isLeader());
  CHECK(a.check().ok());
  clock.advance(7300s + 20s);
  CHECK(a.check().ok());
  clock.advance(1s);
  CHECK_FALSE(a.check().ok());
  CHECK(a.check().message() ==
        "failed election to renew leadership on lease cloud-controller-manager");
  stop.request_stop();
  t.join();
  CHECK_FALSE(a.isLeader());
  CHECK(lease.stored().holder_identity.empty());  // released on stop
}

namespace {

// Runs electors on threads with real time and records who leads when.
struct Election {
  Election(MemoryLease& lease, int n, LeaderElectionOptions base, bool restart_lost = false)
      : restart(restart_lost) {
    for (int i = 0; i < n; ++i) {
      locks.push_back(std::make_unique<MemoryLock>(lease));
      LeaderElectionOptions o = base;
      o.identity = fmt::format("p{}", i);
      LeaderCallbacks cb;
      cb.on_started_leading = [this, i] { mark(i, true); };
      cb.on_stopped_leading = [this, i] { mark(i, false); };
      electors.push_back(std::make_unique<LeaderElector>(*locks.back(), o, cb));
      stops.emplace_back();
      results.push_back(okStatus());
    }
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([this, i] {
        // Like a supervisor restarting a process that lost its lease.
        while (!stops[i].stop_requested()) {
          results[i] = electors[i]->run(stops[i].get_token());
          if (!results[i].ok()) {
            std::lock_guard lock(mu);
            ++losses;
          }
          if (!restart)
            break;
        }
      });
    }
  }
  ~Election() {
    for (auto& s : stops)
      s.request_stop();
    for (auto& t : threads)
      t.join();
  }
  void mark(int i, bool leading) {
    std::lock_guard lock(mu);
    if (leading) {
      ++leaders;
      max_leaders = std::max(max_leaders, leaders);
      current = i;
      ++acquisitions;
    } else {
      --leaders;
      if (current == i)
        current = -1;
    }
  }
  int leaderIndex() {
    std::lock_guard lock(mu);
    return current;
  }
  bool waitLeader(int not_this = -1) {
    return waitUntil([&] {
      int l = leaderIndex();
      return l >= 0 && l != not_this;
    });
  }
  std::vector<std::unique_ptr<MemoryLock>> locks;
  std::vector<std::unique_ptr<LeaderElector>> electors;
  std::vector<std::stop_source> stops;
  std::vector<Status> results;
  std::mutex mu;
  std::vector<std::thread> threads;
  int leaders = 0, max_leaders = 0, current = -1, acquisitions = 0, losses = 0;
  bool restart = false;
};

LeaderElectionOptions quick() {
  LeaderElectionOptions o;
  o.lease_duration = 2000ms;
  o.renew_deadline = 1000ms;
  o.retry_period = 200ms;
  return o;
}

}  // namespace

TEST_CASE("three electors: one leader; a graceful stop hands over; never two at once") {
  MemoryLease lease;
  Election e(lease, 3, quick());
  REQUIRE(e.waitLeader());
  int first = e.leaderIndex();
  e.stops[first].request_stop();
  REQUIRE(e.waitLeader(first));
  CHECK(e.leaderIndex() != first);
  CHECK(e.max_leaders == 1);
}

TEST_CASE("a leader that cannot reach the server steps down before anyone takes over") {
  MemoryLease lease;
  Election e(lease, 2, quick());
  REQUIRE(e.waitLeader());
  int first = e.leaderIndex();
  // The API server becomes unreachable for everyone, then comes back.
  lease.setDown(true);
  CHECK(waitUntil([&] { return e.leaderIndex() != first; }, 5s));
  CHECK(e.leaderIndex() == -1);
  e.threads[first].join();
  e.threads[first] = std::thread([] {});
  CHECK(e.results[first].code() == Code::Aborted);
  CHECK(e.results[first].message() == "leaderelection lost");
  lease.setDown(false);
  REQUIRE(e.waitLeader(first));
  CHECK(e.max_leaders == 1);
}

TEST_CASE("a slow API server does not cause two leaders") {
  MemoryLease lease;
  Election e(lease, 2, quick(), /*restart_lost=*/true);
  REQUIRE(e.waitLeader());
  // Answers now come back long after the writes are applied: first a little slow, then
  // beyond the renew deadline.
  lease.setResponseDelay(600ms);
  int writes = lease.writes();
  REQUIRE(waitUntil([&] { return lease.writes() >= writes + 8; }));
  lease.setResponseDelay(1500ms);
  writes = lease.writes();
  REQUIRE(waitUntil([&] { return lease.writes() >= writes + 4; }));
  lease.setResponseDelay(0ms);
  REQUIRE(e.waitLeader());
  CHECK(e.max_leaders == 1);
  MESSAGE("leadership changes: " << e.acquisitions << ", losses: " << e.losses);
}

}  // namespace ccm::leader
