// HostEnv: what the OpenStack core needs from its host (logs, clocks, cancellation, secrets,
// metrics), as a small interface so the core never sees the C ABI; CallContext: one host call
// (its id and deadline) as the core sees it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ccm/types.hpp"

namespace ccm::openstack {

enum class LogLevel { Error, Warning, Info, Debug };
enum class MetricKind { Counter, Gauge, Histogram };

using Fields = std::vector<std::pair<std::string, std::string>>;

// "message key=\"value\" ..." (klog's structured text form).
std::string formatLog(std::string_view message, const Fields& fields);

// THREAD: every method may be called from any thread.
class HostEnv {
 public:
  virtual ~HostEnv() = default;
  virtual void log(LogLevel level, std::string_view message) = 0;
  // A message with structured key/value fields. A host that keeps fields apart (ABI 1.1's
  // log_fields: JSON logs get them as keys) overrides this; the default appends them to the
  // text in klog's form.
  virtual void logFields(LogLevel level, std::string_view message, const Fields& fields) {
    log(level, formatLog(message, fields));
  }
  virtual bool isCancelled(uint64_t call_id) = 0;
  virtual int64_t monotonicNs() = 0;
  virtual int64_t unixNs() = 0;
  // Values registered here are redacted from every log line the host writes.
  virtual void registerSecret(std::string_view value) = 0;
  virtual void metric(MetricKind kind, std::string_view name, std::string_view help,
                      const Fields& labels, double value) = 0;
};


inline void logAt(HostEnv& env, LogLevel level, std::string_view message,
                  const Fields& fields = {}) {
  if (fields.empty()) {
    env.log(level, message);
  } else {
    env.logFields(level, message, fields);
  }
}

// One call from the host. OWNERSHIP: refers to env, which outlives every call.
// THREAD: used by the thread running the call only.
class CallContext {
 public:
  CallContext(HostEnv& env, uint64_t call_id, int64_t deadline_monotonic_ns)
      : env_(&env), call_id_(call_id), deadline_ns_(deadline_monotonic_ns) {}

  // A lifecycle call the core was not given a call_id for (the SDK's create): no deadline,
  // and the host is not asked about cancellation.
  static CallContext lifecycle(HostEnv& env) {
    CallContext c(env, 0, 0);
    c.probe_cancellation_ = false;
    return c;
  }

  HostEnv& env() const { return *env_; }
  uint64_t id() const { return call_id_; }
  bool hasDeadline() const { return deadline_ns_ != 0; }

  // Time left before the deadline on the host's monotonic clock; nullopt without a deadline.
  std::optional<std::chrono::nanoseconds> remaining() const {
    if (deadline_ns_ == 0) {
      return std::nullopt;
    }
    return std::chrono::nanoseconds(deadline_ns_ - env_->monotonicNs());
  }

  // CANCELLED once the host says stop, DEADLINE_EXCEEDED past the deadline, else OK.
  sdk::Status checkAlive() const {
    if (auto left = remaining(); left && left->count() <= 0) {
      return sdk::Status(CCM_STATUS_DEADLINE_EXCEEDED, "the call's deadline has passed");
    }
    if (probe_cancellation_ && env_->isCancelled(call_id_)) {
      return sdk::Status(CCM_STATUS_CANCELLED, "the host cancelled the call");
    }
    return {};
  }

  void info(std::string_view msg, const Fields& f = {}) const {
    logAt(*env_, LogLevel::Info, msg, f);
  }
  void debug(std::string_view msg, const Fields& f = {}) const {
    logAt(*env_, LogLevel::Debug, msg, f);
  }
  void warning(std::string_view msg, const Fields& f = {}) const {
    logAt(*env_, LogLevel::Warning, msg, f);
  }
  void error(std::string_view msg, const Fields& f = {}) const {
    logAt(*env_, LogLevel::Error, msg, f);
  }

 private:
  HostEnv* env_;
  uint64_t call_id_;
  int64_t deadline_ns_;
  bool probe_cancellation_ = true;
};

// The timeout for one HTTP request of this call: the configured request timeout, shortened
// to what is left before the call's deadline. DEADLINE_EXCEEDED / CANCELLED when nothing is
// left or the host cancelled the call.
inline sdk::Result<std::chrono::milliseconds> requestTimeout(const CallContext& call,
                                                          std::chrono::nanoseconds configured) {
  sdk::Status alive = call.checkAlive();
  if (!alive.ok()) {
    return alive;
  }
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(configured);
  if (auto left = call.remaining()) {
    timeout = std::min(timeout, std::chrono::duration_cast<std::chrono::milliseconds>(*left));
  }
  if (timeout.count() <= 0) {
    return sdk::Status(CCM_STATUS_DEADLINE_EXCEEDED, "the call's deadline has passed");
  }
  return timeout;
}

}  // namespace ccm::openstack
