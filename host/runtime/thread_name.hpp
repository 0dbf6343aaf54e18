// Naming the host's threads, so that `top -H`, `ps -L`, perf and the benchmarks' per-thread
// CPU split (bench/) can tell them apart ("inf-nodes", "node-sync", "events", ...).
//
// THREAD: names the calling thread.
#pragma once

#include <string_view>

namespace ccm::runtime {

// Sets the calling thread's name; Linux keeps at most 15 bytes, the rest is cut.
void nameThisThread(std::string_view name);

}  // namespace ccm::runtime
