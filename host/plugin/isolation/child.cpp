#include "host/plugin/isolation/child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "host/log/log.hpp"
#include "host/plugin/abi_provider.hpp"
#include "host/plugin/isolation/dispatch.hpp"
#include "host/plugin/isolation/values.hpp"
#include "host/plugin/isolation/wire.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::plugin::isolation {

namespace {

// How often idle workers look for hosts kept past HostSetCache's idle time.
constexpr auto kIdleCheck = std::chrono::seconds(10);

// Runs each Call on a worker; a new worker starts whenever none is idle, so a slow call
// never delays the ones behind it (the adapter enforces the plugin's concurrency). The
// load-balancer calls of a wave share one decoded host set (HostSetCache), dropped by an idle
// worker once the wave is over.
class Workers {
 public:
  Workers(Provider& provider, int fd) : provider_(provider), fd_(fd) {}

  void submit(std::string payload) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(payload));
    if (idle_ == 0) {
      std::thread([this] { work(); }).detach();
    } else {
      cv_.notify_one();
    }
  }

  // One frame at a time on the socket. A lost host closes it; the main loop sees that.
  void send(const std::string& payload) {
    std::lock_guard write(write_mu_);
    (void)writeFrame(fd_, payload);
  }

 private:
  void work() {
    runtime::nameThisThread("provider-call");
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_;
      while (queue_.empty()) {
        if (cv_.wait_for(lock, kIdleCheck) == std::cv_status::timeout && queue_.empty()) {
          lock.unlock();
          hosts_.dropIdle();
          lock.lock();
        }
      }
      --idle_;
      std::string payload = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      send(serveCall(provider_, payload, &hosts_));
      lock.lock();
    }
  }

  Provider& provider_;
  int fd_;
  HostSetCache hosts_;
  std::mutex write_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;  // guarded by mu_
  int idle_ = 0;                   // guarded by mu_
};

// Tells the host that a start-up step failed. An abandoned step (past the start-up deadline,
// or interrupted) is still running in the plugin: the process leaves at once.
int startFailed(int fd, uint8_t step, const Status& s) {
  Writer w(FrameKind::StartFailed);
  w.u8(step);
  w.status(s);
  (void)writeFrame(fd, w.payload());
  if (s.code() == Code::DeadlineExceeded || s.code() == Code::Cancelled) {
    std::fflush(nullptr);
    std::_Exit(1);
  }
  return 1;
}

}  // namespace

std::optional<int> childFdFromEnvironment() {
  const char* v = std::getenv(kChildFdVariable);
  if (v == nullptr) {
    return std::nullopt;
  }
  char* end = nullptr;
  long fd = std::strtol(v, &end, 10);
  ::unsetenv(kChildFdVariable);
  if (end == v || *end != '\0' || fd < 0 || fd > 65535) {
    return std::nullopt;
  }
  // The socket was inherited across exec, so it lacks close-on-exec; set it now, so that a
  // process the plugin spawns cannot hold the channel to the host open.
  int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
  if (flags < 0 || ::fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC) != 0) {
    return std::nullopt;
  }
  return static_cast<int>(fd);
}

int runChild(int fd, const LoadOptions& load, const ProviderOptions& options) {
  // The host stops this process with SIGTERM (then SIGKILL): the default action is right.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);

  auto first = readFrame(fd);
  if (!first.ok() || frameKind(*first) != FrameKind::Create) {
    log::error("Provider process: no start request from the host",
               {{"err", first.ok() ? "unexpected first frame" : first.status().message()}});
    return 1;
  }
  Reader r(*first);
  r.u8();
  std::string config(r.str());
  std::string config_source(r.str());
  if (Status s = r.finish(); !s.ok()) {
    return startFailed(fd, 0, s);
  }
  auto loaded = PluginLoader::load(load);
  if (!loaded.ok()) {
    return startFailed(fd, 0, loaded.status());
  }
  auto provider = AbiProvider::create(*loaded, config, config_source, options);
  if (!provider.ok()) {
    return startFailed(fd, 1, provider.status());
  }
  Writer ready(FrameKind::Ready);
  putProviderInfo(ready, (*provider)->info());
  if (!writeFrame(fd, ready.payload()).ok()) {
    return 1;
  }
  // Never destroyed: calls may still run on workers when the host goes away, and the
  // process ends right after.
  auto* workers = new Workers(**provider, fd);  // NOLINT(cppcoreguidelines-owning-memory)
  for (;;) {
    auto frame = readFrame(fd);
    if (!frame.ok()) {
      break;
    }
    auto kind = frameKind(*frame);
    if (kind == FrameKind::Call) {
      workers->submit(std::move(frame).value());
    } else if (kind == FrameKind::CancelAll) {
      (*provider)->cancelAll();
    } else if (kind == FrameKind::MetricsRequest) {
      Reader request(*frame);
      request.u8();
      uint64_t id = request.u64();
      if (request.finish().ok() && options.registry != nullptr) {
        Writer answer(FrameKind::Metrics);
        answer.u64(id);
        answer.str(options.registry->exposition());
        workers->send(answer.payload());
      }
    } else {
      log::warning("Provider process: ignored an unexpected frame from the host",
                   {{"kind", frame->empty() ? 0 : static_cast<int>(
                                                      static_cast<uint8_t>((*frame)[0]))}});
    }
  }
  // The host closed the socket (it stops, or it died): leave without unloading anything.
  std::fflush(nullptr);
  std::_Exit(0);
}

}  // namespace ccm::plugin::isolation
