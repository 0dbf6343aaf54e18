// CallPool: runs the route controller's provider calls with a hard bound on how many are in
// flight (upstream's 200). Threads are started on demand up to the bound and kept until
// stop(); tasks beyond the bound wait in a FIFO queue (their provider deadline starts only
// when they run).
//
// THREAD: submit()/pending()/waitIdle() from any thread; stop() from the owner.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ccm::controllers::route {

class CallPool {
 public:
  CallPool(std::string name, size_t max_threads);
  ~CallPool();  // stop()
  CallPool(const CallPool&) = delete;
  CallPool& operator=(const CallPool&) = delete;

  // Queues a task; ignored after stop().
  void submit(std::function<void()> task);
  // Tasks queued or running.
  size_t pending() const;
  // The most tasks that ever ran at once.
  size_t peakRunning() const;
  // Blocks until nothing is queued or running.
  void waitIdle() const;
  // Drops queued tasks, waits for running ones and joins the threads. Idempotent.
  void stop();

 private:
  void run(size_t index);

  const std::string name_;
  const size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;               // workers wait for tasks
  mutable std::condition_variable idle_cv_;  // waitIdle waits here
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  size_t running_ = 0;                       // guarded by mu_
  size_t peak_ = 0;                          // guarded by mu_
  size_t idle_threads_ = 0;                  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;         // guarded by mu_ (appended), joined by stop()
};

}  // namespace ccm::controllers::route
