// Exponential back-off with jitter.
#include "plugins/openstack/backoff.hpp"

#include <algorithm>
#include <random>
#include <thread>

namespace ccm::openstack {
namespace {

constexpr std::chrono::milliseconds kSleepStep{100};
constexpr int kMaxDoublings = 30;

std::mt19937_64& rng() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return engine;
}

}  // namespace

std::chrono::milliseconds backoffDelay(std::chrono::milliseconds base, int attempt,
                                       std::chrono::milliseconds cap) {
  int doublings = std::clamp(attempt, 0, kMaxDoublings);
  int64_t full = base.count();
  for (int i = 0; i < doublings && full < cap.count(); ++i) {
    full *= 2;
  }
  full = std::min<int64_t>(full, cap.count());
  std::uniform_int_distribution<int64_t> dist(full / 2, std::max<int64_t>(full / 2, full));
  return std::chrono::milliseconds(dist(rng()));
}

sdk::Status sleepWithin(const sdk::Call& call, std::chrono::milliseconds d) {
  if (auto left = call.timeLeft(); left && *left <= d) {
    return sdk::Status(CCM_STATUS_DEADLINE_EXCEEDED, "the call's deadline comes before the next retry (in " +
                                              std::to_string(d.count()) + " ms)");
  }
  auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
    CCM_SDK_RETURN_IF_ERROR(call.checkAlive());
    auto left = until - std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, kSleepStep));
  }
  return call.checkAlive();
}

std::chrono::milliseconds BackoffTable::next(const std::string& key) {
  int attempt = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempt = attempts_[key]++;
  }
  return backoffDelay(base_, attempt, cap_);
}

int BackoffTable::attempts(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(key);
  return it == attempts_.end() ? 0 : it->second;
}

void BackoffTable::reset(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  attempts_.erase(key);
}

}  // namespace ccm::openstack
