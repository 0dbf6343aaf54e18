// Compactor: periodic compaction at the previous run's resourceVersion.
#include "kubesim/compactor.hpp"

#include "host/log/log.hpp"

namespace ccm::kubesim {

Compactor::Compactor(boost::asio::io_context& io, ObjectStore& store,
                     std::chrono::milliseconds interval)
    : store_(store), interval_(interval), timer_(io) {}

Compactor::~Compactor() {
  stop();
}

void Compactor::start() {
  std::lock_guard lock(mu_);
  if (running_ || interval_.count() <= 0) {
    return;
  }
  running_ = true;
  noted_rv_ = store_.currentRv();
  schedule();
}

void Compactor::stop() {
  std::lock_guard lock(mu_);
  running_ = false;
  timer_.cancel();
}

void Compactor::schedule() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) {
      return;
    }
    std::lock_guard lock(mu_);
    if (!running_) {
      return;
    }
    store_.compactTo(noted_rv_);
    ccm::log::infoV(2, "compacted", {{"resourceVersion", noted_rv_}});
    noted_rv_ = store_.currentRv();
    schedule();
  });
}

}  // namespace ccm::kubesim
