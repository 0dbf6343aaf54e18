// CallRunner: runs calls into a plugin on its own threads so the host can enforce deadlines.
//
// Each capability has a runner with as many slots as the plugin declared (max_concurrency;
// "no limit" is capped by the host). A call waits for a slot until its deadline, runs on a
// pool thread, and the caller waits until it returns or until deadline + grace. A call that
// overstays is abandoned: the caller gets DEADLINE_EXCEEDED, the call's ID is retired (the
// plugin's late output is refused), and the slot stays taken until the plugin finally
// returns — so a plugin that hangs saturates its own slots and every further call fails fast
// and cleanly, instead of piling up threads without bound.
//
// THREAD: run() may be called from any thread, concurrently.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ccm/provider_abi.h"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"

namespace ccm::plugin {

struct CallOutcome {
  ccm_status status = CCM_STATUS_OK;
  bool abandoned = false;  // the call overstayed its deadline; its output is void
  bool threw = false;      // an exception crossed the ABI boundary (caught by the host)
  std::string exception;
};

class CallRunner {
 public:
  // slots: how many calls may run at once. grace: how long past the deadline the caller
  // still waits for a plugin that is finishing up. Its gauges are labelled with the
  // provider's name and the runner's (the capability).
  CallRunner(std::string name, uint32_t slots, std::chrono::milliseconds grace,
             metrics::Registry* registry, std::string_view provider);
  ~CallRunner();
  CallRunner(const CallRunner&) = delete;
  CallRunner& operator=(const CallRunner&) = delete;

  // Runs fn on a pool thread. deadline is on the steady clock. on_abandon runs (on the
  // caller's thread) when the call is given up, before run() returns.
  CallOutcome run(std::chrono::steady_clock::time_point deadline,
                  std::function<ccm_status()> fn, const std::function<void()>& on_abandon);

  uint32_t slots() const;
  // Calls given up on that have not returned yet.
  int abandonedInFlight() const;

 private:
  struct Task {
    std::function<ccm_status()> fn;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;       // guarded by mu
    bool abandoned = false;  // guarded by mu
    CallOutcome outcome;     // guarded by mu
  };

  // Everything the pool threads touch. Threads share ownership, so a runner can be destroyed
  // while one of its threads is still stuck inside a hung plugin call.
  struct Core {
    std::string name;
    uint32_t slots = 1;
    std::mutex mu;
    std::condition_variable cv;       // wakes workers (queue or stop)
    std::condition_variable slot_cv;  // wakes callers waiting for a slot
    uint32_t busy = 0;                // slots taken, guarded by mu
    int abandoned = 0;                // guarded by mu
    uint32_t idle = 0;                // guarded by mu
    uint32_t threads = 0;             // guarded by mu
    bool stopping = false;            // guarded by mu
    std::deque<std::shared_ptr<Task>> queue;  // guarded by mu
    metrics::Gauge* in_flight = nullptr;
    metrics::Gauge* abandoned_gauge = nullptr;
  };

  static void worker(std::shared_ptr<Core> core);
  static void finish(Core& core, const std::shared_ptr<Task>& task, CallOutcome outcome);

  const std::chrono::milliseconds grace_;
  std::shared_ptr<Core> core_;
};

}  // namespace ccm::plugin
