// LifecycleCall implementation: a detached thread per call and a shared record of its end.
#include "host/plugin/lifecycle_call.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "host/runtime/thread_name.hpp"

namespace ccm::plugin {
namespace {

// Shared by the waiting thread and the call's thread, which may outlive the wait.
struct Shared {
  std::mutex mu;
  std::condition_variable_any cv;
  bool done = false;         // guarded by mu
  LifecycleOutcome outcome;  // guarded by mu
};

}  // namespace

LifecycleOutcome runLifecycleCall(std::function<ccm_status()> fn,
                                  std::chrono::steady_clock::time_point deadline,
                                  const std::stop_token& stop) {
  auto started = std::chrono::steady_clock::now();
  auto since = [&started] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 started);
  };
  if (stop.stop_requested()) {
    return LifecycleOutcome{LifecycleOutcome::End::Interrupted, CCM_STATUS_CANCELLED, {}, {}};
  }
  auto shared = std::make_shared<Shared>();
  std::thread([shared, fn = std::move(fn)] {
    runtime::nameThisThread("ccm-lifecycle");
    LifecycleOutcome outcome;
    try {
      outcome.status = fn();
    } catch (const std::exception& e) {
      outcome.end = LifecycleOutcome::End::Threw;
      outcome.exception = e.what();
    } catch (...) {
      outcome.end = LifecycleOutcome::End::Threw;
      outcome.exception = "a non-standard exception";
    }
    std::lock_guard lock(shared->mu);
    shared->outcome = std::move(outcome);
    shared->done = true;
    shared->cv.notify_all();
  }).detach();

  std::unique_lock lock(shared->mu);
  auto finished = [&shared] { return shared->done; };
  bool done = false;
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    done = shared->cv.wait(lock, stop, finished);
  } else {
    done = shared->cv.wait_until(lock, stop, deadline, finished);
  }
  if (done) {
    LifecycleOutcome outcome = std::move(shared->outcome);
    outcome.elapsed = since();
    return outcome;
  }
  LifecycleOutcome given_up;
  given_up.end =
      stop.stop_requested() ? LifecycleOutcome::End::Interrupted : LifecycleOutcome::End::TimedOut;
  given_up.status = given_up.end == LifecycleOutcome::End::Interrupted
                        ? CCM_STATUS_CANCELLED
                        : CCM_STATUS_DEADLINE_EXCEEDED;
  given_up.elapsed = since();
  return given_up;
}

int64_t lifecycleDeadlineNs(const Clock* clock, std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    return 0;
  }
  const Clock& c = clock != nullptr ? *clock : Clock::real();
  return c.nowMonotonicNs() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
}

std::string describeTimeout(std::chrono::milliseconds timeout) {
  auto ms = timeout.count();
  if (ms % 60000 == 0 && ms > 0) {
    return fmt::format("{}m", ms / 60000);
  }
  if (ms % 1000 == 0) {
    return fmt::format("{}s", ms / 1000);
  }
  if (ms > 1000) {
    return fmt::format("{:.3g}s", static_cast<double>(ms) / 1000.0);
  }
  return fmt::format("{}ms", ms);
}

}  // namespace ccm::plugin
