// FaultInjector: throttling, injected errors and latency, applied to each fake-cloud call.
#include "plugins/fake-cloud/fault_injector.hpp"

#include <algorithm>
#include <string>
#include <thread>

namespace ccm::fakecloud {
namespace {

bool namesNode(const Fault& fault, std::string_view node) {
  return std::find(fault.nodes.begin(), fault.nodes.end(), node) != fault.nodes.end();
}

sdk::Error errorOf(const Fault& fault) {
  return {fault.code, fault.message, fault.retry_after};
}

}  // namespace

FaultInjector::FaultInjector(const sdk::Host& host, const std::shared_ptr<const World>& initial)
    : host_(host), tokens_(initial->throttle.burst), tokens_at_(std::chrono::steady_clock::now()) {}

std::optional<sdk::Error> FaultInjector::admit(const sdk::Call& call, std::string_view op,
                                               std::string_view node,
                                               const std::shared_ptr<const World>& world) {
  host_.counterAdd("fake_cloud_calls_total", "Calls received by the fake cloud, by operation.",
                   {{"op", std::string(op)}}, 1);
  // The same count in fake-cloud's own metric namespace (ABI 1.1): exposed as it is.
  host_.counterAdd("fakecloud_requests_total", "Requests received by the fake cloud, by operation.",
                   {{"operation", std::string(op)}}, 1);
  {
    std::lock_guard lock(mu_);
    if (world_ != world) {
      world_ = world;
      fault_hits_.clear();
    }
    if (auto refused = throttleLocked(op, *world)) {
      return refused;
    }
    if (auto fault = injectedFaultLocked(op, node, *world)) {
      return fault;
    }
  }
  return wait(call, op, *world);
}

std::optional<sdk::Error> FaultInjector::throttleLocked(std::string_view op, const World& world) {
  const Throttle& throttle = world.throttle;
  bool throttling = throttle.qps > 0;  // 0 (or "nan") turns throttling off
  if (!throttling) {
    return std::nullopt;
  }
  auto now = std::chrono::steady_clock::now();
  double elapsed = std::chrono::duration<double>(now - tokens_at_).count();
  tokens_ = std::min(throttle.burst, tokens_ + elapsed * throttle.qps);
  tokens_at_ = now;
  if (tokens_ < 1) {
    host_.counterAdd("fake_cloud_throttled_total", "Calls refused by injected throttling.",
                     {{"op", std::string(op)}}, 1);
    return sdk::Error::throttled("fake-cloud: request rate exceeded", throttle.retry_after);
  }
  tokens_ -= 1;
  return std::nullopt;
}

std::optional<sdk::Error> FaultInjector::injectedFaultLocked(std::string_view op,
                                                             std::string_view node,
                                                             const World& world) {
  for (size_t i = 0; i < world.faults.size(); ++i) {
    const Fault& f = world.faults[i];
    if (f.op != "*" && f.op != op) {
      continue;
    }
    if (!f.nodes.empty() && !namesNode(f, node)) {
      continue;
    }
    if (f.count >= 0 && fault_hits_[i] >= f.count) {
      continue;
    }
    if (f.probability < 1.0 &&
        std::uniform_real_distribution<double>(0, 1)(rng_) >= f.probability) {
      continue;
    }
    ++fault_hits_[i];
    return errorOf(f);
  }
  return std::nullopt;
}

std::optional<sdk::Error> FaultInjector::wait(const sdk::Call& call, std::string_view op,
                                              const World& world) {
  std::chrono::milliseconds latency{0};
  if (auto it = world.latency.find(op); it != world.latency.end()) {
    latency = it->second;
  } else if (auto star = world.latency.find("*"); star != world.latency.end()) {
    latency = star->second;
  }
  if (latency.count() <= 0) {
    return std::nullopt;
  }
  auto until = std::chrono::steady_clock::now() + latency;
  while (std::chrono::steady_clock::now() < until) {
    if (!world.latency_ignores_deadline && call.cancelled()) {
      return sdk::Error::deadlineExceeded("fake-cloud: call cancelled while waiting on the cloud");
    }
    auto left = until - std::chrono::steady_clock::now();
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(5)));
  }
  return std::nullopt;
}

std::optional<sdk::Error> batchNodeFault(const World& world, std::string_view node) {
  for (const Fault& f : world.faults) {
    if ((f.op == "metadata" || f.op == "batch") && !f.nodes.empty() && namesNode(f, node)) {
      return errorOf(f);
    }
  }
  return std::nullopt;
}

}  // namespace ccm::fakecloud
