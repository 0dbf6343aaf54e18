// parallelFor: runs fn(i) for every i in [0, n) on up to `workers` threads (the caller's
// included), stopping early once stop is requested. For periodic passes over all nodes.
// Returns the CPU time the threads it started used (the caller's own is not included), for
// a pass's cost (pass_cost.hpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stop_token>
#include <thread>
#include <vector>

#include "host/controllers/common/pass_cost.hpp"

namespace ccm::controllers {

template <typename Fn>
std::chrono::nanoseconds parallelFor(size_t n, size_t workers, std::stop_token stop, Fn&& fn) {
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t i = next.fetch_add(1); i < n && !stop.stop_requested(); i = next.fetch_add(1)) {
      fn(i);
    }
  };
  size_t extra = std::min(n, std::max<size_t>(workers, 1)) - (n > 0 ? 1 : 0);
  std::atomic<int64_t> helper_cpu_ns{0};
  {
    std::vector<std::jthread> threads;
    threads.reserve(extra);
    for (size_t t = 0; t < extra; ++t) {
      threads.emplace_back([&] {
        auto cpu0 = threadCpuTime();
        run();
        helper_cpu_ns += (threadCpuTime() - cpu0).count();
      });
    }
    run();
  }
  return std::chrono::nanoseconds(helper_cpu_ns.load());
}

}  // namespace ccm::controllers
