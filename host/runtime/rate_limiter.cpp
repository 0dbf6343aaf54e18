// Token bucket and work-queue item rate limiters.
#include "host/runtime/rate_limiter.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>

namespace ccm {

using std::chrono::nanoseconds;

TokenBucket::TokenBucket(double qps, int burst, Clock& clock)
    : qps_(qps),
      burst_(std::max(burst, 1)),
      clock_(clock),
      tokens_(std::max(burst, 1)),
      last_(clock.now()) {}

void TokenBucket::refillLocked(Clock::MonoTime now) {
  if (now <= last_) {
    return;
  }
  double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
  last_ = now;
}

nanoseconds TokenBucket::reserve() {
  if (!enabled()) {
    return nanoseconds(0);
  }
  std::lock_guard lock(mu_);
  refillLocked(clock_.now());
  tokens_ -= 1.0;
  if (tokens_ >= 0) {
    return nanoseconds(0);
  }
  return nanoseconds(static_cast<int64_t>(std::ceil(-tokens_ / qps_ * 1e9)));
}

bool TokenBucket::tryAccept() {
  if (!enabled()) {
    return true;
  }
  std::lock_guard lock(mu_);
  refillLocked(clock_.now());
  if (tokens_ >= 1.0) {
    tokens_ -= 1.0;
    return true;
  }
  return false;
}

bool TokenBucket::wait(std::stop_token stop, nanoseconds* waited) {
  nanoseconds d = reserve();
  if (waited != nullptr) {
    *waited = d;
  }
  if (d.count() <= 0) {
    return !stop.stop_requested();
  }
  return sleepFor(d, stop);
}

bool sleepFor(nanoseconds d, std::stop_token stop) {
  if (stop.stop_requested()) {
    return false;
  }
  if (d.count() <= 0) {
    return true;
  }
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  // Returns on timeout or when stop is requested; the predicate never holds.
  (void)cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

// ---------------------------------------------------------------------------------------------

ItemExponentialLimiter::ItemExponentialLimiter(nanoseconds base, nanoseconds max_delay)
    : base_(base), max_(max_delay) {}

nanoseconds ItemExponentialLimiter::when(const std::string& item) {
  int exp;
  {
    std::lock_guard lock(mu_);
    exp = failures_[item]++;
  }
  // Computed in floating point so large exponents saturate instead of overflowing.
  double delay = static_cast<double>(base_.count()) * std::pow(2.0, exp);
  if (delay >= static_cast<double>(max_.count())) {
    return max_;
  }
  return nanoseconds(static_cast<int64_t>(delay));
}

void ItemExponentialLimiter::forget(const std::string& item) {
  std::lock_guard lock(mu_);
  failures_.erase(item);
}

int ItemExponentialLimiter::numRequeues(const std::string& item) {
  std::lock_guard lock(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

ItemFastSlowLimiter::ItemFastSlowLimiter(nanoseconds fast, nanoseconds slow, int max_fast_attempts)
    : fast_(fast), slow_(slow), max_fast_(max_fast_attempts) {}

nanoseconds ItemFastSlowLimiter::when(const std::string& item) {
  std::lock_guard lock(mu_);
  int n = ++failures_[item];
  return n <= max_fast_ ? fast_ : slow_;
}

void ItemFastSlowLimiter::forget(const std::string& item) {
  std::lock_guard lock(mu_);
  failures_.erase(item);
}

int ItemFastSlowLimiter::numRequeues(const std::string& item) {
  std::lock_guard lock(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

BucketLimiter::BucketLimiter(double qps, int burst, Clock& clock, nanoseconds max_delay)
    : bucket_(qps, burst, clock), max_(max_delay) {}

nanoseconds BucketLimiter::when(const std::string&) {
  nanoseconds d = bucket_.reserve();
  if (max_.count() > 0 && d > max_) {
    return max_;
  }
  return d;
}

MaxOfLimiter::MaxOfLimiter(std::vector<std::unique_ptr<ItemRateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

nanoseconds MaxOfLimiter::when(const std::string& item) {
  nanoseconds longest{0};
  for (auto& l : limiters_) {
    longest = std::max(longest, l->when(item));
  }
  return longest;
}

void MaxOfLimiter::forget(const std::string& item) {
  for (auto& l : limiters_) {
    l->forget(item);
  }
}

int MaxOfLimiter::numRequeues(const std::string& item) {
  int most = 0;
  for (auto& l : limiters_) {
    most = std::max(most, l->numRequeues(item));
  }
  return most;
}

std::unique_ptr<ItemRateLimiter> defaultControllerRateLimiter(Clock& clock) {
  std::vector<std::unique_ptr<ItemRateLimiter>> parts;
  parts.push_back(std::make_unique<ItemExponentialLimiter>(std::chrono::milliseconds(5),
                                                           std::chrono::seconds(1000)));
  parts.push_back(std::make_unique<BucketLimiter>(10.0, 100, clock));
  return std::make_unique<MaxOfLimiter>(std::move(parts));
}

std::unique_ptr<ItemRateLimiter> serviceControllerRateLimiter() {
  return std::make_unique<ItemExponentialLimiter>(std::chrono::seconds(5),
                                                  std::chrono::seconds(300));
}

std::unique_ptr<ItemRateLimiter> routeControllerRateLimiter(Clock& clock) {
  return std::make_unique<BucketLimiter>(0.1, 1, clock, std::chrono::seconds(10));
}

}  // namespace ccm
