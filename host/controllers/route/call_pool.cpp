// The route controller's bounded call pool.
#include "host/controllers/route/call_pool.hpp"

#include <algorithm>

#include "host/runtime/thread_name.hpp"

namespace ccm::controllers::route {

CallPool::CallPool(std::string name, size_t max_threads)
    : name_(std::move(name)), max_threads_(std::max<size_t>(1, max_threads)) {}

CallPool::~CallPool() {
  stop();
}

void CallPool::submit(std::function<void()> task) {
  std::lock_guard lock(mu_);
  if (stopping_) {
    return;
  }
  queue_.push_back(std::move(task));
  if (queue_.size() > idle_threads_ && threads_.size() < max_threads_) {
    size_t index = threads_.size();
    threads_.emplace_back([this, index] { run(index); });
  }
  cv_.notify_one();
}

size_t CallPool::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size() + running_;
}

size_t CallPool::peakRunning() const {
  std::lock_guard lock(mu_);
  return peak_;
}

void CallPool::waitIdle() const {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

void CallPool::stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) {
    t.join();
  }
  idle_cv_.notify_all();
}

void CallPool::run(size_t index) {
  runtime::nameThisThread(name_ + "-" + std::to_string(index));
  std::unique_lock lock(mu_);
  while (true) {
    ++idle_threads_;
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    --idle_threads_;
    if (stopping_) {
      return;
    }
    auto task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    peak_ = std::max(peak_, running_);
    lock.unlock();
    task();
    lock.lock();
    --running_;
    if (queue_.empty() && running_ == 0) {
      idle_cv_.notify_all();
    }
  }
}

}  // namespace ccm::controllers::route
