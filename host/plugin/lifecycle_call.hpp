// LifecycleCall: runs one lifecycle call into a plugin (the entry point, create) under the
// start-up deadline, so that neither a plugin that never returns nor a signal that arrives
// while it runs can hold the host: the call runs on a thread of its own ("ccm-lifecycle")
// while the calling thread waits for it, for the deadline, or for a stop request (SIGTERM or
// SIGINT, through the process's stop source), whichever comes first.
//
// A call given up on keeps its thread, which stays inside the plugin: the plugin is unusable
// from then on, and its library must never be unloaded. The caller reports it and the
// process exits.
//
// THREAD: main thread (lifecycle calls never overlap other calls into a plugin).
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>

#include "ccm/provider_abi.h"
#include "host/runtime/clock.hpp"

namespace ccm::plugin {

// How a lifecycle call ended.
struct LifecycleOutcome {
  enum class End {
    Returned,     // status holds what the plugin returned
    Threw,        // an exception left the plugin; exception holds its message
    TimedOut,     // the deadline passed first; the call is abandoned
    Interrupted,  // a stop was requested first (or before it started); abandoned
  };
  End end = End::Returned;
  ccm_status status = CCM_STATUS_INTERNAL;
  std::string exception;
  std::chrono::milliseconds elapsed{0};
};

// Runs fn (which must own everything it touches: it may outlive this call) on its own thread
// and waits as described above. deadline is on the steady clock; time_point::max() for none.
LifecycleOutcome runLifecycleCall(std::function<ccm_status()> fn,
                                  std::chrono::steady_clock::time_point deadline,
                                  const std::stop_token& stop);

// The ccm_call deadline of a lifecycle call that starts now on clock (the real one when null):
// timeout from now on its monotonic clock, or 0 (no deadline) when timeout is not positive.
int64_t lifecycleDeadlineNs(const Clock* clock, std::chrono::milliseconds timeout);

// "2m", "1.5s", "300ms": a start-up deadline as a person reads it.
std::string describeTimeout(std::chrono::milliseconds timeout);

}  // namespace ccm::plugin
