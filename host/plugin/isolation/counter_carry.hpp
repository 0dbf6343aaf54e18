// CounterCarry: keeps the provider child's counters from going backwards in the host's
// /metrics when the child is restarted (--provider-isolation=process).
//
// The child keeps its own registry (ccm_provider_calls_total, its provider's own metrics, ...)
// and a restarted child starts it again from zero. Prometheus counters must never decrease,
// so every counter sample and every histogram sample (_bucket, _sum, _count) the host passes
// on is the child's value plus the last value each earlier child showed for that series. A
// series is one sample line's name and labels. Gauges and untyped samples pass unchanged.
// What a dead child counted after its last scrape is not known, and so not added (a counter
// then grows less than the events it counts, but never goes backwards).
//
// THREAD: adjust() from any thread (serialised inside).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace ccm::plugin::isolation {

class CounterCarry {
 public:
  // The exposition text `text` of the child numbered `generation` (a new number for each
  // child started), with the earlier children's last values added to its cumulative samples.
  std::string adjust(std::string_view text, uint64_t generation);

 private:
  std::mutex mu_;
  uint64_t generation_ = 0;                // guarded by mu_: whose values last_ holds
  std::map<std::string, double> last_;     // guarded by mu_: series -> the child's own value
  std::map<std::string, double> carried_;  // guarded by mu_: series -> earlier children's sum
};

}  // namespace ccm::plugin::isolation
