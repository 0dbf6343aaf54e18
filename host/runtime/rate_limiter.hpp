// Rate limiters: the token bucket shared by every request of the Kubernetes client
// (--kube-api-qps / --kube-api-burst), and the per-item limiters that pace work-queue retries
// (the controller default, the service controller's 5 s-300 s exponential, the route
// controller's single-key bucket).
//
// THREAD: every method of every class here may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "host/runtime/clock.hpp"

namespace ccm {

// A token bucket: tokens accrue at `qps` per second up to `burst`; each request takes one.
// Like golang.org/x/time/rate, a request that finds the bucket empty still takes its token
// (the balance goes negative) and is told how long to wait, so waiters are served in order.
// qps <= 0 disables limiting (every request passes at once).
class TokenBucket {
 public:
  TokenBucket(double qps, int burst, Clock& clock = Clock::real());
  TokenBucket(const TokenBucket&) = delete;
  TokenBucket& operator=(const TokenBucket&) = delete;

  // Takes one token and returns how long the caller must wait before using it (0 = now).
  std::chrono::nanoseconds reserve();

  // Takes a token only if one is available now.
  bool tryAccept();

  // Takes a token and sleeps (real time) until it is valid. Returns false, without waiting
  // further, when `stop` is requested. `waited` (optional) receives the time slept.
  bool wait(std::stop_token stop = {}, std::chrono::nanoseconds* waited = nullptr);

  bool enabled() const { return qps_ > 0; }
  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void refillLocked(Clock::MonoTime now);

  const double qps_;
  const int burst_;
  Clock& clock_;
  std::mutex mu_;
  double tokens_;         // guarded by mu_; may be negative (reserved ahead)
  Clock::MonoTime last_;  // guarded by mu_; time tokens_ was last brought up to date
};

// Sleeps up to `d` of real time; returns false early when `stop` is requested.
bool sleepFor(std::chrono::nanoseconds d, std::stop_token stop);

// Decides how long an item waits before it is retried (client-go's workqueue.RateLimiter).
class ItemRateLimiter {
 public:
  virtual ~ItemRateLimiter() = default;
  // The delay before `item` may be processed again; counts one more failure for it.
  virtual std::chrono::nanoseconds when(const std::string& item) = 0;
  // Clears the item's failure history (call on success).
  virtual void forget(const std::string& item) = 0;
  // How many times the item has been retried since it was last forgotten.
  virtual int numRequeues(const std::string& item) = 0;
};

// delay = base * 2^(failures of this item), capped at max_delay.
class ItemExponentialLimiter final : public ItemRateLimiter {
 public:
  ItemExponentialLimiter(std::chrono::nanoseconds base, std::chrono::nanoseconds max_delay);
  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  const std::chrono::nanoseconds base_;
  const std::chrono::nanoseconds max_;
  std::mutex mu_;
  std::unordered_map<std::string, int> failures_;  // guarded by mu_
};

// `fast` for the first max_fast_attempts failures of an item, `slow` afterwards.
class ItemFastSlowLimiter final : public ItemRateLimiter {
 public:
  ItemFastSlowLimiter(std::chrono::nanoseconds fast, std::chrono::nanoseconds slow,
                      int max_fast_attempts);
  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  const std::chrono::nanoseconds fast_;
  const std::chrono::nanoseconds slow_;
  const int max_fast_;
  std::mutex mu_;
  std::unordered_map<std::string, int> failures_;  // guarded by mu_
};

// One token bucket for all items: delay = the bucket's reservation delay, optionally capped
// at max_delay (0 = no cap). Keeps no per-item state (numRequeues is always 0).
class BucketLimiter final : public ItemRateLimiter {
 public:
  BucketLimiter(double qps, int burst, Clock& clock = Clock::real(),
                std::chrono::nanoseconds max_delay = {});
  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string&) override {}
  int numRequeues(const std::string&) override { return 0; }

 private:
  TokenBucket bucket_;
  const std::chrono::nanoseconds max_;
};

// The longest delay of several limiters; forget() forgets in all of them.
class MaxOfLimiter final : public ItemRateLimiter {
 public:
  explicit MaxOfLimiter(std::vector<std::unique_ptr<ItemRateLimiter>> limiters);
  std::chrono::nanoseconds when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  std::vector<std::unique_ptr<ItemRateLimiter>> limiters_;
};

// Upstream's DefaultControllerRateLimiter: max of per-item exponential (5 ms .. 1000 s) and an
// overall bucket of 10 items/s, burst 100.
std::unique_ptr<ItemRateLimiter> defaultControllerRateLimiter(Clock& clock = Clock::real());

// The service controller's limiter: per-item exponential 5 s .. 300 s.
std::unique_ptr<ItemRateLimiter> serviceControllerRateLimiter();

// The (watch-based) route controller's limiter for its single key: one token per 10 s,
// burst 1, no item waits more than 10 s.
std::unique_ptr<ItemRateLimiter> routeControllerRateLimiter(Clock& clock = Clock::real());

}  // namespace ccm
