// WorkQueue implementation: dirty/processing sets, delayed items, metrics.
#include "host/runtime/work_queue.hpp"

#include <algorithm>

#include "host/runtime/thread_name.hpp"

namespace ccm {
namespace {

double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

// Upstream's workqueue histograms: 1e-8 s .. 10 s in powers of ten.
std::vector<double> queueBuckets() {
  return metrics::exponentialBuckets(1e-8, 10, 10);
}

}  // namespace

struct WorkQueue::Metrics {
  metrics::Gauge* depth;
  metrics::Counter* adds;
  metrics::Histogram* queue_duration;
  metrics::Histogram* work_duration;
  metrics::Gauge* unfinished;
  metrics::Gauge* longest;
  metrics::Counter* retries;
};

WorkQueue::WorkQueue(std::string name, std::unique_ptr<ItemRateLimiter> limiter, Clock& clock,
                     metrics::Registry* registry)
    : name_(std::move(name)), limiter_(std::move(limiter)), clock_(clock) {
  if (!limiter_) {
    limiter_ = defaultControllerRateLimiter(clock_);
  }
  if (registry != nullptr) {
    const std::vector<std::string> labels{"name"};
    auto* depth = registry->gauge("workqueue_depth", "Current depth of workqueue", labels);
    auto* adds = registry->counter("workqueue_adds_total",
                                   "Total number of adds handled by workqueue", labels);
    auto* qd = registry->histogram(
        "workqueue_queue_duration_seconds",
        "How long in seconds an item stays in workqueue before being requested.", queueBuckets(),
        labels);
    auto* wd = registry->histogram("workqueue_work_duration_seconds",
                                   "How long in seconds processing an item from workqueue takes.",
                                   queueBuckets(), labels);
    auto* uf = registry->gauge(
        "workqueue_unfinished_work_seconds",
        "How many seconds of work has done that is in progress and hasn't been observed by "
        "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
        "threads by observing the rate at which this increases.",
        labels);
    auto* lr = registry->gauge("workqueue_longest_running_processor_seconds",
                               "How many seconds has the longest running processor for workqueue "
                               "been running.",
                               labels);
    auto* rt = registry->counter("workqueue_retries_total",
                                 "Total number of retries handled by workqueue", labels);
    if (depth && adds && qd && wd && uf && lr && rt) {
      std::vector<std::string> v{name_};
      metrics_ = std::make_unique<Metrics>(Metrics{&depth->labels(v), &adds->labels(v),
                                                   &qd->labels(v), &wd->labels(v), &uf->labels(v),
                                                   &lr->labels(v), &rt->labels(v)});
    }
  }
  timer_ = std::thread([this] { timerLoop(); });
}

WorkQueue::~WorkQueue() {
  shutDown();
  {
    std::lock_guard lock(mu_);
    stop_timer_ = true;
  }
  timer_cv_.notify_all();
  timer_.join();
}

void WorkQueue::addLocked(const std::string& item) {
  if (shutting_down_) {
    return;
  }
  if (dirty_.contains(item)) {
    return;
  }
  dirty_.insert(item);
  if (metrics_) {
    metrics_->adds->inc();
    added_at_.try_emplace(item, clock_.now());
  }
  if (processing_.contains(item)) {
    return;  // re-queued by done()
  }
  if (queue_.empty()) {
    ready_since_ = clock_.now();
  }
  queue_.push_back(item);
  if (metrics_) {
    metrics_->depth->set(static_cast<double>(queue_.size()));
  }
  cv_.notify_one();
}

void WorkQueue::add(const std::string& item) {
  std::lock_guard lock(mu_);
  addLocked(item);
}

void WorkQueue::addAfter(const std::string& item, std::chrono::nanoseconds delay) {
  std::lock_guard lock(mu_);
  if (shutting_down_) {
    return;
  }
  if (delay.count() <= 0) {
    addLocked(item);
    return;
  }
  Clock::MonoTime due = clock_.now() + delay;
  auto it = waiting_due_.find(item);
  if (it != waiting_due_.end()) {
    if (it->second <= due) {
      return;  // already waiting for an earlier time
    }
    auto range = waiting_.equal_range(it->second);
    for (auto w = range.first; w != range.second; ++w) {
      if (w->second == item) {
        waiting_.erase(w);
        break;
      }
    }
    it->second = due;
  } else {
    waiting_due_.emplace(item, due);
  }
  bool earliest = waiting_.empty() || due < waiting_.begin()->first;
  waiting_.emplace(due, item);
  if (earliest) {
    woken_ = true;
    timer_cv_.notify_one();
  }
}

void WorkQueue::addRateLimited(const std::string& item) {
  if (metrics_) {
    metrics_->retries->inc();
  }
  addAfter(item, limiter_->when(item));
}

void WorkQueue::forget(const std::string& item) {
  limiter_->forget(item);
}

int WorkQueue::numRequeues(const std::string& item) {
  return limiter_->numRequeues(item);
}

std::optional<std::string> WorkQueue::get() {
  auto items = getUpTo(1);
  if (items.empty()) {
    return std::nullopt;
  }
  return std::move(items.front());
}

std::vector<std::string> WorkQueue::getUpTo(size_t most, size_t sharers) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !queue_.empty() || shutting_down_; });
  sharers = std::max<size_t>(sharers, 1);
  size_t share = (queue_.size() + sharers - 1) / sharers;
  size_t n = std::min({queue_.size(), share, std::max<size_t>(most, 1)});
  std::vector<std::string> items;
  items.reserve(n);
  Clock::MonoTime now = clock_.now();
  for (size_t i = 0; i < n; ++i) {
    std::string item = std::move(queue_.front());
    queue_.pop_front();
    if (metrics_) {
      auto it = added_at_.find(item);
      if (it != added_at_.end()) {
        metrics_->queue_duration->observe(seconds(now - it->second));
        added_at_.erase(it);
      }
    }
    processing_[item] = now;
    dirty_.erase(item);
    items.push_back(std::move(item));
  }
  if (n > 0) {
    last_taken_ = now;
  }
  if (metrics_ && n > 0) {
    metrics_->depth->set(static_cast<double>(queue_.size()));
  }
  return items;
}

Status WorkQueue::progress(std::chrono::nanoseconds limit) const {
  std::lock_guard lock(mu_);
  if (shutting_down_) {
    return okStatus();
  }
  Clock::MonoTime now = clock_.now();
  auto secondsOf = [](std::chrono::nanoseconds d) {
    return std::chrono::duration_cast<std::chrono::seconds>(d).count();
  };
  for (const auto& [item, started] : processing_) {
    if (now - started > limit) {
      return Status(Code::Unavailable, "queue " + name_ + ": item " + item + " in work for " +
                                           std::to_string(secondsOf(now - started)) + "s");
    }
  }
  if (!queue_.empty()) {
    Clock::MonoTime since = std::max(last_taken_, ready_since_);
    if (now - since > limit) {
      return Status(Code::Unavailable, "queue " + name_ + ": " + std::to_string(queue_.size()) +
                                           " items ready and none taken by a worker for " +
                                           std::to_string(secondsOf(now - since)) + "s");
    }
  }
  return okStatus();
}

void WorkQueue::done(const std::string& item) {
  std::lock_guard lock(mu_);
  auto it = processing_.find(item);
  if (it == processing_.end()) {
    return;
  }
  if (metrics_) {
    metrics_->work_duration->observe(seconds(clock_.now() - it->second));
  }
  processing_.erase(it);
  if (dirty_.contains(item)) {
    if (queue_.empty()) {
      ready_since_ = clock_.now();
    }
    queue_.push_back(item);
    if (metrics_) {
      metrics_->depth->set(static_cast<double>(queue_.size()));
    }
    cv_.notify_one();
  }
  if (processing_.empty()) {
    drain_cv_.notify_all();
  }
}

void WorkQueue::shutDown() {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  waiting_.clear();
  waiting_due_.clear();
  cv_.notify_all();
  timer_cv_.notify_all();
}

void WorkQueue::shutDownWithDrain() {
  std::unique_lock lock(mu_);
  shutting_down_ = true;
  waiting_.clear();
  waiting_due_.clear();
  cv_.notify_all();
  drain_cv_.wait(lock, [this] { return queue_.empty() && processing_.empty(); });
}

bool WorkQueue::shuttingDown() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::len() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

size_t WorkQueue::delayedLen() const {
  std::lock_guard lock(mu_);
  return waiting_.size();
}

void WorkQueue::wake() {
  std::lock_guard lock(mu_);
  woken_ = true;
  timer_cv_.notify_all();
}

void WorkQueue::updateGaugesLocked() {
  if (!metrics_) {
    return;
  }
  Clock::MonoTime now = clock_.now();
  double total = 0;
  double longest = 0;
  for (const auto& [item, start] : processing_) {
    double s = seconds(now - start);
    total += s;
    longest = std::max(longest, s);
  }
  metrics_->unfinished->set(total);
  metrics_->longest->set(longest);
}

void WorkQueue::timerLoop() {
  runtime::nameThisThread("wq-" + name_);
  // The gauges are refreshed at least this often; delayed items are checked at least this
  // often too, which also bounds how late a FakeClock-driven item can be without wake().
  constexpr auto kTick = std::chrono::milliseconds(500);
  std::unique_lock lock(mu_);
  while (!stop_timer_) {
    Clock::MonoTime now = clock_.now();
    while (!waiting_.empty() && waiting_.begin()->first <= now) {
      std::string item = std::move(waiting_.begin()->second);
      waiting_.erase(waiting_.begin());
      waiting_due_.erase(item);
      addLocked(item);
    }
    updateGaugesLocked();
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(kTick);
    if (!waiting_.empty()) {
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                waiting_.begin()->first - now));
    }
    woken_ = false;
    timer_cv_.wait_for(lock, wait, [this] { return stop_timer_ || woken_; });
  }
}

}  // namespace ccm
