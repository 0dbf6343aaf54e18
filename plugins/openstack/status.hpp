// Status and StatusOr<T> for the OpenStack plugin: errors as values, using the plugin ABI's code
// set so that a result maps one to one onto a ccm_status at the boundary. The plugin keeps its
// own copy (it links nothing of the host).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "ccm/provider_abi.h"

namespace ccm::openstack {

enum class Code : int32_t {
  Ok = CCM_STATUS_OK,
  Cancelled = CCM_STATUS_CANCELLED,
  InvalidArgument = CCM_STATUS_INVALID_ARGUMENT,
  DeadlineExceeded = CCM_STATUS_DEADLINE_EXCEEDED,
  NotFound = CCM_STATUS_NOT_FOUND,
  AlreadyExists = CCM_STATUS_ALREADY_EXISTS,
  PermissionDenied = CCM_STATUS_PERMISSION_DENIED,
  ResourceExhausted = CCM_STATUS_RESOURCE_EXHAUSTED,
  FailedPrecondition = CCM_STATUS_FAILED_PRECONDITION,
  Aborted = CCM_STATUS_ABORTED,
  Unimplemented = CCM_STATUS_UNIMPLEMENTED,
  Internal = CCM_STATUS_INTERNAL,
  Unavailable = CCM_STATUS_UNAVAILABLE,
  Unauthenticated = CCM_STATUS_UNAUTHENTICATED,
  ImplementedElsewhere = CCM_STATUS_IMPLEMENTED_ELSEWHERE,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message, std::chrono::milliseconds retry_after = {})
      : code_(code), message_(std::move(message)), retry_after_(retry_after) {}

  bool ok() const { return code_ == Code::Ok; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // How long the caller should wait before retrying (0 = its own back-off).
  std::chrono::milliseconds retryAfter() const { return retry_after_; }

  // FAILED_PRECONDITION because the cloud is merely busy with the object (a load balancer
  // or one of its children still PENDING_*): normal progress, retried later. retry_after is
  // what the cloud said (0 when it said nothing; the caller then picks a growing delay).
  static Status busy(std::string message, std::chrono::milliseconds retry_after = {}) {
    Status st(Code::FailedPrecondition, std::move(message), retry_after);
    st.busy_ = true;
    return st;
  }
  bool isBusy() const { return busy_; }

  // A copy whose message is "<prefix>: <message>"; code, retry-after and busy are kept.
  Status withPrefix(const std::string& prefix) const {
    Status st(code_, prefix + ": " + message_, retry_after_);
    st.busy_ = busy_;
    return st;
  }
  // A copy with this retry-after (and this text appended to the message).
  Status withRetryAfter(std::chrono::milliseconds retry_after, const std::string& note) const {
    Status st(code_, message_ + note, retry_after);
    st.busy_ = busy_;
    return st;
  }

 private:
  Code code_ = Code::Ok;
  std::string message_;
  std::chrono::milliseconds retry_after_{0};
  bool busy_ = false;
};

inline Status okStatus() {
  return {};
}

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) {
      status_ = Status(Code::Internal, "StatusOr built from OK without a value");
    }
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ccm::openstack

// Early-return helpers for Status-returning code.
#define CCM_OS_CONCAT_INNER(a, b) a##b
#define CCM_OS_CONCAT(a, b) CCM_OS_CONCAT_INNER(a, b)
#define CCM_OS_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::ccm::openstack::Status ccm_os_status_ = (expr); \
    if (!ccm_os_status_.ok()) {                       \
      return ccm_os_status_;                          \
    }                                                 \
  } while (false)
// NOLINTBEGIN(bugprone-macro-parentheses): tmp is the name this declares and lhs a declaration
// ("Type name") or an lvalue; neither may be wrapped in parentheses.
#define CCM_OS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) {                                   \
    return tmp.status();                             \
  }                                                  \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
#define CCM_OS_ASSIGN_OR_RETURN(lhs, expr) \
  CCM_OS_ASSIGN_OR_RETURN_IMPL(CCM_OS_CONCAT(ccm_os_statusor_, __LINE__), lhs, expr)
