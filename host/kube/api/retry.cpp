// Backoff and retry helpers.
#include "host/kube/api/retry.hpp"

#include <random>

#include "host/runtime/rate_limiter.hpp"

namespace ccm::kube {
namespace {

class MtRandom final : public Random {
 public:
  MtRandom() : gen_(std::random_device{}()) {}
  double uniform() override { return dist_(gen_); }

 private:
  std::mt19937_64 gen_;
  std::uniform_real_distribution<double> dist_{0.0, 1.0};
};

// One Backoff.Step(): returns the sleep and advances the backoff.
std::chrono::nanoseconds step(Backoff& b, Random& random) {
  std::chrono::nanoseconds d = b.duration;
  if (b.steps < 1) {
    return jittered(d, b.jitter, random);
  }
  --b.steps;
  if (b.factor != 0) {
    b.duration = std::chrono::nanoseconds(
        static_cast<int64_t>(static_cast<double>(b.duration.count()) * b.factor));
    if (b.cap.count() > 0 && b.duration > b.cap) {
      b.duration = b.cap;
      b.steps = 0;
    }
  }
  return jittered(d, b.jitter, random);
}

}  // namespace

SeededRandom::SeededRandom() : SeededRandom(std::random_device{}() * 0x9E3779B97F4A7C15ULL + 1) {}

SeededRandom::SeededRandom(uint64_t seed) {
  // splitmix64 expands the seed; xoshiro256** generates.
  for (auto& s : state_) {
    seed += 0x9E3779B97F4A7C15ULL;
    uint64_t z = seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    s = z ^ (z >> 31);
  }
}

double SeededRandom::uniform() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  uint64_t result = rotl(state_[1] * 5, 7) * 9;
  uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return static_cast<double>(result >> 11) * 0x1.0p-53;
}

Random& Random::threadLocal() {
  thread_local MtRandom random;
  return random;
}

std::chrono::nanoseconds jittered(std::chrono::nanoseconds d, double jitter, Random& random) {
  if (jitter <= 0) {
    return d;
  }
  return d + std::chrono::nanoseconds(
                 static_cast<int64_t>(random.uniform() * jitter * static_cast<double>(d.count())));
}

std::vector<std::chrono::nanoseconds> backoffDelays(Backoff backoff, Random& random) {
  std::vector<std::chrono::nanoseconds> out;
  while (backoff.steps > 1) {
    out.push_back(step(backoff, random));
  }
  return out;
}

ApiStatus retryOnError(const Backoff& initial,
                       const std::function<bool(const ApiStatus&)>& retriable,
                       const std::function<ApiStatus()>& fn, const RetryHooks& hooks) {
  Backoff b = initial;
  Random& random = hooks.random != nullptr ? *hooks.random : Random::threadLocal();
  ApiStatus last;
  while (b.steps > 0) {
    last = fn();
    if (last.ok() || !retriable(last)) {
      return last;
    }
    if (b.steps == 1) {
      break;
    }
    auto d = step(b, random);
    bool go_on = hooks.sleep ? hooks.sleep(d) : sleepFor(d, hooks.stop);
    if (!go_on) {
      return ApiStatus::cancelled();
    }
  }
  return last;
}

ApiStatus retryOnConflict(const Backoff& backoff, const std::function<ApiStatus()>& fn,
                          const RetryHooks& hooks) {
  return retryOnError(
      backoff, [](const ApiStatus& s) { return s.isConflict(); }, fn, hooks);
}

BackoffManager::BackoffManager(std::chrono::nanoseconds initial, std::chrono::nanoseconds cap,
                               std::chrono::nanoseconds reset_after, double jitter, Clock& clock,
                               Random& random)
    : initial_(initial),
      cap_(cap),
      reset_after_(reset_after),
      jitter_(jitter),
      clock_(clock),
      random_(random) {}

std::chrono::nanoseconds BackoffManager::next() {
  Clock::MonoTime now = clock_.now();
  if (!used_ || now - last_ > reset_after_) {
    current_ = initial_;
  } else {
    current_ = std::min(cap_, current_ * 2);
  }
  used_ = true;
  last_ = now;
  return jittered(current_, jitter_, random_);
}

}  // namespace ccm::kube
