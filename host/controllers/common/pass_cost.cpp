#include "host/controllers/common/pass_cost.hpp"

#include <ctime>

namespace ccm::controllers {

std::chrono::nanoseconds threadCpuTime() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
    return std::chrono::nanoseconds(0);
  }
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

PassCost::PassCost(metrics::Registry& registry, const std::string& controller) {
  // 1 ms .. about 65 s: a quiet pass over a few nodes to a full pass over 100,000.
  if (auto* f = registry.histogram("ccm_controller_pass_duration_seconds",
                                   "Wall time of one periodic pass of a controller.",
                                   metrics::exponentialBuckets(0.001, 2, 17), {"controller"})) {
    duration_ = &f->labels({controller});
  }
  if (auto* f = registry.counter("ccm_controller_pass_cpu_seconds_total",
                                 "CPU seconds the threads of a controller's periodic passes used.",
                                 {"controller"})) {
    cpu_ = &f->labels({controller});
  }
  if (auto* f = registry.gauge("ccm_controller_pass_objects",
                               "Objects (nodes) the controller's last periodic pass covered.",
                               {"controller"})) {
    objects_ = &f->labels({controller});
  }
}

void PassCost::record(std::chrono::duration<double> wall, std::chrono::nanoseconds cpu,
                      size_t objects) {
  if (duration_ != nullptr) {
    duration_->observe(wall.count());
  }
  if (cpu_ != nullptr) {
    cpu_->inc(std::chrono::duration<double>(cpu).count());
  }
  if (objects_ != nullptr) {
    objects_->set(static_cast<double>(objects));
  }
}

PassTimer::PassTimer(PassCost& cost)
    : cost_(cost), started_(std::chrono::steady_clock::now()), cpu_started_(threadCpuTime()) {}

void PassTimer::finish(size_t objects) {
  auto wall = std::chrono::steady_clock::now() - started_;
  cost_.record(wall, threadCpuTime() - cpu_started_ + other_cpu_, objects);
}

}  // namespace ccm::controllers
