// CallContext: one host call (its id and deadline) as the OpenStack core sees it, over the
// SDK's Host (ccm/provider.hpp), which carries the host's logging, metrics, clocks, secrets
// and cancellation services.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ccm/provider.hpp"
#include "ccm/types.hpp"

namespace ccm::openstack {

// One call from the host. OWNERSHIP: refers to host, which outlives every call.
// THREAD: used by the thread running the call only.
class CallContext {
 public:
  CallContext(const sdk::Host& host, uint64_t call_id, int64_t deadline_monotonic_ns)
      : host_(&host), call_id_(call_id), deadline_ns_(deadline_monotonic_ns) {}

  // A lifecycle call the core was not given a call_id for (the SDK's create): no deadline,
  // and the host is not asked about cancellation.
  static CallContext lifecycle(const sdk::Host& host) {
    CallContext c(host, 0, 0);
    c.probe_cancellation_ = false;
    return c;
  }

  const sdk::Host& host() const { return *host_; }
  uint64_t id() const { return call_id_; }
  bool hasDeadline() const { return deadline_ns_ != 0; }

  // Time left before the deadline on the host's monotonic clock; nullopt without a deadline.
  std::optional<std::chrono::nanoseconds> remaining() const {
    if (deadline_ns_ == 0) {
      return std::nullopt;
    }
    return std::chrono::nanoseconds(deadline_ns_ - host_->nowMonotonicNs());
  }

  // CANCELLED once the host says stop, DEADLINE_EXCEEDED past the deadline, else OK.
  sdk::Status checkAlive() const {
    if (auto left = remaining(); left && left->count() <= 0) {
      return sdk::Error::deadlineExceeded("the call's deadline has passed");
    }
    if (probe_cancellation_) {
      auto probe = host_->slot(&ccm_host_services::is_cancelled,
                               offsetof(ccm_host_services, is_cancelled));
      if (probe != nullptr && probe(host_->handle(), call_id_)) {
        return sdk::Error::cancelled("the host cancelled the call");
      }
    }
    return {};
  }

  void info(std::string_view msg, const sdk::Labels& f = {}) const { log(CCM_LOG_INFO, msg, f); }
  void debug(std::string_view msg, const sdk::Labels& f = {}) const {
    log(CCM_LOG_DEBUG, msg, f);
  }
  void warning(std::string_view msg, const sdk::Labels& f = {}) const {
    log(CCM_LOG_WARNING, msg, f);
  }
  void error(std::string_view msg, const sdk::Labels& f = {}) const {
    log(CCM_LOG_ERROR, msg, f);
  }

 private:
  void log(ccm_log_level level, std::string_view msg, const sdk::Labels& fields) const {
    if (fields.empty()) {
      host_->log(level, msg);
    } else {
      host_->logFields(level, msg, fields);
    }
  }

  const sdk::Host* host_;
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
    return sdk::Error::deadlineExceeded("the call's deadline has passed");
  }
  return timeout;
}

}  // namespace ccm::openstack
