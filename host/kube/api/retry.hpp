// Backoff and retry helpers with client-go's semantics:
//  - Backoff + retryOnConflict(): wait.Backoff / retry.RetryOnConflict. `steps` is the
//    number of attempts; between attempts sleep duration (x factor each time, capped), with
//    up to `jitter` x duration added at random. The preset backoffs are upstream's.
//  - BackoffManager: the reflector's exponential backoff with reset after a quiet period.
// Randomness is a seam (Random) so tests can pin it.
//
// THREAD: functions are reentrant; a BackoffManager is used by one thread.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <vector>

#include "host/kube/api/api_status.hpp"
#include "host/runtime/clock.hpp"

namespace ccm::kube {

class Random {
 public:
  virtual ~Random() = default;
  // Uniform in [0, 1).
  virtual double uniform() = 0;
  // A per-thread Mersenne Twister seeded from std::random_device.
  static Random& threadLocal();
};

// A small PRNG (xoshiro256**) owned by its user (one thread at a time).
class SeededRandom final : public Random {
 public:
  SeededRandom();
  explicit SeededRandom(uint64_t seed);
  double uniform() override;

 private:
  uint64_t state_[4];
};

struct Backoff {
  std::chrono::nanoseconds duration{0};
  double factor = 1.0;
  double jitter = 0.0;
  int steps = 1;
  std::chrono::nanoseconds cap{0};  // 0 = no cap
};

// retry.DefaultRetry: 5 attempts, 10 ms apart, jitter 0.1.
inline constexpr Backoff kDefaultRetry{std::chrono::milliseconds(10), 1.0, 0.1, 5, {}};
// retry.DefaultBackoff: 4 attempts, 10 ms x5 each time, jitter 0.1.
inline constexpr Backoff kDefaultBackoff{std::chrono::milliseconds(10), 5.0, 0.1, 4, {}};
// cloud-provider's taint/label/condition updates: 5 attempts, 100 ms, jitter 1.0.
inline constexpr Backoff kUpdateBackoff{std::chrono::milliseconds(100), 1.0, 1.0, 5, {}};
// cloud-provider's node initialisation: 20 attempts, 50 ms, jitter 1.0.
inline constexpr Backoff kNodeInitBackoff{std::chrono::milliseconds(50), 1.0, 1.0, 20, {}};

// d + uniform * jitter * d (jitter <= 0: d).
std::chrono::nanoseconds jittered(std::chrono::nanoseconds d, double jitter, Random& random);

// The sleeps between attempts of `backoff` (steps-1 values), for tests and docs.
std::vector<std::chrono::nanoseconds> backoffDelays(Backoff backoff, Random& random);

struct RetryHooks {
  Random* random = nullptr;                             // null: Random::threadLocal()
  std::function<bool(std::chrono::nanoseconds)> sleep;  // null: real sleep; false = stop
  std::stop_token stop;
};

// Runs fn until it returns something other than a Conflict, at most backoff.steps times.
// Returns fn's last status (the last Conflict when attempts run out), or Cancelled when
// stopped while sleeping.
ApiStatus retryOnConflict(const Backoff& backoff, const std::function<ApiStatus()>& fn,
                          const RetryHooks& hooks = {});

// Like retryOnConflict, but retries while `retriable(status)` holds.
ApiStatus retryOnError(const Backoff& backoff,
                       const std::function<bool(const ApiStatus&)>& retriable,
                       const std::function<ApiStatus()>& fn, const RetryHooks& hooks = {});

// The reflector's backoff: initial, x2 per failure, capped, full jitter; back to the initial
// delay after `reset_after` without a call.
class BackoffManager {
 public:
  BackoffManager(std::chrono::nanoseconds initial, std::chrono::nanoseconds cap,
                 std::chrono::nanoseconds reset_after, double jitter, Clock& clock, Random& random);
  std::chrono::nanoseconds next();

 private:
  const std::chrono::nanoseconds initial_, cap_, reset_after_;
  const double jitter_;
  Clock& clock_;
  Random& random_;
  std::chrono::nanoseconds current_{0};
  Clock::MonoTime last_{};
  bool used_ = false;
};

}  // namespace ccm::kube
