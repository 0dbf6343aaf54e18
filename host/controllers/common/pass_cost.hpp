// What one periodic pass of a controller costs (the address refresh, the lifecycle monitor,
// the route reconcile), exposed so that operators and the benchmarks can read the cost per
// pass and per node at any cluster size:
//   ccm_controller_pass_duration_seconds{controller}  histogram, wall time of each pass
//   ccm_controller_pass_cpu_seconds_total{controller} counter, CPU the pass's threads used
//   ccm_controller_pass_objects{controller}           gauge, objects the last pass covered
// Usage: PassTimer t(cost); ... t.addOtherThreads(parallelFor(...)); t.finish(objects);
// THREAD: a PassCost may be shared; a PassTimer belongs to the thread running the pass.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "host/runtime/metrics.hpp"

namespace ccm::controllers {

// CPU time the calling thread has used so far.
std::chrono::nanoseconds threadCpuTime();

class PassCost {
 public:
  // Registers (or finds) the families and this controller's children. A registry that
  // refuses a family (same name, other kind) leaves that figure unrecorded.
  PassCost(metrics::Registry& registry, const std::string& controller);

  void record(std::chrono::duration<double> wall, std::chrono::nanoseconds cpu, size_t objects);

 private:
  metrics::Histogram* duration_ = nullptr;
  metrics::Counter* cpu_ = nullptr;
  metrics::Gauge* objects_ = nullptr;
};

class PassTimer {
 public:
  explicit PassTimer(PassCost& cost);
  PassTimer(const PassTimer&) = delete;
  PassTimer& operator=(const PassTimer&) = delete;

  // CPU that helper threads of this pass used (what parallelFor returns).
  void addOtherThreads(std::chrono::nanoseconds cpu) { other_cpu_ += cpu; }
  // Records the pass: wall and CPU time since construction, and the objects it covered.
  void finish(size_t objects);

 private:
  PassCost& cost_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::nanoseconds cpu_started_;
  std::chrono::nanoseconds other_cpu_{0};
};

}  // namespace ccm::controllers
