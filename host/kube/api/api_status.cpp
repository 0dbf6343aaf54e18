// ApiStatus: parsing Kubernetes Status error bodies (JSON or not) and mapping to ccm::Status.
#include "host/kube/api/api_status.hpp"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <array>

#include "host/runtime/text.hpp"

namespace ccm::kube {
namespace {

struct ReasonEntry {
  Reason reason;
  std::string_view name;
};

constexpr std::array<ReasonEntry, 22> kReasons{{
    {Reason::Unknown, ""},
    {Reason::BadRequest, "BadRequest"},
    {Reason::Unauthorized, "Unauthorized"},
    {Reason::Forbidden, "Forbidden"},
    {Reason::NotFound, "NotFound"},
    {Reason::MethodNotAllowed, "MethodNotAllowed"},
    {Reason::NotAcceptable, "NotAcceptable"},
    {Reason::AlreadyExists, "AlreadyExists"},
    {Reason::Conflict, "Conflict"},
    {Reason::Gone, "Gone"},
    {Reason::Expired, "Expired"},
    {Reason::RequestEntityTooLarge, "RequestEntityTooLarge"},
    {Reason::UnsupportedMediaType, "UnsupportedMediaType"},
    {Reason::Invalid, "Invalid"},
    {Reason::TooManyRequests, "TooManyRequests"},
    {Reason::InternalError, "InternalError"},
    {Reason::ServerTimeout, "ServerTimeout"},
    {Reason::ServiceUnavailable, "ServiceUnavailable"},
    {Reason::Timeout, "Timeout"},
    {Reason::Transport, "Transport"},
    {Reason::Cancelled, "Cancelled"},
    {Reason::Decode, "Decode"},
}};

std::string_view str(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsString()) {
    return {};
  }
  return {it->value.GetString(), it->value.GetStringLength()};
}

// The text client-go uses when a server error carries no message.
std::string genericMessage(int code) {
  switch (code) {
    case 400:
      return "the server rejected our request for an unknown reason";
    case 401:
      return "the server has asked for the client to provide credentials";
    case 403:
      return "the server does not allow access to the requested resource";
    case 404:
      return "the server could not find the requested resource";
    case 405:
      return "the server does not allow this method on the requested resource";
    case 406:
      return "the server was unable to respond with a content type that the client supports";
    case 409:
      return "the server reported a conflict";
    case 410:
      return "the server reported the requested resource is gone";
    case 413:
      return "the server rejected the request because it is too large";
    case 415:
      return "the server was unable to process the request body";
    case 422:
      return "the server rejected our request due to an error in our request";
    case 429:
      return "the server has received too many requests and has asked us to try again later";
    case 500:
      return "an error on the server has prevented the request from succeeding";
    case 503:
      return "the server is currently unable to handle the request";
    case 504:
      return "the server was unable to return a response in the time allotted";
    default:
      return fmt::format(
          "an error on the server has prevented the request from succeeding (HTTP {})", code);
  }
}

}  // namespace

std::string_view reasonName(Reason reason) {
  for (const auto& e : kReasons) {
    if (e.reason == reason) {
      return e.reason == Reason::Unknown ? "Unknown" : e.name;
    }
  }
  return "Unknown";
}

Reason reasonFromString(std::string_view s) {
  for (const auto& e : kReasons) {
    if (!e.name.empty() && e.name == s) {
      return e.reason;
    }
  }
  return Reason::Unknown;
}

Reason reasonForHttpCode(int code) {
  switch (code) {
    case 400:
      return Reason::BadRequest;
    case 401:
      return Reason::Unauthorized;
    case 403:
      return Reason::Forbidden;
    case 404:
      return Reason::NotFound;
    case 405:
      return Reason::MethodNotAllowed;
    case 406:
      return Reason::NotAcceptable;
    case 409:
      return Reason::Conflict;
    case 410:
      return Reason::Expired;
    case 413:
      return Reason::RequestEntityTooLarge;
    case 415:
      return Reason::UnsupportedMediaType;
    case 422:
      return Reason::Invalid;
    case 429:
      return Reason::TooManyRequests;
    case 500:
      return Reason::InternalError;
    case 503:
      return Reason::ServiceUnavailable;
    case 504:
      return Reason::Timeout;
    default:
      return code >= 500 ? Reason::InternalError : Reason::Unknown;
  }
}

ApiStatus ApiStatus::fromResponse(int http_code, std::string_view body,
                                  std::chrono::seconds retry_after_header) {
  ApiStatus st(http_code, reasonForHttpCode(http_code), {},
               std::chrono::duration_cast<std::chrono::milliseconds>(retry_after_header));
  if (st.reason_ == Reason::Unknown && http_code == 0) {
    st.reason_ = Reason::Transport;
  }
  std::string_view text = text::trimSpace(body);
  bool parsed = false;
  if (!text.empty() && text.front() == '{') {
    rapidjson::Document doc;
    doc.Parse(text.data(), text.size());
    if (!doc.HasParseError() && doc.IsObject() && str(doc, "kind") == "Status") {
      parsed = true;
      std::string_view reason = str(doc, "reason");
      if (!reason.empty()) {
        Reason r = reasonFromString(reason);
        if (r != Reason::Unknown) {
          st.reason_ = r;
        }
      }
      st.message_ = std::string(str(doc, "message"));
      auto details = doc.FindMember("details");
      if (details != doc.MemberEnd() && details->value.IsObject()) {
        const auto& d = details->value;
        auto ra = d.FindMember("retryAfterSeconds");
        if (ra != d.MemberEnd() && ra->value.IsInt() && ra->value.GetInt() > 0 &&
            st.retry_after_.count() == 0) {
          st.retry_after_ = std::chrono::seconds(ra->value.GetInt());
        }
        auto causes = d.FindMember("causes");
        if (causes != d.MemberEnd() && causes->value.IsArray()) {
          for (const auto& c : causes->value.GetArray()) {
            if (!c.IsObject()) {
              continue;
            }
            StatusCause cause{std::string(str(c, "reason")), std::string(str(c, "message")),
                              std::string(str(c, "field"))};
            if (cause.reason == "ResourceVersionTooLarge") {
              st.too_large_rv_ = true;
            }
            st.causes_.push_back(std::move(cause));
          }
        }
      }
      auto meta = doc.FindMember("metadata");
      if (meta != doc.MemberEnd() && meta->value.IsObject()) {
        st.continue_ = std::string(str(meta->value, "continue"));
      }
    }
  }
  if (!parsed && !text.empty()) {
    // Plain-text bodies (APF 429s, proxies): keep a bounded, single-line excerpt.
    std::string excerpt(text.substr(0, 512));
    for (char& c : excerpt) {
      if (c == '\n' || c == '\r') {
        c = ' ';
      }
    }
    st.message_ = std::move(excerpt);
  }
  if (st.message_.empty()) {
    st.message_ = genericMessage(http_code);
  }
  if (st.message_.find("Too large resource version") != std::string::npos) {
    st.too_large_rv_ = true;
  }
  return st;
}

ApiStatus ApiStatus::fromStatusObject(int code, std::string_view reason, std::string message) {
  Reason r = reasonFromString(reason);
  if (r == Reason::Unknown) {
    r = reasonForHttpCode(code);
  }
  if (r == Reason::Unknown) {
    r = Reason::InternalError;
  }
  ApiStatus st(code, r, std::move(message));
  if (st.message_.empty()) {
    st.message_ = genericMessage(code);
  }
  if (st.message_.find("Too large resource version") != std::string::npos) {
    st.too_large_rv_ = true;
  }
  return st;
}

Status ApiStatus::toStatus() const {
  if (ok()) {
    return okStatus();
  }
  Code code = Code::Internal;
  switch (reason_) {
    case Reason::NotFound:
      code = Code::NotFound;
      break;
    case Reason::AlreadyExists:
      code = Code::AlreadyExists;
      break;
    case Reason::Conflict:
      code = Code::Aborted;
      break;
    case Reason::Invalid:
    case Reason::BadRequest:
    case Reason::RequestEntityTooLarge:
      code = Code::InvalidArgument;
      break;
    case Reason::Forbidden:
      code = Code::PermissionDenied;
      break;
    case Reason::Unauthorized:
      code = Code::Unauthenticated;
      break;
    case Reason::TooManyRequests:
      code = Code::ResourceExhausted;
      break;
    case Reason::Gone:
    case Reason::Expired:
      code = Code::FailedPrecondition;
      break;
    case Reason::Timeout:
      code = Code::DeadlineExceeded;
      break;
    case Reason::InternalError:
    case Reason::ServerTimeout:
    case Reason::ServiceUnavailable:
    case Reason::Transport:
      code = Code::Unavailable;
      break;
    case Reason::Cancelled:
      code = Code::Cancelled;
      break;
    case Reason::MethodNotAllowed:
    case Reason::NotAcceptable:
    case Reason::UnsupportedMediaType:
      code = Code::Unimplemented;
      break;
    case Reason::Unknown:
      code = http_code_ >= 500 ? Code::Unavailable : Code::Internal;
      break;
    case Reason::Decode:
      code = Code::Internal;
      break;
  }
  return Status(code, message_, retry_after_);
}

std::string ApiStatus::toString() const {
  if (ok()) {
    return "OK";
  }
  if (http_code_ != 0) {
    return fmt::format("{} ({}): {}", reasonName(reason_), http_code_, message_);
  }
  return fmt::format("{}: {}", reasonName(reason_), message_);
}

ApiStatus ApiStatus::withPrefix(std::string_view prefix) const {
  if (ok()) {
    return *this;
  }
  ApiStatus copy = *this;
  copy.message_ = fmt::format("{}: {}", prefix, message_);
  return copy;
}

}  // namespace ccm::kube
