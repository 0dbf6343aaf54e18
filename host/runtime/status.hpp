// Status and StatusOr<T> (ValueOr<T, Status>): errors as values for steady-state host code.
// The code set is the plugin ABI's (ccm/provider_abi.h), so a provider's answer maps one to one.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ccm {

enum class Code : int32_t {
  Ok = 0,
  Cancelled = 1,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Aborted = 10,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
  Unauthenticated = 16,
  ImplementedElsewhere = 64,
};

// "OK", "NOT_FOUND", ... (the ABI's spelling without the CCM_STATUS_ prefix).
std::string_view codeName(Code code);

// Maps any integer to a Code; values outside the closed set read as Internal.
Code codeFromInt(int32_t value);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message, std::chrono::milliseconds retry_after = {})
      : code_(code), message_(std::move(message)), retry_after_(retry_after) {}

  static Status okStatus() { return {}; }
  // What a StatusOr built from an OK status (a bug) holds instead.
  static Status missingValue() {
    return Status(Code::Internal, "StatusOr constructed from an OK status without a value");
  }

  bool ok() const { return code_ == Code::Ok; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // How long the source asked us to wait before retrying (0 = use our own back-off).
  std::chrono::milliseconds retryAfter() const { return retry_after_; }

  // "NOT_FOUND: instance vm-1 not found"
  std::string toString() const;

  // Returns a copy whose message is "<prefix>: <message>" (code and retry-after kept).
  Status withPrefix(std::string_view prefix) const;

 private:
  Code code_ = Code::Ok;
  std::string message_;
  std::chrono::milliseconds retry_after_{0};
};

inline Status okStatus() { return {}; }

// A value, or the status S that says why there is none: StatusOr<T> (S = Status) and
// kube::ApiResult<T> (S = kube::ApiStatus). S::missingValue() is what one built from an OK
// status holds instead.
template <typename T, typename S>
class [[nodiscard]] ValueOr {
 public:
  ValueOr(T value) : value_(std::move(value)) {}    // NOLINT(google-explicit-constructor)
  ValueOr(S status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) {
      status_ = S::missingValue();
    }
  }

  bool ok() const { return value_.has_value(); }
  const S& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  S status_;
};

template <typename T>
using StatusOr = ValueOr<T, Status>;

}  // namespace ccm

#define CCM_RETURN_IF_ERROR(expr)      \
  do {                                 \
    ::ccm::Status ccm_status_ = (expr); \
    if (!ccm_status_.ok()) {           \
      return ccm_status_;              \
    }                                  \
  } while (false)
