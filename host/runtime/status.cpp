// Status helpers: names of codes and string forms.
#include "host/runtime/status.hpp"

#include <fmt/format.h>

namespace ccm {

std::string_view codeName(Code code) {
  switch (code) {
    case Code::Ok: return "OK";
    case Code::Cancelled: return "CANCELLED";
    case Code::InvalidArgument: return "INVALID_ARGUMENT";
    case Code::DeadlineExceeded: return "DEADLINE_EXCEEDED";
    case Code::NotFound: return "NOT_FOUND";
    case Code::AlreadyExists: return "ALREADY_EXISTS";
    case Code::PermissionDenied: return "PERMISSION_DENIED";
    case Code::ResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::FailedPrecondition: return "FAILED_PRECONDITION";
    case Code::Aborted: return "ABORTED";
    case Code::Unimplemented: return "UNIMPLEMENTED";
    case Code::Internal: return "INTERNAL";
    case Code::Unavailable: return "UNAVAILABLE";
    case Code::Unauthenticated: return "UNAUTHENTICATED";
    case Code::ImplementedElsewhere: return "IMPLEMENTED_ELSEWHERE";
  }
  return "INTERNAL";
}

Code codeFromInt(int32_t value) {
  switch (value) {
    case 0: case 1: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10:
    case 12: case 13: case 14: case 16: case 64:
      return static_cast<Code>(value);
    default:
      return Code::Internal;
  }
}

std::string Status::toString() const {
  if (ok()) {
    return "OK";
  }
  if (message_.empty()) {
    return std::string(codeName(code_));
  }
  return fmt::format("{}: {}", codeName(code_), message_);
}

Status Status::withPrefix(std::string_view prefix) const {
  if (ok()) {
    return *this;
  }
  return Status(code_, fmt::format("{}: {}", prefix, message_), retry_after_);
}

}  // namespace ccm
