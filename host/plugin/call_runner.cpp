// CallRunner implementation: a lazily grown pool bounded by the slot count.
#include "host/plugin/call_runner.hpp"

#include <pthread.h>

#include <exception>

#include "host/log/log.hpp"

namespace ccm::plugin {

CallRunner::CallRunner(std::string name, uint32_t slots, std::chrono::milliseconds grace,
                       metrics::Registry* registry)
    : name_(std::move(name)), slots_(slots == 0 ? 1 : slots), grace_(grace) {
  if (registry != nullptr) {
    if (auto* f = registry->gauge("ccm_provider_calls_in_flight",
                                  "Calls into the provider plugin running now, by capability.",
                                  {"capability"})) {
      in_flight_ = &f->labels({name_});
    }
    if (auto* f = registry->gauge(
            "ccm_provider_abandoned_calls",
            "Calls into the provider that overstayed their deadline and have not returned yet.",
            {"capability"})) {
      abandoned_gauge_ = &f->labels({name_});
    }
  }
}

CallRunner::~CallRunner() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) {
    // A thread stuck inside a hung plugin call cannot be joined; let it go (the process is
    // ending or the provider is being discarded, and plugins are never unloaded).
    t.detach();
  }
}

int CallRunner::abandonedInFlight() const {
  std::lock_guard lock(mu_);
  return abandoned_;
}

void CallRunner::worker() {
  pthread_setname_np(pthread_self(), ("ccm-" + name_).substr(0, 15).c_str());
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (stopping_ && queue_.empty()) {
      return;
    }
    auto task = queue_.front();
    queue_.pop_front();
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
    finish(task, std::move(outcome));
    lock.lock();
  }
}

void CallRunner::finish(const std::shared_ptr<Task>& task, CallOutcome outcome) {
  bool was_abandoned = false;
  {
    std::lock_guard lock(task->mu);
    task->outcome = std::move(outcome);
    task->done = true;
    was_abandoned = task->abandoned;
  }
  task->cv.notify_all();
  {
    std::lock_guard lock(mu_);
    --busy_;
    if (was_abandoned) {
      --abandoned_;
      if (abandoned_gauge_ != nullptr) {
        abandoned_gauge_->dec();
      }
    }
  }
  if (in_flight_ != nullptr) {
    in_flight_->dec();
  }
  slot_cv_.notify_one();
  if (was_abandoned) {
    log::warning("An abandoned provider call finally returned; its result was discarded",
                 {{"capability", name_}});
  }
}

CallOutcome CallRunner::run(std::chrono::steady_clock::time_point deadline,
                            std::function<ccm_status()> fn,
                            const std::function<void()>& on_abandon) {
  auto task = std::make_shared<Task>();
  task->fn = std::move(fn);
  {
    std::unique_lock lock(mu_);
    if (!slot_cv_.wait_until(lock, deadline, [&] { return busy_ < slots_ || stopping_; }) ||
        stopping_) {
      CallOutcome out;
      out.status = CCM_STATUS_DEADLINE_EXCEEDED;
      out.exception = stopping_ ? "the provider is shutting down"
                                : "every provider slot stayed busy until the deadline (" +
                                      std::to_string(slots_) + " slots, " +
                                      std::to_string(abandoned_) + " held by hung calls)";
      return out;
    }
    ++busy_;
    queue_.push_back(task);
    if (idle_ == 0 && threads_.size() < slots_ + static_cast<size_t>(abandoned_)) {
      threads_.emplace_back([this] { worker(); });
    }
  }
  if (in_flight_ != nullptr) {
    in_flight_->inc();
  }
  cv_.notify_one();

  std::unique_lock tl(task->mu);
  if (task->cv.wait_until(tl, deadline + grace_, [&] { return task->done; })) {
    return task->outcome;
  }
  task->abandoned = true;
  tl.unlock();
  {
    std::lock_guard lock(mu_);
    ++abandoned_;
  }
  if (abandoned_gauge_ != nullptr) {
    abandoned_gauge_->inc();
  }
  on_abandon();
  CallOutcome out;
  out.status = CCM_STATUS_DEADLINE_EXCEEDED;
  out.abandoned = true;
  return out;
}

}  // namespace ccm::plugin
