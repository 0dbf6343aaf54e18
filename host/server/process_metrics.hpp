// ProcessMetrics: the standard Prometheus process collector's series, read from the kernel
// when /metrics is scraped (nothing runs in between):
//
//   process_cpu_seconds_total       user + system CPU time (getrusage)
//   process_resident_memory_bytes   resident set size (/proc/self/statm)
//   process_virtual_memory_bytes    virtual memory size (/proc/self/statm)
//   process_open_fds                open file descriptors (/proc/self/fd)
//   process_max_fds                 the RLIMIT_NOFILE soft limit
//   process_start_time_seconds      start time since the Unix epoch (/proc/self/stat, btime)
//
// THREAD: update() may be called from any thread (serialised internally).
#pragma once

#include <mutex>

#include "host/runtime/metrics.hpp"
#include "host/runtime/status.hpp"

namespace ccm::server {

class ProcessMetrics {
 public:
  // Registers the families in registry (borrowed, must outlive this object). A name already
  // taken by another kind is skipped (and logged).
  explicit ProcessMetrics(metrics::Registry& registry);

  // Refreshes every value. A value that cannot be read keeps its previous value.
  void update();

 private:
  metrics::Counter* cpu_ = nullptr;
  metrics::Gauge* resident_ = nullptr;
  metrics::Gauge* virtual_ = nullptr;
  metrics::Gauge* open_fds_ = nullptr;
  metrics::Gauge* max_fds_ = nullptr;
  metrics::Gauge* start_time_ = nullptr;

  std::mutex mu_;
  double cpu_reported_ = 0;  // guarded by mu_: CPU seconds already added to the counter
};

// The process's start time in seconds since the Unix epoch (0 when unknown).
double processStartTimeSeconds();

}  // namespace ccm::server
