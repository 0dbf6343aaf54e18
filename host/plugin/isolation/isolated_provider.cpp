#include "host/plugin/isolation/isolated_provider.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <variant>

#include <fmt/format.h>

#include "host/log/log.hpp"
#include "host/plugin/isolation/values.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::plugin::isolation {

namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// How long, after the child exited, its last replies may still be read before the socket is
// shut (a process the plugin forked may hold the child's end open).
constexpr milliseconds kDrainBound{1000};
// How long a /metrics scrape waits for the child's metrics.
constexpr milliseconds kMetricsWait{2000};

double inSeconds(milliseconds d) { return std::chrono::duration<double>(d).count(); }

Status malformedReply(const Status& s) {
  return Status(Code::Internal, "the provider process sent a malformed reply: " + s.message());
}

// Decodes a reply payload: its status, then (when OK) the value get reads.
template <typename T, typename Get>
StatusOr<T> decodeReply(const StatusOr<std::string>& reply, Get get) {
  if (!reply.ok()) {
    return reply.status();
  }
  Reader r(*reply);
  r.u8();
  r.u64();
  Status s = r.status();
  if (!r.ok()) {
    return malformedReply(r.finish());
  }
  if (!s.ok()) {
    return s;
  }
  T value = get(r);
  if (Status f = r.finish(); !f.ok()) {
    return malformedReply(f);
  }
  return value;
}

Status decodeStatusReply(const StatusOr<std::string>& reply) {
  auto v = decodeReply<bool>(reply, [](Reader&) { return true; });
  return v.ok() ? okStatus() : v.status();
}

void putNodes(Writer& w, std::span<const NodeRef> nodes) {
  w.u32(static_cast<uint32_t>(nodes.size()));
  for (const auto& n : nodes) {
    putNode(w, n);
  }
}

// A shared host set encoded for the wire, and the refs it was encoded from.
struct EncodedHosts {
  std::shared_ptr<const std::string> bytes;
  const NodeRef* source = nullptr;
  size_t count = 0;
};
// The key of that form in a set's HostForms.
constexpr char kEncodedHostsKey = 0;

}  // namespace

IsolatedProvider::IsolatedProvider(IsolationOptions isolation, ProviderOptions options,
                                   std::string config, std::string config_source)
    : isolation_(std::move(isolation)),
      options_(std::move(options)),
      config_source_(std::move(config_source)),
      config_(std::move(config)) {
  if (options_.registry != nullptr) {
    auto* restarts = options_.registry->counter(
        "ccm_provider_process_restarts_total",
        "Restarts of the provider child process (--provider-isolation=process), by provider.",
        {"provider"});
    auto* up = options_.registry->gauge(
        "ccm_provider_process_up",
        "1 while the provider child process serves calls (--provider-isolation=process), by "
        "provider.",
        {"provider"});
    restarts_metric_ = restarts != nullptr ? &restarts->labels({isolation_.provider}) : nullptr;
    up_metric_ = up != nullptr ? &up->labels({isolation_.provider}) : nullptr;
    metrics_source_ = options_.registry->addExternalSource([this] { return childMetrics(); });
  }
}

IsolatedProvider::StartResult IsolatedProvider::start(IsolationOptions isolation,
                                                      ProviderOptions options, std::string config,
                                                      std::string config_source) {
  std::unique_ptr<IsolatedProvider> p(new IsolatedProvider(
      std::move(isolation), std::move(options), std::move(config), std::move(config_source)));
  IsolatedProvider* raw = p.get();
  // A stop (SIGTERM/SIGINT) during the first start ends the child; the start then fails as
  // Cancelled.
  // The flag covers a stop that comes before the child's pid is known (or before start()).
  std::stop_callback on_stop(raw->options_.stop, [raw] {
    std::lock_guard lock(raw->mu_);
    raw->start_cancelled_ = true;
    if (raw->pid_ > 0) {
      log::warning("Killing the provider process",
                   {{"pid", raw->pid_}, {"reason", "a stop was requested during start-up"}});
      ::kill(raw->pid_, SIGKILL);
    }
    raw->cv_.notify_all();
  });
  raw->supervisor_ = std::thread([raw] { raw->supervise(); });
  std::unique_lock lock(raw->mu_);
  raw->cv_.wait(lock, [raw] { return raw->first_done_; });
  if (raw->start_failure_.has_value()) {
    StartFailure failure = *raw->start_failure_;
    lock.unlock();
    if (raw->options_.stop.stop_requested()) {
      failure.status = Status(Code::Cancelled, "a stop was requested while the provider "
                                               "process started: " + failure.status.message());
    }
    return failure;  // the destructor joins the supervisor
  }
  return p;
}

IsolatedProvider::~IsolatedProvider() {
  if (options_.registry != nullptr) {
    options_.registry->removeExternalSource(metrics_source_);  // waits for a scrape
  }
  std::unique_lock lock(mu_);
  stopping_ = true;
  cancelled_ = true;
  cv_.notify_all();
  // Until the supervisor is done, every child it has published gets SIGTERM, then SIGKILL
  // after stop_grace: one it spawned just as stopping_ was set is published after this
  // point, and seen here then.
  pid_t terminated = -1;
  constexpr auto kNever = SteadyClock::time_point::max();
  SteadyClock::time_point kill_at = kNever;
  while (!supervisor_done_) {
    if (pid_ > 0 && pid_ != terminated) {
      ::kill(pid_, SIGTERM);
      terminated = pid_;
      kill_at = SteadyClock::now() + isolation_.stop_grace;
    }
    if (kill_at != kNever && SteadyClock::now() >= kill_at) {
      kill_at = kNever;
      lock.unlock();
      killChild(fmt::format("it did not stop within {}s of SIGTERM",
                            inSeconds(isolation_.stop_grace)));
      lock.lock();
      continue;
    }
    if (kill_at != kNever) {
      cv_.wait_until(lock, kill_at);
    } else {
      cv_.wait(lock);
    }
  }
  lock.unlock();
  if (supervisor_.joinable()) {
    supervisor_.join();
  }
}

void IsolatedProvider::supervise() {
  runtime::nameThisThread("provider-proc");
  superviseUntilStopped();
  std::lock_guard lock(mu_);
  supervisor_done_ = true;
  cv_.notify_all();
}

void IsolatedProvider::superviseUntilStopped() {
  std::mt19937_64 rng(std::random_device{}());
  milliseconds backoff = isolation_.first_backoff;
  bool first = true;
  for (;;) {
    SteadyClock::duration served = runOnce(first);
    std::unique_lock lock(mu_);
    if (first && !first_done_) {
      if (!start_failure_.has_value()) {
        start_failure_ = StartFailure{
            StartStep::Load,
            Status(Code::Unavailable,
                   fmt::format("the provider process exited during start-up ({})", last_exit_))};
      }
      first_done_ = true;
      state_ = State::Stopped;
      cv_.notify_all();
      return;
    }
    first = false;
    if (stopping_) {
      state_ = State::Stopped;
      return;
    }
    if (served >= isolation_.healthy_after) {
      backoff = isolation_.first_backoff;
    }
    // Jitter of -20% to +20%, so replicas that crashed together do not restart together.
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    auto delay = milliseconds(static_cast<int64_t>(static_cast<double>(backoff.count()) *
                                                   jitter(rng)));
    backoff = std::min(backoff * 2, isolation_.max_backoff);
    ++restarts_;
    if (restarts_metric_ != nullptr) {
      restarts_metric_->inc();
    }
    next_start_ = SteadyClock::now() + delay;
    log::warning("Restarting the provider process after a back-off",
                 {{"in", delay}, {"restart", restarts_}, {"lastExit", last_exit_}});
    cv_.wait_for(lock, delay, [this] { return stopping_; });
    if (stopping_) {
      state_ = State::Stopped;
      return;
    }
  }
}

SteadyClock::duration IsolatedProvider::runOnce(bool first) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || (first && start_cancelled_)) {
      state_ = State::Down;
      last_exit_ = "not started: the host is stopping";
      if (first) {
        start_failure_ = StartFailure{
            StartStep::Load, Status(Code::Cancelled, "the provider process was not started")};
      }
      return {};
    }
  }
  auto spawned = spawnChild(isolation_.executable, isolation_.argv);
  if (!spawned.ok()) {
    std::lock_guard lock(mu_);
    state_ = State::Down;
    last_exit_ = "not started: " + spawned.status().message();
    if (first) {
      start_failure_ = StartFailure{StartStep::Load, spawned.status()};
    }
    log::error("Cannot start the provider process", {{"err", spawned.status().message()}});
    return {};
  }
  const pid_t pid = spawned->pid;
  const int fd = spawned->fd;
  if (isolation_.spawned_for_test) {
    isolation_.spawned_for_test(pid);
  }
  std::string config;
  {
    std::lock_guard lock(mu_);
    pid_ = pid;
    ++generation_;
    state_ = State::Starting;
    start_failure_.reset();
    ready_info_.reset();
    channel_open_ = true;
    config = config_;
    if (first && start_cancelled_) {
      log::warning("Killing the provider process",
                   {{"pid", pid}, {"reason", "a stop was requested during start-up"}});
      ::kill(pid, SIGKILL);
    }
    cv_.notify_all();  // the destructor stops a child published while it runs
  }
  {
    std::lock_guard write(write_mu_);
    fd_ = fd;
  }
  log::info("Started the provider process", {{"pid", pid}});
  bool reader_ended = false;
  std::mutex reader_mu;
  std::condition_variable reader_cv;
  std::thread reader([&, fd] {
    readLoop(fd);
    {
      std::lock_guard lock(mu_);
      channel_open_ = false;
      cv_.notify_all();
    }
    std::lock_guard lock(reader_mu);
    reader_ended = true;
    reader_cv.notify_all();
  });
  {
    Writer create(FrameKind::Create);
    create.str(config);
    create.str(config_source_);
    (void)send(create.payload());  // a child that died early is seen below
  }

  SteadyClock::time_point served_since{};
  {
    std::unique_lock lock(mu_);
    auto started = [this, first] {
      return ready_info_.has_value() || start_failure_.has_value() || stopping_ ||
             !channel_open_ || (first && start_cancelled_);
    };
    bool settled = true;
    if (options_.start_timeout.count() > 0) {
      // The child enforces the start-up deadline itself; this bound is for a child that
      // cannot even do that.
      settled = cv_.wait_for(lock, options_.start_timeout + isolation_.answer_bound, started);
    } else {
      cv_.wait(lock, started);
    }
    if (ready_info_.has_value()) {
      state_ = State::Up;
      served_since = SteadyClock::now();
      if (up_metric_ != nullptr) {
        up_metric_->set(1);
      }
      if (first) {
        info_ = *ready_info_;
        first_done_ = true;
        cv_.notify_all();
      }
      log::info("The provider process serves calls", {{"pid", pid}});
    } else if (start_failure_.has_value() && !first) {
      log::error("The restarted provider process could not start the provider",
                 {{"err", start_failure_->status.message()}});
    }
    lock.unlock();
    if (!settled) {
      killChild(fmt::format("it did not finish starting within {}s",
                            inSeconds(options_.start_timeout + isolation_.answer_bound)));
    }
  }

  // Wait for the child to exit without reaping it, so its pid cannot be reused while killChild
  // may still signal it; then mark it gone and reap it.
  siginfo_t exited{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &exited, WEXITED | WNOWAIT) != 0 &&
         errno == EINTR) {
  }
  {
    std::lock_guard lock(mu_);
    pid_ = -1;
    cv_.notify_all();
  }
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  SteadyClock::duration served =
      served_since == SteadyClock::time_point{} ? SteadyClock::duration{}
                                                : SteadyClock::now() - served_since;
  // Replies the child sent before it died are still delivered.
  {
    std::unique_lock lock(reader_mu);
    reader_cv.wait_for(lock, kDrainBound, [&] { return reader_ended; });
  }
  {
    std::lock_guard write(write_mu_);
    ::shutdown(fd, SHUT_RDWR);
  }
  reader.join();
  {
    std::lock_guard write(write_mu_);
    ::close(fd);
    fd_ = -1;
  }
  std::string exit = describeExit(wait_status);
  bool stopping = false;
  {
    std::lock_guard lock(mu_);
    stopping = stopping_;
    state_ = State::Down;
    last_exit_ = exit;
    if (up_metric_ != nullptr) {
      up_metric_->set(0);
    }
    Status gone(Code::Unavailable,
                fmt::format("the provider process exited ({}) before answering; it is "
                            "restarted with back-off",
                            exit));
    for (auto& [id, p] : pending_) {
      p->failure = gone;
      p->done = true;
      p->cv.notify_all();
    }
    pending_.clear();
  }
  if (stopping) {
    log::info("The provider process stopped", {{"pid", pid}, {"status", exit}});
  } else {
    log::error("The provider process exited", {{"pid", pid}, {"status", exit}});
  }
  return served;
}

void IsolatedProvider::readLoop(int fd) {
  for (;;) {
    auto frame = readFrame(fd);
    if (!frame.ok()) {
      if (frame.status().code() != Code::Unavailable) {
        killChild("it sent a malformed frame: " + frame.status().message());
      }
      return;
    }
    auto kind = frameKind(*frame);
    Reader r(*frame);
    r.u8();
    if (kind == FrameKind::Reply || kind == FrameKind::Metrics) {
      uint64_t id = r.u64();
      std::lock_guard lock(mu_);
      auto it = pending_.find(id);
      if (r.ok() && it != pending_.end()) {
        it->second->reply = std::move(frame).value();
        it->second->done = true;
        it->second->cv.notify_all();
        pending_.erase(it);
      }
      continue;  // an unknown id: a call already given up on
    }
    if (kind == FrameKind::Ready) {
      ProviderInfo info = getProviderInfo(r);
      if (Status s = r.finish(); !s.ok()) {
        killChild("its ready message is malformed: " + s.message());
        return;
      }
      std::lock_guard lock(mu_);
      ready_info_ = std::move(info);
      cv_.notify_all();
      continue;
    }
    if (kind == FrameKind::StartFailed) {
      uint8_t step = r.u8();
      Status s = r.status();
      if (Status f = r.finish(); !f.ok()) {
        s = Status(Code::Internal, "the provider process sent a malformed start-up error: " +
                                       f.message());
      }
      std::lock_guard lock(mu_);
      start_failure_ = StartFailure{step == 1 ? StartStep::Create : StartStep::Load, s};
      cv_.notify_all();
      continue;
    }
    killChild(fmt::format("it sent an unexpected frame (kind {})",
                          frame->empty() ? 0 : static_cast<uint8_t>((*frame)[0])));
    return;
  }
}

void IsolatedProvider::killChild(std::string_view why) {
  std::lock_guard lock(mu_);
  if (pid_ > 0) {
    log::warning("Killing the provider process", {{"pid", pid_}, {"reason", why}});
    ::kill(pid_, SIGKILL);
  }
}

Status IsolatedProvider::send(std::string_view payload, std::string_view tail) {
  Status sent;
  {
    std::lock_guard write(write_mu_);
    if (fd_ < 0) {
      return Status(Code::Unavailable, "the provider process is gone");
    }
    sent = writeFrame(fd_, payload, isolation_.write_bound, tail);
    if (sent.code() == Code::DeadlineExceeded) {
      // Part of the frame may be in the stream: the channel is given up, so every later send
      // fails at once instead of waiting here.
      ::shutdown(fd_, SHUT_RDWR);
    }
  }
  if (sent.code() == Code::DeadlineExceeded) {
    {
      // No call can reach this child any more: it is not serving, even before it is reaped.
      std::lock_guard lock(mu_);
      if (state_ == State::Up) {
        state_ = State::Down;
        last_exit_ = "it stopped taking messages";
        if (up_metric_ != nullptr) {
          up_metric_->set(0);
        }
      }
    }
    killChild(fmt::format("it did not take a message within {}s",
                          inSeconds(isolation_.write_bound)));
    return Status(Code::Unavailable,
                  fmt::format("the provider process did not take the call within {}s ({}); it "
                              "is killed and restarted",
                              inSeconds(isolation_.write_bound), sent.message()));
  }
  return sent;
}

std::string IsolatedProvider::downMessageLocked() const {
  if (state_ == State::Starting) {
    return restarts_ == 0 ? "the provider process is starting"
                          : fmt::format("the provider process is restarting (restart {}, after "
                                        "{})",
                                        restarts_, last_exit_);
  }
  auto left = std::chrono::duration_cast<milliseconds>(next_start_ - SteadyClock::now());
  return fmt::format("the provider process is not running ({}); next start in {:.1f}s",
                     last_exit_.empty() ? "stopped" : last_exit_,
                     inSeconds(std::max(milliseconds(0), left)));
}

Status IsolatedProvider::health() const {
  std::lock_guard lock(mu_);
  if (state_ == State::Up) {
    return okStatus();
  }
  return Status(Code::Unavailable, downMessageLocked());
}

std::string IsolatedProvider::childMetrics() {
  auto pending = std::make_shared<Pending>();
  uint64_t id = 0;
  uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    if (state_ != State::Up) {
      return {};
    }
    generation = generation_;
    id = next_id_++;
    pending_[id] = pending;
  }
  Writer w(FrameKind::MetricsRequest);
  w.u64(id);
  Status sent = send(w.payload());
  std::unique_lock lock(mu_);
  bool answered = sent.ok() && pending->cv.wait_for(lock, kMetricsWait,
                                                      [&] { return pending->done; });
  if (!answered) {
    pending_.erase(id);
    return {};
  }
  lock.unlock();
  Reader r(pending->reply);
  r.u8();
  r.u64();
  std::string text(r.str());
  if (!r.finish().ok() || pending->reply.empty()) {
    return {};
  }
  // Counters never go backwards when a restarted child starts its own from zero.
  return carry_.adjust(text, generation);
}

StatusOr<std::string> IsolatedProvider::roundTrip(Method method, std::string_view call_name,
                                                  milliseconds timeout, const Args& args,
                                                  std::string_view tail) {
  auto pending = std::make_shared<Pending>();
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    if (cancelled_ && method != Method::Reconfigure) {
      return Status(Code::Cancelled, fmt::format("provider call {} cancelled: the host is "
                                                 "stopping or lost leadership",
                                                 call_name));
    }
    if (state_ != State::Up) {
      return Status(Code::Unavailable,
                    fmt::format("provider call {}: {}", call_name, downMessageLocked()));
    }
    id = next_id_++;
    pending_[id] = pending;
  }
  Status sent;
  {
    // The request is freed once it is in the socket, not kept while the call runs: a
    // load-balancer call's request holds every host, and with --concurrent-service-syncs
    // calls waiting on the provider the host kept that many copies of the host list. At
    // most kRequestSlots are built at once.
    request_slots_.acquire();
    class SlotRelease {
     public:
      explicit SlotRelease(std::counting_semaphore<kRequestSlots>& slots) : slots_(slots) {}
      SlotRelease(const SlotRelease&) = delete;
      SlotRelease& operator=(const SlotRelease&) = delete;
      ~SlotRelease() { slots_.release(); }

     private:
      std::counting_semaphore<kRequestSlots>& slots_;
    } slot(request_slots_);
    Writer w(FrameKind::Call);  // destroyed before `slot`: freed before the slot is given back
    w.u64(id);
    w.u8(static_cast<uint8_t>(method));
    args(w);
    sent = send(w.payload(), tail);
  }
  std::unique_lock lock(mu_);
  if (!sent.ok() && !pending->done) {
    pending_.erase(id);
    return Status(Code::Unavailable, fmt::format("provider call {}: {}", call_name,
                                                 sent.message()));
  }
  milliseconds bound = timeout + options_.grace + isolation_.answer_bound;
  if (!pending->cv.wait_for(lock, bound, [&] { return pending->done; })) {
    pending_.erase(id);
    lock.unlock();
    killChild(fmt::format("it did not answer {} within {}s", call_name, inSeconds(bound)));
    return Status(Code::DeadlineExceeded,
                  fmt::format("provider call {} got no answer from the provider process within "
                              "{}s; the process is killed and restarted",
                              call_name, inSeconds(bound)));
  }
  if (!pending->failure.ok()) {
    return pending->failure.withPrefix(fmt::format("provider call {}", call_name));
  }
  return std::move(pending->reply);
}

StatusOr<Existence> IsolatedProvider::instanceExists(const NodeRef& node) {
  auto reply = roundTrip(Method::InstanceExists, "instance_exists", options_.instances_timeout,
                         [&](Writer& w) { putNode(w, node); });
  return decodeReply<Existence>(reply, [](Reader& r) {
    uint8_t v = r.u8();
    if (v > static_cast<uint8_t>(Existence::NotFound)) {
      r.fail("existence out of range");
    }
    return static_cast<Existence>(v);
  });
}

StatusOr<Power> IsolatedProvider::instanceShutdown(const NodeRef& node) {
  auto reply = roundTrip(Method::InstanceShutdown, "instance_shutdown",
                         options_.instances_timeout, [&](Writer& w) { putNode(w, node); });
  return decodeReply<Power>(reply, [](Reader& r) {
    uint8_t v = r.u8();
    if (v > static_cast<uint8_t>(Power::Shutdown)) {
      r.fail("power state out of range");
    }
    return static_cast<Power>(v);
  });
}

StatusOr<std::optional<InstanceMetadata>> IsolatedProvider::instanceMetadata(
    const NodeRef& node) {
  auto reply = roundTrip(Method::InstanceMetadata, "instance_metadata",
                         options_.instances_timeout, [&](Writer& w) { putNode(w, node); });
  return decodeReply<std::optional<InstanceMetadata>>(
      reply, [](Reader& r) -> std::optional<InstanceMetadata> {
        if (!r.boolean()) {
          return std::nullopt;
        }
        return getMetadata(r);
      });
}

StatusOr<std::vector<MetadataResult>> IsolatedProvider::instanceMetadataBatch(
    std::span<const NodeRef> nodes) {
  auto reply = roundTrip(Method::InstanceMetadataBatch, "instance_metadata_batch",
                         options_.batch_timeout, [&](Writer& w) { putNodes(w, nodes); });
  return decodeReply<std::vector<MetadataResult>>(reply, [&](Reader& r) {
    std::vector<MetadataResult> out;
    uint32_t n = r.count(16);
    if (r.ok() && n != nodes.size()) {
      r.fail(fmt::format("{} results for {} nodes", n, nodes.size()));
    }
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
      Status s = r.status();
      if (s.ok()) {
        out.emplace_back(getMetadata(r));
      } else {
        out.emplace_back(std::move(s));
      }
    }
    return out;
  });
}

StatusOr<std::optional<LoadBalancerStatus>> IsolatedProvider::getLoadBalancer(
    std::string_view cluster_name, const ServiceRef& service) {
  auto reply = roundTrip(Method::GetLoadBalancer, "get_load_balancer",
                         options_.load_balancer_timeout, [&](Writer& w) {
                           w.str(cluster_name);
                           putService(w, service);
                         });
  return decodeReply<std::optional<LoadBalancerStatus>>(
      reply, [](Reader& r) -> std::optional<LoadBalancerStatus> {
        if (!r.boolean()) {
          return std::nullopt;
        }
        return getLoadBalancerStatus(r);
      });
}

StatusOr<std::string> IsolatedProvider::getLoadBalancerName(std::string_view cluster_name,
                                                            const ServiceRef& service) {
  auto reply = roundTrip(Method::GetLoadBalancerName, "get_load_balancer_name",
                         options_.load_balancer_timeout, [&](Writer& w) {
                           w.str(cluster_name);
                           putService(w, service);
                         });
  return decodeReply<std::string>(reply, [](Reader& r) { return std::string(r.str()); });
}

StatusOr<std::string> IsolatedProvider::hostsCall(Method method, std::string_view call_name,
                                                  std::string_view cluster_name,
                                                  const ServiceRef& service,
                                                  std::span<const NodeRef> nodes,
                                                  const std::string* encoded) {
  return roundTrip(
      method, call_name, options_.load_balancer_timeout,
      [&](Writer& w) {
        w.str(cluster_name);
        putService(w, service);
        if (encoded == nullptr) {
          putNodes(w, nodes);
        }
      },
      encoded == nullptr ? std::string_view() : std::string_view(*encoded));
}

StatusOr<LoadBalancerStatus> IsolatedProvider::ensureLoadBalancer(std::string_view cluster_name,
                                                                  const ServiceRef& service,
                                                                  std::span<const NodeRef> nodes) {
  auto reply = hostsCall(Method::EnsureLoadBalancer, "ensure_load_balancer", cluster_name,
                         service, nodes, nullptr);
  return decodeReply<LoadBalancerStatus>(reply, [](Reader& r) { return getLoadBalancerStatus(r); });
}

Status IsolatedProvider::updateLoadBalancer(std::string_view cluster_name,
                                            const ServiceRef& service,
                                            std::span<const NodeRef> nodes) {
  return decodeStatusReply(hostsCall(Method::UpdateLoadBalancer, "update_load_balancer",
                                     cluster_name, service, nodes, nullptr));
}

std::shared_ptr<const std::string> IsolatedProvider::encodedHosts(const SharedHosts& hosts) {
  if (hosts.forms == nullptr) {
    return nullptr;
  }
  auto form = std::static_pointer_cast<const EncodedHosts>(
      hosts.forms->get(&kEncodedHostsKey, [&] {
        // Encoded as putNodes writes them after a call's other arguments, into a buffer of
        // the exact size: at 100,000 hosts these are tens of megabytes, and growing them by
        // doubling, then copying them out, held about three times that at the wave's start.
        Writer size = Writer::sizer();
        putNodes(size, hosts.refs);
        Writer w = Writer::bare();
        w.reserve(size.size());
        putNodes(w, hosts.refs);
        auto out = std::make_shared<EncodedHosts>();
        out->bytes = std::make_shared<const std::string>(std::move(w).take());
        out->source = hosts.refs.data();
        out->count = hosts.refs.size();
        host_set_encodings_.fetch_add(1);
        return std::shared_ptr<const EncodedHosts>(std::move(out));
      }));
  if (form->source != hosts.refs.data() || form->count != hosts.refs.size()) {
    return nullptr;  // forms of another set: this call's hosts are encoded with the call
  }
  return form->bytes;
}

StatusOr<LoadBalancerStatus> IsolatedProvider::ensureLoadBalancerShared(
    std::string_view cluster_name, const ServiceRef& service, const SharedHosts& hosts) {
  auto encoded = encodedHosts(hosts);
  auto reply = hostsCall(Method::EnsureLoadBalancer, "ensure_load_balancer", cluster_name,
                         service, hosts.refs, encoded.get());
  return decodeReply<LoadBalancerStatus>(reply, [](Reader& r) { return getLoadBalancerStatus(r); });
}

Status IsolatedProvider::updateLoadBalancerShared(std::string_view cluster_name,
                                                  const ServiceRef& service,
                                                  const SharedHosts& hosts) {
  auto encoded = encodedHosts(hosts);
  return decodeStatusReply(hostsCall(Method::UpdateLoadBalancer, "update_load_balancer",
                                     cluster_name, service, hosts.refs, encoded.get()));
}

Status IsolatedProvider::ensureLoadBalancerDeleted(std::string_view cluster_name,
                                                   const ServiceRef& service) {
  return decodeStatusReply(roundTrip(Method::EnsureLoadBalancerDeleted,
                                     "ensure_load_balancer_deleted",
                                     options_.load_balancer_timeout, [&](Writer& w) {
                                       w.str(cluster_name);
                                       putService(w, service);
                                     }));
}

StatusOr<std::vector<Route>> IsolatedProvider::listRoutes(std::string_view cluster_name) {
  auto reply = roundTrip(Method::ListRoutes, "list_routes", options_.routes_timeout,
                         [&](Writer& w) { w.str(cluster_name); });
  return decodeReply<std::vector<Route>>(reply, [](Reader& r) {
    std::vector<Route> out;
    uint32_t n = r.count(16);
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
      out.push_back(getRoute(r));
    }
    return out;
  });
}

Status IsolatedProvider::createRoute(std::string_view cluster_name, std::string_view name_hint,
                                     const Route& route) {
  return decodeStatusReply(roundTrip(Method::CreateRoute, "create_route",
                                     options_.routes_timeout, [&](Writer& w) {
                                       w.str(cluster_name);
                                       w.str(name_hint);
                                       putRoute(w, route);
                                     }));
}

Status IsolatedProvider::deleteRoute(std::string_view cluster_name, const Route& route) {
  return decodeStatusReply(roundTrip(Method::DeleteRoute, "delete_route",
                                     options_.routes_timeout, [&](Writer& w) {
                                       w.str(cluster_name);
                                       putRoute(w, route);
                                     }));
}

void IsolatedProvider::cancelAll() {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  Writer w(FrameKind::CancelAll);
  (void)send(w.payload());
}

Status IsolatedProvider::reconfigure(std::string_view config) {
  Status s = decodeStatusReply(roundTrip(Method::Reconfigure, "reconfigure",
                                         options_.reconfigure_timeout,
                                         [&](Writer& w) { w.str(config); }));
  // Applied, or to take effect at the next start: a restarted child is created with it.
  if (s.ok() || s.code() == Code::Unimplemented) {
    std::lock_guard lock(mu_);
    config_ = std::string(config);
  }
  return s;
}

}  // namespace ccm::plugin::isolation
