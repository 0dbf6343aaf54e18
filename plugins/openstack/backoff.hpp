// Back-off for retries the cloud did not say when to make: exponential delays with jitter,
// a cancellable sleep for the short in-call retries, and BackoffTable, which remembers a
// growing delay per key (a load balancer, a Keystone user) across calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "ccm/provider.hpp"

namespace ccm::openstack {

// The delay of attempt `attempt` (0 for the first retry): base * 2^attempt, capped, then
// jittered to a uniform value in [delay/2, delay] so that retries of many callers spread out.
std::chrono::milliseconds backoffDelay(std::chrono::milliseconds base, int attempt,
                                       std::chrono::milliseconds cap);

// Sleeps `d` in short steps, returning early with the call's status when it is cancelled or
// its deadline passes. DEADLINE_EXCEEDED at once when the deadline comes before `d` is over.
sdk::Status sleepWithin(const sdk::Call& call, std::chrono::milliseconds d);

// THREAD: any.
class BackoffTable {
 public:
  BackoffTable(std::chrono::milliseconds base, std::chrono::milliseconds cap)
      : base_(base), cap_(cap) {}

  // The next delay for key (growing with each call since the last reset).
  std::chrono::milliseconds next(const std::string& key);
  // How many delays were handed out for key since the last reset.
  int attempts(const std::string& key) const;
  void reset(const std::string& key);

 private:
  std::chrono::milliseconds base_;
  std::chrono::milliseconds cap_;
  mutable std::mutex mu_;
  std::map<std::string, int> attempts_;  // guarded by mu_
};

}  // namespace ccm::openstack
