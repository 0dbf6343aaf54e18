// LeaderElector: acquire / renew / release over a LeaseLock.
#include "host/leader/leader_elector.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <random>

#include "host/kube/api/retry.hpp"
#include "host/log/log.hpp"
#include "host/runtime/rate_limiter.hpp"

namespace ccm::leader {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

constexpr double kJitterFactor = 1.2;

int32_t seconds(milliseconds d) {
  return static_cast<int32_t>(std::max<int64_t>(1, d.count() / 1000));
}

}  // namespace

Status validate(const LeaderElectionOptions& o) {
  if (o.resource_lock != "leases") {
    return Status(Code::InvalidArgument, "resourceLock value must be \"leases\"");
  }
  if (o.lease_duration.count() <= 0 || o.renew_deadline.count() <= 0 ||
      o.retry_period.count() <= 0) {
    return Status(Code::InvalidArgument,
                  "leader election durations (lease duration, renew deadline, retry period) "
                  "must be greater than zero");
  }
  if (o.lease_duration <= o.renew_deadline) {
    return Status(Code::InvalidArgument,
                  "leader election lease duration must be greater than the renew deadline");
  }
  if (static_cast<double>(o.renew_deadline.count()) <=
      kJitterFactor * static_cast<double>(o.retry_period.count())) {
    return Status(Code::InvalidArgument,
                  "leader election renew deadline must be greater than 1.2 x the retry period");
  }
  if (o.resource_name.empty() || o.resource_namespace.empty()) {
    return Status(Code::InvalidArgument,
                  "leader election resource name and namespace are required");
  }
  return okStatus();
}

std::string defaultIdentity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) {
    std::snprintf(host, sizeof host, "unknown");
  }
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  uint64_t a = gen();
  uint64_t b = gen();
  // RFC 4122 version 4 layout.
  a = (a & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  b = (b & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return fmt::format("{}_{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", host, a >> 32, (a >> 16) & 0xFFFF,
                     a & 0xFFFF, b >> 48, b & 0xFFFFFFFFFFFFULL);
}

LeaderElector::LeaderElector(LeaseLock& lock, LeaderElectionOptions options,
                             LeaderCallbacks callbacks, Clock& clock, kube::EventRecorder recorder)
    : lock_(lock),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      recorder_(std::move(recorder)) {
  if (options_.identity.empty()) {
    options_.identity = defaultIdentity();
  }
}

bool LeaderElector::isLeader() const {
  return leading_.load();
}

bool LeaderElector::leadingNow() const {
  if (!leading_.load()) {
    return false;
  }
  std::lock_guard lock(mu_);
  return clock_.now() < last_renew_sent_ + options_.renew_deadline;
}

std::string LeaderElector::leader() const {
  std::lock_guard lock(mu_);
  return observed_.holder_identity;
}

void LeaderElector::setObserved(const LeaseRecord& record, Clock::MonoTime when) {
  std::lock_guard lock(mu_);
  observed_ = record;
  observed_time_ = when;
}

milliseconds LeaderElector::timeoutUntil(Clock::MonoTime deadline) const {
  auto left = duration_cast<milliseconds>(deadline - clock_.now());
  return std::max(left, milliseconds(1));
}

void LeaderElector::emit(const std::string& what) {
  kube::ObjectReference ref{"Lease", options_.resource_namespace, options_.resource_name,
                            "",      "coordination.k8s.io/v1",    "",
                            ""};
  recorder_.event(ref, kube::EventType::Normal, "LeaderElection",
                  fmt::format("{} {}", options_.identity, what));
}

bool LeaderElector::tryAcquireOrRenew(Clock::MonoTime deadline) {
  auto wall = clock_.wallNow();
  Clock::MonoTime start = clock_.now();
  LeaseRecord desired;
  desired.holder_identity = options_.identity;
  desired.lease_duration_seconds = seconds(options_.lease_duration);
  desired.acquire_time = wall;
  desired.renew_time = wall;

  LeaseRecord observed;
  Clock::MonoTime observed_time;
  {
    std::lock_guard lock(mu_);
    observed = observed_;
    observed_time = observed_time_;
  }
  bool is_holder = observed.holder_identity == options_.identity;

  // 1. Fast path: we hold a lease that is still valid; renew with the cached version.
  if (is_holder && !observed.resource_version.empty() &&
      observed_time + std::chrono::seconds(observed.lease_duration_seconds) > start) {
    LeaseRecord renew = desired;
    renew.acquire_time = observed.acquire_time;
    renew.lease_transitions = observed.lease_transitions;
    renew.resource_version = observed.resource_version;
    auto r = lock_.update(renew, timeoutUntil(deadline));
    if (r.ok()) {
      setObserved(*r, start);
      return commit(start, deadline);
    }
    log::infoV(2, "Lease renewal with the cached version failed; re-reading it",
               {{"lease", lock_.describe()}, {"error", r.status().toString()}});
  }

  // 2. Read the current record; create the Lease when missing.
  auto got = lock_.get(timeoutUntil(deadline));
  if (!got.ok()) {
    if (!got.status().isNotFound()) {
      log::error("Error retrieving lease lock",
                 {{"lease", lock_.describe()}, {"error", got.status().toString()}});
      return false;
    }
    auto created = lock_.create(desired, timeoutUntil(deadline));
    if (!created.ok()) {
      log::error("Error initially creating lease lock",
                 {{"lease", lock_.describe()}, {"error", created.status().toString()}});
      return false;
    }
    setObserved(*created, start);
    return commit(start, deadline);
  }
  LeaseRecord current = *got;
  Clock::MonoTime now = clock_.now();
  // 3. Record when the lease last changed, by our own clock.
  if (current.spec_fingerprint != observed.spec_fingerprint ||
      current.resource_version != observed.resource_version) {
    if (current.spec_fingerprint != observed.spec_fingerprint) {
      observed_time = now;
    }
    setObserved(current, observed_time);
  }
  if (!current.holder_identity.empty() && current.holder_identity != options_.identity &&
      observed_time + std::chrono::seconds(current.lease_duration_seconds) > now) {
    log::infoV(4, "Lock is held by another candidate and has not yet expired",
               {{"lease", lock_.describe()}, {"holder", current.holder_identity}});
    return false;
  }
  // 4. Take it (or renew it).
  if (current.holder_identity == options_.identity) {
    desired.acquire_time = current.acquire_time;
    desired.lease_transitions = current.lease_transitions;
  } else {
    desired.lease_transitions = current.lease_transitions + 1;
  }
  desired.resource_version = current.resource_version;
  Clock::MonoTime sent = clock_.now();
  auto updated = lock_.update(desired, timeoutUntil(deadline));
  if (!updated.ok()) {
    log::infoV(2, "Failed to update lease lock",
               {{"lease", lock_.describe()}, {"error", updated.status().toString()}});
    return false;
  }
  setObserved(*updated, sent);
  return commit(sent, deadline);
}

bool LeaderElector::commit(Clock::MonoTime sent, Clock::MonoTime deadline) {
  if (clock_.now() > deadline) {
    // The write went through, but the answer came too late to count on it: others may
    // already be counting down from it.
    log::warning("Lease write succeeded after the deadline; not counting it",
                 {{"lease", lock_.describe()}});
    return false;
  }
  std::lock_guard lock(mu_);
  last_renew_sent_ = sent;
  return true;
}

bool LeaderElector::release() {
  LeaseRecord observed;
  {
    std::lock_guard lock(mu_);
    observed = observed_;
  }
  if (observed.holder_identity != options_.identity) {
    return true;
  }
  auto wall = clock_.wallNow();
  LeaseRecord released;
  released.holder_identity = "";
  released.lease_duration_seconds = 1;
  released.acquire_time = wall;
  released.renew_time = wall;
  released.lease_transitions = observed.lease_transitions;
  released.resource_version = observed.resource_version;
  auto r = lock_.update(released, options_.renew_deadline);
  if (!r.ok()) {
    log::error("Failed to release lease lock",
               {{"lease", lock_.describe()}, {"error", r.status().toString()}});
    return false;
  }
  setObserved(*r, clock_.now());
  return true;
}

Status LeaderElector::check(milliseconds tolerance) const {
  if (!isLeader()) {
    return okStatus();
  }
  std::lock_guard lock(mu_);
  if (clock_.now() > last_renew_sent_ + options_.lease_duration + tolerance) {
    return Status(Code::Unavailable, fmt::format("failed election to renew leadership on lease {}",
                                                 options_.resource_name));
  }
  return okStatus();
}

Status LeaderElector::run(std::stop_token stop) {
  kube::SeededRandom own_random;
  kube::Random& random = random_ != nullptr ? *random_ : own_random;
  auto reportLeader = [this] {
    std::string holder = leader();
    if (holder != reported_leader_) {
      reported_leader_ = holder;
      if (!holder.empty()) {
        log::info("New leader elected", {{"lease", lock_.describe()}, {"leader", holder}});
      }
      if (callbacks_.on_new_leader) {
        callbacks_.on_new_leader(holder);
      }
    }
  };
  log::info("Attempting to acquire leader lease",
            {{"lease", lock_.describe()}, {"identity", options_.identity}});
  // Acquire.
  while (true) {
    if (stop.stop_requested()) {
      return okStatus();
    }
    bool ok = tryAcquireOrRenew(clock_.now() + options_.renew_deadline);
    reportLeader();
    if (ok) {
      break;
    }
    auto wait = kube::jittered(options_.retry_period, kJitterFactor, random);
    if (!sleepFor(wait, stop)) {
      return okStatus();
    }
  }
  leading_ = true;
  log::info("Successfully acquired lease", {{"lease", lock_.describe()}});
  emit("became leader");
  if (callbacks_.on_started_leading) {
    callbacks_.on_started_leading();
  }
  // Renew.
  Status result = okStatus();
  while (true) {
    if (!sleepFor(options_.retry_period, stop)) {
      break;
    }
    Clock::MonoTime deadline;
    {
      std::lock_guard lock(mu_);
      deadline = last_renew_sent_ + options_.renew_deadline;
    }
    bool renewed = false;
    while (!stop.stop_requested() && clock_.now() < deadline) {
      if (tryAcquireOrRenew(deadline)) {
        renewed = true;
        break;
      }
      auto left = deadline - clock_.now();
      if (left <= std::chrono::nanoseconds(0)) {
        break;
      }
      sleepFor(std::min<std::chrono::nanoseconds>(options_.retry_period, left), stop);
    }
    reportLeader();
    if (stop.stop_requested()) {
      break;
    }
    if (!renewed || leader() != options_.identity) {
      leading_ = false;
      log::error("Failed to renew lease; leadership lost", {{"lease", lock_.describe()}});
      result = Status(Code::Aborted, "leaderelection lost");
      break;
    }
  }
  leading_ = false;
  // The guarded work stops before the lease can pass to someone else.
  if (callbacks_.on_stopped_leading) {
    callbacks_.on_stopped_leading();
  }
  emit("stopped leading");
  if (result.ok() && options_.release_on_cancel && release()) {
    // Stopped (SIGTERM): hand the lease over at once.
    log::info("Released the leader lease", {{"lease", lock_.describe()}});
  }
  return result;
}

}  // namespace ccm::leader
