// Compactor: the API server's etcd compaction on a timer. Every interval it compacts the
// store at the resourceVersion it noted on its previous run (so between one and two
// intervals of history stay), after which watches, exact lists and continue tokens older
// than that point get 410 Expired.
//
// THREAD: start/stop from the owner's thread; the timer runs on the io_context's threads.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "kubesim/object_store.hpp"

namespace ccm::kubesim {

class Compactor {
 public:
  Compactor(boost::asio::io_context& io, ObjectStore& store, std::chrono::milliseconds interval);
  ~Compactor();

  // Notes the current resourceVersion and schedules the runs; a zero interval never runs.
  void start();
  void stop();

 private:
  void schedule();  // mu_ held

  ObjectStore& store_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  boost::asio::steady_timer timer_;  // guarded by mu_
  uint64_t noted_rv_ = 0;           // guarded by mu_
  bool running_ = false;            // guarded by mu_
};

}  // namespace ccm::kubesim
