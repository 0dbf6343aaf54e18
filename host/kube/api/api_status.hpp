// ApiStatus / ApiResult<T>: the outcome of a Kubernetes API call. An error keeps what the
// server said (HTTP code, the Status reason, its message, retry-after, field causes) so
// controllers can test isNotFound()/isConflict() like client-go's apierrors, and converts to
// a ccm::Status (the host's error type) with toStatus().
//
// THREAD: plain values; no shared state.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/runtime/status.hpp"

namespace ccm::kube {

// metav1.StatusReason values, plus the client's own failures (no HTTP answer).
enum class Reason : uint8_t {
  Unknown,
  BadRequest,             // 400
  Unauthorized,           // 401
  Forbidden,              // 403
  NotFound,               // 404
  MethodNotAllowed,       // 405
  NotAcceptable,          // 406
  AlreadyExists,          // 409
  Conflict,               // 409
  Gone,                   // 410 (pre-1.18 servers)
  Expired,                // 410
  RequestEntityTooLarge,  // 413
  UnsupportedMediaType,   // 415
  Invalid,                // 422
  TooManyRequests,        // 429
  InternalError,          // 500
  ServerTimeout,          // 500 with reason ServerTimeout
  ServiceUnavailable,     // 503
  Timeout,                // 504
  Transport,              // no HTTP response: connection, TLS, DNS, timeout
  Cancelled,              // the caller asked to stop
  Decode,                 // a 2xx answer whose body could not be understood
};

std::string_view reasonName(Reason reason);
// Parses a server reason string ("NotFound"); unknown -> Unknown.
Reason reasonFromString(std::string_view s);
// The reason client-go assumes for an HTTP code when the body carries none.
Reason reasonForHttpCode(int code);

// One entry of Status.details.causes.
struct StatusCause {
  std::string reason;
  std::string message;
  std::string field;
};

class [[nodiscard]] ApiStatus {
 public:
  ApiStatus() = default;  // OK
  ApiStatus(int http_code, Reason reason, std::string message,
            std::chrono::milliseconds retry_after = {})
      : http_code_(http_code),
        reason_(reason),
        message_(std::move(message)),
        retry_after_(retry_after) {}

  static ApiStatus transport(std::string message) {
    return ApiStatus(0, Reason::Transport, std::move(message));
  }
  static ApiStatus cancelled() { return ApiStatus(0, Reason::Cancelled, "request cancelled"); }
  // What an ApiResult built from an OK status (a bug) holds instead.
  static ApiStatus missingValue() {
    return ApiStatus(0, Reason::Decode, "ApiResult built from an OK status without a value");
  }

  // Builds the error for a non-2xx answer: parses a JSON Status body when there is one,
  // otherwise uses the body text (trimmed, shortened) and the HTTP code. `retry_after_header`
  // is the Retry-After header's seconds (0 = none).
  static ApiStatus fromResponse(int http_code, std::string_view body,
                                std::chrono::seconds retry_after_header = {});
  // Builds the error carried by a watch ERROR event's Status object.
  static ApiStatus fromStatusObject(int code, std::string_view reason, std::string message);

  bool ok() const { return reason_ == Reason::Unknown && http_code_ == 0; }
  int httpCode() const { return http_code_; }
  Reason reason() const { return reason_; }
  const std::string& message() const { return message_; }
  std::chrono::milliseconds retryAfter() const { return retry_after_; }
  const std::vector<StatusCause>& causes() const { return causes_; }
  // Status.metadata.continue of a 410 on an expired continue token (may be empty).
  const std::string& continueToken() const { return continue_; }

  bool isNotFound() const { return reason_ == Reason::NotFound; }
  bool isAlreadyExists() const { return reason_ == Reason::AlreadyExists; }
  bool isConflict() const { return reason_ == Reason::Conflict; }
  bool isInvalid() const { return reason_ == Reason::Invalid; }
  bool isForbidden() const { return reason_ == Reason::Forbidden; }
  bool isUnauthorized() const { return reason_ == Reason::Unauthorized; }
  bool isTooManyRequests() const { return reason_ == Reason::TooManyRequests; }
  // 410 Expired/Gone: a stale resourceVersion or continue token.
  bool isExpired() const {
    return reason_ == Reason::Expired || reason_ == Reason::Gone || http_code_ == 410;
  }
  // "Too large resource version" (504 with cause ResourceVersionTooLarge).
  bool isTooLargeResourceVersion() const { return too_large_rv_; }
  bool isCancelled() const { return reason_ == Reason::Cancelled; }
  bool isTransport() const { return reason_ == Reason::Transport; }

  // The host's Status: NotFound->NOT_FOUND, AlreadyExists->ALREADY_EXISTS, Conflict->ABORTED,
  // Invalid/BadRequest->INVALID_ARGUMENT, Forbidden->PERMISSION_DENIED,
  // Unauthorized->UNAUTHENTICATED, TooManyRequests->RESOURCE_EXHAUSTED (with retry-after),
  // Expired/Gone->FAILED_PRECONDITION, Timeout->DEADLINE_EXCEEDED, 5xx and transport->
  // UNAVAILABLE, Cancelled->CANCELLED, others->INTERNAL. The message is the server's.
  Status toStatus() const;
  // "NotFound (404): nodes \"n1\" not found"
  std::string toString() const;

  // Returns a copy whose message is "<prefix>: <message>".
  ApiStatus withPrefix(std::string_view prefix) const;

 private:
  int http_code_ = 0;
  Reason reason_ = Reason::Unknown;
  std::string message_;
  std::chrono::milliseconds retry_after_{0};
  std::vector<StatusCause> causes_;
  std::string continue_;
  bool too_large_rv_ = false;
};

template <typename T>
using ApiResult = ValueOr<T, ApiStatus>;

}  // namespace ccm::kube
