// ApiError: a failed API call as a real kube-apiserver reports it, i.e. a metav1.Status with
// code, reason, message and details (name, group, kind, causes, retryAfterSeconds), plus the
// field-level validation errors (FieldError) that make up 422 Invalid answers. Message texts
// follow apimachinery's so that clients print what they print against a real server.
//
// ApiOr<T> carries either a value or an ApiError.
//
// THREAD: value types; no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ccm::kubesim {

// Go's %q for a string: double quotes with Go escapes.
std::string goQuote(std::string_view s);

// One field validation error (field.Error in apimachinery).
struct FieldError {
  enum class Type {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid
  };
  Type type = Type::Invalid;
  std::string field;  // "spec.taints[1].effect"
  std::string value;  // the bad value already rendered Go-style ("\"x\"", "5", "null", ...)
  bool show_value = true;
  std::string detail;

  // "Invalid value: \"x\": detail"
  std::string body() const;
  // "spec.x: Invalid value: \"x\": detail"
  std::string toString() const;
  // "FieldValueInvalid"
  std::string_view reason() const;

  static FieldError invalid(std::string field, std::string rendered_value, std::string detail);
  static FieldError invalidString(std::string field, std::string_view value, std::string detail);
  static FieldError required(std::string field, std::string detail = {});
  static FieldError duplicate(std::string field, std::string rendered_value,
                              std::string detail = {});
  static FieldError notSupported(std::string field, std::string_view value,
                                 const std::vector<std::string>& supported);
  static FieldError forbidden(std::string field, std::string detail);
  static FieldError tooLong(std::string field, int max_length);
  static FieldError typeInvalid(std::string field, std::string rendered_value, std::string detail);
};
using FieldErrors = std::vector<FieldError>;

// Status.details.causes[] and Status.details. At namespace scope, not nested in ApiError:
// clang cannot default-construct a nested struct with member initializers inside the
// enclosing class (std::optional<Details>::emplace() in mutableDetails below).
struct StatusCause {
  std::string reason;
  std::string message;
  std::string field;
};
struct StatusDetails {
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::vector<StatusCause> causes;
  int retry_after_seconds = 0;
};

class ApiError {
 public:
  using Cause = StatusCause;
  using Details = StatusDetails;

  ApiError() = default;
  ApiError(int code, std::string reason, std::string message)
      : code_(code), reason_(std::move(reason)), message_(std::move(message)) {}

  int code() const { return code_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }
  const std::optional<Details>& details() const { return details_; }
  Details& mutableDetails() {
    if (!details_) {
      details_.emplace();
    }
    return *details_;
  }
  // Extra Status.metadata.continue (410 on a stale continue token).
  void setContinue(std::string token) { continue_ = std::move(token); }
  // Response headers that go with the error (e.g. Retry-After).
  std::vector<std::pair<std::string, std::string>>& headers() { return headers_; }
  const std::vector<std::pair<std::string, std::string>>& headers() const { return headers_; }

  // The metav1.Status JSON document.
  std::string toJson() const;

  // --- the reasons apimachinery defines (messages as in k8s.io/apimachinery/pkg/api/errors) ---
  // qualified_resource: "nodes" or "leases.coordination.k8s.io"; group/resource for details.
  static ApiError notFound(std::string_view group, std::string_view resource,
                           std::string_view name);
  static ApiError alreadyExists(std::string_view group, std::string_view resource,
                                std::string_view name);
  static ApiError conflict(std::string_view group, std::string_view resource, std::string_view name,
                           std::string_view why);
  static ApiError invalid(std::string_view group, std::string_view kind, std::string_view name,
                          const FieldErrors& errors);
  static ApiError badRequest(std::string message);
  static ApiError unauthorized(std::string message = "Unauthorized");
  static ApiError forbidden(std::string_view group, std::string_view resource,
                            std::string_view name, std::string_view why);
  static ApiError methodNotAllowed();
  static ApiError notAcceptable(const std::vector<std::string>& accepted);
  static ApiError unsupportedMediaType(const std::vector<std::string>& accepted);
  static ApiError requestEntityTooLarge(std::string message);
  static ApiError expired(std::string message);
  static ApiError gone(std::string message);
  static ApiError timeout(std::string message, int retry_after_seconds);
  static ApiError tooManyRequests(std::string message, int retry_after_seconds);
  static ApiError internal(std::string message);
  static ApiError serviceUnavailable(std::string message);
  static ApiError notFoundPath();  // "the server could not find the requested resource"

 private:
  int code_ = 500;
  std::string reason_;
  std::string message_;
  std::optional<Details> details_;
  std::string continue_;
  std::vector<std::pair<std::string, std::string>> headers_;
};

// Either a T or an ApiError.
template <typename T>
class ApiOr {
 public:
  ApiOr(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  ApiOr(ApiError error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  ApiError& error() { return std::get<1>(v_); }
  const ApiError& error() const { return std::get<1>(v_); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace ccm::kubesim
