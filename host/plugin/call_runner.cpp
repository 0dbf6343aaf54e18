// CallRunner implementation: a lazily grown pool bounded by the slot count.
#include "host/plugin/call_runner.hpp"

#include <exception>

#include "host/log/log.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::plugin {

CallRunner::CallRunner(std::string name, uint32_t slots, std::chrono::milliseconds grace,
                       metrics::Registry* registry, std::string_view provider)
    : grace_(grace), core_(std::make_shared<Core>()) {
  core_->name = std::move(name);
  core_->slots = slots == 0 ? 1 : slots;
  if (registry != nullptr) {
    if (auto* f = registry->gauge("ccm_provider_calls_in_flight",
                                  "Calls into the provider plugin running now, by provider and "
                                  "capability.",
                                  {"provider", "capability"})) {
      core_->in_flight = &f->labels({std::string(provider), core_->name});
    }
    if (auto* f = registry->gauge(
            "ccm_provider_abandoned_calls",
            "Calls into the provider that overstayed their deadline and have not returned yet.",
            {"provider", "capability"})) {
      core_->abandoned_gauge = &f->labels({std::string(provider), core_->name});
    }
  }
}

CallRunner::~CallRunner() {
  {
    std::lock_guard lock(core_->mu);
    core_->stopping = true;
  }
  core_->cv.notify_all();
  core_->slot_cv.notify_all();
  // Idle threads exit on their own; a thread stuck in a hung plugin call keeps the core alive
  // until the call returns (plugins are never unloaded, so its code stays mapped).
}

uint32_t CallRunner::slots() const { return core_->slots; }

int CallRunner::abandonedInFlight() const {
  std::lock_guard lock(core_->mu);
  return core_->abandoned;
}

void CallRunner::worker(std::shared_ptr<Core> core) {
  runtime::nameThisThread("ccm-" + core->name);
  std::unique_lock lock(core->mu);
  for (;;) {
    ++core->idle;
    core->cv.wait(lock, [&] { return core->stopping || !core->queue.empty(); });
    --core->idle;
    if (core->queue.empty()) {  // stopping
      --core->threads;
      return;
    }
    auto task = core->queue.front();
    core->queue.pop_front();
    lock.unlock();
    CallOutcome outcome;
    try {
      outcome.status = task->fn();
    } catch (const std::exception& e) {
      outcome.status = CCM_STATUS_INTERNAL;
      outcome.threw = true;
      outcome.exception = e.what();
    } catch (...) {
      outcome.status = CCM_STATUS_INTERNAL;
      outcome.threw = true;
      outcome.exception = "a non-standard exception";
    }
    finish(*core, task, std::move(outcome));
    lock.lock();
  }
}

void CallRunner::finish(Core& core, const std::shared_ptr<Task>& task, CallOutcome outcome) {
  bool was_abandoned = false;
  {
    std::lock_guard lock(task->mu);
    task->outcome = std::move(outcome);
    task->done = true;
    was_abandoned = task->abandoned;
    task->fn = nullptr;  // drop the call's inputs now
  }
  task->cv.notify_all();
  {
    std::lock_guard lock(core.mu);
    --core.busy;
    if (was_abandoned) {
      --core.abandoned;
    }
    // Metrics belong to the runner's owner: once it is gone (stopping), leave them alone.
    if (!core.stopping) {
      if (was_abandoned && core.abandoned_gauge != nullptr) {
        core.abandoned_gauge->dec();
      }
      if (core.in_flight != nullptr) {
        core.in_flight->dec();
      }
    }
  }
  core.slot_cv.notify_one();
  if (was_abandoned) {
    log::warning("An abandoned provider call finally returned; its result was discarded",
                 {{"capability", core.name}});
  }
}

CallOutcome CallRunner::run(std::chrono::steady_clock::time_point deadline,
                            std::function<ccm_status()> fn,
                            const std::function<void()>& on_abandon) {
  Core& core = *core_;
  auto task = std::make_shared<Task>();
  task->fn = std::move(fn);
  {
    std::unique_lock lock(core.mu);
    if (!core.slot_cv.wait_until(lock, deadline,
                                 [&] { return core.busy < core.slots || core.stopping; }) ||
        core.stopping) {
      CallOutcome out;
      out.status = CCM_STATUS_DEADLINE_EXCEEDED;
      out.exception = core.stopping ? "the provider is shutting down"
                                    : "every provider slot stayed busy until the deadline (" +
                                          std::to_string(core.slots) + " slots, " +
                                          std::to_string(core.abandoned) + " held by hung calls)";
      return out;
    }
    ++core.busy;
    core.queue.push_back(task);
    if (core.in_flight != nullptr) {
      core.in_flight->inc();
    }
    // One thread per busy slot at most: a slot is held until its thread is free again.
    if (core.idle == 0 && core.threads < core.slots) {
      ++core.threads;
      std::thread(&CallRunner::worker, core_).detach();
    }
  }
  core.cv.notify_one();

  std::unique_lock tl(task->mu);
  if (task->cv.wait_until(tl, deadline + grace_, [&] { return task->done; })) {
    return task->outcome;
  }
  task->abandoned = true;
  tl.unlock();
  {
    std::lock_guard lock(core.mu);
    ++core.abandoned;
    if (core.abandoned_gauge != nullptr) {
      core.abandoned_gauge->inc();
    }
  }
  on_abandon();
  CallOutcome out;
  out.status = CCM_STATUS_DEADLINE_EXCEEDED;
  out.abandoned = true;
  return out;
}

}  // namespace ccm::plugin
