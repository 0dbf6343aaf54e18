// WorkQueue: the controllers' rate-limited, delaying work queue with upstream's semantics.
//
// - An item (a string key such as a node name or "namespace/name") is queued at most once.
// - An item handed out by get() is "processing" until done(); it is never handed to a second
//   worker meanwhile. Adding it again while it is processing marks it dirty, and done() puts
//   it back in the queue.
// - addAfter() delays an item; addRateLimited() delays it by the item rate limiter's answer;
//   forget() clears the item's failure history; numRequeues() reports it.
// - shutDown() ignores further adds and wakes the workers; get() still hands out what is
//   already queued and returns nullopt once the queue is empty. shutDownWithDrain() also waits
//   until every handed-out item is done.
// Metrics (when a registry is given): workqueue_depth, workqueue_adds_total,
// workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
// workqueue_unfinished_work_seconds, workqueue_longest_running_processor_seconds,
// workqueue_retries_total, all labelled name=<queue name>.
//
// One background thread per queue ("wq-<name>") moves delayed items into the queue when
// they become due (judged by the Clock) and refreshes the unfinished-work gauges.
// THREAD: every public method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/rate_limiter.hpp"
#include "host/runtime/status.hpp"

namespace ccm {

class WorkQueue {
 public:
  // `limiter` null means defaultControllerRateLimiter(clock). `registry` may be null (no
  // metrics). The clock and the registry must outlive the queue.
  explicit WorkQueue(std::string name, std::unique_ptr<ItemRateLimiter> limiter = nullptr,
                     Clock& clock = Clock::real(), metrics::Registry* registry = nullptr);
  ~WorkQueue();  // shuts down (without draining) and joins the background thread
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  const std::string& name() const { return name_; }

  void add(const std::string& item);
  // Adds the item once `delay` has passed (at once when delay <= 0). If the item is already
  // waiting, the earlier of the two times wins.
  void addAfter(const std::string& item, std::chrono::nanoseconds delay);
  // addAfter(item, limiter.when(item)); counts a retry.
  void addRateLimited(const std::string& item);
  void forget(const std::string& item);
  int numRequeues(const std::string& item);

  // Blocks until an item is available (returns it, now processing) or the queue is shut
  // down and empty (returns nullopt). Every returned item must be passed to done().
  std::optional<std::string> get();
  // Like get(), but hands out up to `most` queued items at once (at least one): a fair share
  // of the queue among `sharers` workers, ceil(len / sharers), so a short queue is still
  // spread over the workers. Empty once the queue is shut down and empty. Every returned
  // item must be passed to done().
  std::vector<std::string> getUpTo(size_t most, size_t sharers = 1);
  void done(const std::string& item);

  void shutDown();
  // shutDown(), then waits until the queue is empty and no item is processing. Needs workers
  // still calling get()/done().
  void shutDownWithDrain();
  bool shuttingDown() const;

  // Items ready to be handed out (not counting delayed or processing ones).
  size_t len() const;
  // Items waiting for their addAfter() time.
  size_t delayedLen() const;

  // Whether the workers make progress (for a controller's health check): UNAVAILABLE when an
  // item has been in work longer than `limit`, or when ready items have waited `limit`
  // without any being handed out (the workers are stuck or gone). OK once shut down.
  Status progress(std::chrono::nanoseconds limit) const;

  // Makes the background thread look at the clock again (tests advance a FakeClock, then
  // call this).
  void wake();

 private:
  struct Metrics;
  void addLocked(const std::string& item);
  void timerLoop();
  void updateGaugesLocked();

  const std::string name_;
  std::unique_ptr<ItemRateLimiter> limiter_;
  Clock& clock_;
  std::unique_ptr<Metrics> metrics_;  // null without a registry

  mutable std::mutex mu_;
  std::condition_variable cv_;             // getters wait here; signalled on add and shutdown
  std::condition_variable timer_cv_;       // the background thread waits here
  std::condition_variable drain_cv_;       // shutDownWithDrain waits here
  std::deque<std::string> queue_;          // guarded by mu_
  std::unordered_set<std::string> dirty_;  // guarded by mu_
  std::unordered_map<std::string, Clock::MonoTime> processing_;  // guarded by mu_; start time
  std::unordered_map<std::string, Clock::MonoTime> added_at_;    // guarded by mu_; for metrics
  std::multimap<Clock::MonoTime, std::string> waiting_;          // guarded by mu_; due time -> item
  std::unordered_map<std::string, Clock::MonoTime> waiting_due_;  // guarded by mu_
  Clock::MonoTime last_taken_{};   // guarded by mu_; when get() last handed items out
  Clock::MonoTime ready_since_{};  // guarded by mu_; when queue_ last became non-empty
  bool shutting_down_ = false;                                    // guarded by mu_
  bool stop_timer_ = false;                                       // guarded by mu_
  bool woken_ = false;                                            // guarded by mu_
  std::thread timer_;
};

}  // namespace ccm
