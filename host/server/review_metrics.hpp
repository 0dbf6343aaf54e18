// Metrics shared by the delegated authentication and authorization calls: upstream's
// apiserver_delegated_authn_* / apiserver_delegated_authz_* request counters and latency
// histograms, labelled by the HTTP status of the review call ("error" without an answer).
//
// THREAD: any thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "host/runtime/metrics.hpp"

namespace ccm::server {

// 1 ms, 2 ms, ... about 16 s.
inline std::vector<double> reviewLatencyBuckets() {
  return metrics::exponentialBuckets(0.001, 2, 15);
}

// Counts one review call and observes its latency; either family may be null.
inline void recordReview(metrics::Family<metrics::Counter>* requests,
                         metrics::Family<metrics::Histogram>* durations, int http_code,
                         std::chrono::nanoseconds elapsed) {
  const std::string code = http_code > 0 ? std::to_string(http_code) : std::string("error");
  if (requests != nullptr) {
    requests->labels({code}).inc();
  }
  if (durations != nullptr) {
    durations->labels({code}).observe(std::chrono::duration<double>(elapsed).count());
  }
}

}  // namespace ccm::server
