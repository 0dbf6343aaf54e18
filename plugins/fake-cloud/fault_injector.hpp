// FaultInjector: what the fake cloud does to a call before answering it, as the World asks —
// throttling (a token bucket), injected errors, and latency that stops when the host cancels
// the call (unless the World says to hang). It also counts the calls, by operation.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string_view>

#include "ccm/provider.hpp"
#include "plugins/fake-cloud/config.hpp"

namespace ccm::fakecloud {

class FaultInjector {
 public:
  // The token bucket starts full, with the burst of `initial`.
  FaultInjector(const sdk::Host& host, const std::shared_ptr<const World>& initial);

  // Admits one call of operation `op` (about `node`, for the operations on one node) under
  // `world`: the error to answer instead, or nothing once the injected latency has passed.
  // Counted faults start again from zero whenever the World changes. THREAD: any.
  std::optional<sdk::Error> admit(const sdk::Call& call, std::string_view op, std::string_view node,
                                  const std::shared_ptr<const World>& world);

 private:
  std::optional<sdk::Error> throttleLocked(std::string_view op, const World& world);
  std::optional<sdk::Error> injectedFaultLocked(std::string_view op, std::string_view node,
                                                const World& world);
  static std::optional<sdk::Error> wait(const sdk::Call& call, std::string_view op,
                                        const World& world);

  const sdk::Host& host_;

  std::mutex mu_;
  std::shared_ptr<const World> world_;    // guarded by mu_: the World fault_hits_ count for
  std::map<size_t, int64_t> fault_hits_;  // guarded by mu_: fault index -> calls failed
  std::mt19937_64 rng_{42};               // guarded by mu_
  double tokens_ = 0;                     // guarded by mu_
  std::chrono::steady_clock::time_point tokens_at_;  // guarded by mu_
};

// The error a node gets inside a batch call: the first fault of "metadata" or "batch" that
// names the node (regardless of its probability and count), if any.
std::optional<sdk::Error> batchNodeFault(const World& world, std::string_view node);

}  // namespace ccm::fakecloud
