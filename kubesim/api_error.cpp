// ApiError: metav1.Status rendering and the apimachinery error constructors.
#include "kubesim/api_error.hpp"

#include <set>

#include "kubesim/json_util.hpp"

namespace ccm::kubesim {
namespace {

std::string qualified(std::string_view group, std::string_view resource) {
  std::string out(resource);
  if (!group.empty()) {
    out += ".";
    out += group;
  }
  return out;
}

std::string_view typeText(FieldError::Type t) {
  switch (t) {
    case FieldError::Type::NotFound:
      return "Not found";
    case FieldError::Type::Required:
      return "Required value";
    case FieldError::Type::Duplicate:
      return "Duplicate value";
    case FieldError::Type::Invalid:
      return "Invalid value";
    case FieldError::Type::NotSupported:
      return "Unsupported value";
    case FieldError::Type::Forbidden:
      return "Forbidden";
    case FieldError::Type::TooLong:
      return "Too long";
    case FieldError::Type::TooMany:
      return "Too many";
    case FieldError::Type::Internal:
      return "Internal error";
    case FieldError::Type::TypeInvalid:
      return "Invalid value";
  }
  return "Invalid value";
}

}  // namespace

std::string goQuote(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += "\"";
  return out;
}

std::string FieldError::body() const {
  std::string s(typeText(type));
  bool with_value = show_value && type != Type::Required && type != Type::Forbidden &&
                    type != Type::TooLong && type != Type::Internal;
  if (with_value) {
    s += ": ";
    s += value;
  }
  if (!detail.empty()) {
    s += ": ";
    s += detail;
  }
  return s;
}

std::string FieldError::toString() const {
  return field + ": " + body();
}

std::string_view FieldError::reason() const {
  switch (type) {
    case Type::NotFound:
      return "FieldValueNotFound";
    case Type::Required:
      return "FieldValueRequired";
    case Type::Duplicate:
      return "FieldValueDuplicate";
    case Type::Invalid:
      return "FieldValueInvalid";
    case Type::NotSupported:
      return "FieldValueNotSupported";
    case Type::Forbidden:
      return "FieldValueForbidden";
    case Type::TooLong:
      return "FieldValueTooLong";
    case Type::TooMany:
      return "FieldValueTooMany";
    case Type::Internal:
      return "InternalError";
    case Type::TypeInvalid:
      return "FieldValueTypeInvalid";
  }
  return "FieldValueInvalid";
}

FieldError FieldError::invalid(std::string field, std::string rendered_value, std::string detail) {
  return {Type::Invalid, std::move(field), std::move(rendered_value), true, std::move(detail)};
}

FieldError FieldError::invalidString(std::string field, std::string_view value,
                                     std::string detail) {
  return invalid(std::move(field), goQuote(value), std::move(detail));
}

FieldError FieldError::required(std::string field, std::string detail) {
  return {Type::Required, std::move(field), "\"\"", false, std::move(detail)};
}

FieldError FieldError::duplicate(std::string field, std::string rendered_value,
                                 std::string detail) {
  return {Type::Duplicate, std::move(field), std::move(rendered_value), true, std::move(detail)};
}

FieldError FieldError::notSupported(std::string field, std::string_view value,
                                    const std::vector<std::string>& supported) {
  std::string detail;
  if (!supported.empty()) {
    detail = "supported values: ";
    for (size_t i = 0; i < supported.size(); ++i) {
      detail += (i ? ", " : "") + goQuote(supported[i]);
    }
  }
  return {Type::NotSupported, std::move(field), goQuote(value), true, std::move(detail)};
}

FieldError FieldError::forbidden(std::string field, std::string detail) {
  return {Type::Forbidden, std::move(field), "\"\"", false, std::move(detail)};
}

FieldError FieldError::tooLong(std::string field, int max_length) {
  return {Type::TooLong, std::move(field), "", false,
          "must have at most " + std::to_string(max_length) + " bytes"};
}

FieldError FieldError::typeInvalid(std::string field, std::string rendered_value,
                                   std::string detail) {
  return {Type::TypeInvalid, std::move(field), std::move(rendered_value), true, std::move(detail)};
}

std::string ApiError::toJson() const {
  std::string out = R"({"kind":"Status","apiVersion":"v1","metadata":{)";
  if (!continue_.empty()) {
    out += R"("continue":)";
    appendJsonString(out, continue_);
  }
  out += R"(},"status":"Failure","message":)";
  appendJsonString(out, message_);
  if (!reason_.empty()) {  // StatusReasonUnknown is omitted, as Go's omitempty does
    out += R"(,"reason":)";
    appendJsonString(out, reason_);
  }
  if (details_) {
    out += R"(,"details":{)";
    bool first = true;
    auto field = [&](std::string_view key, const std::string& v) {
      if (v.empty()) {
        return;
      }
      out += first ? "" : ",";
      first = false;
      appendJsonString(out, key);
      out += ":";
      appendJsonString(out, v);
    };
    field("name", details_->name);
    field("group", details_->group);
    field("kind", details_->kind);
    field("uid", details_->uid);
    if (!details_->causes.empty()) {
      out += first ? "" : ",";
      first = false;
      out += R"("causes":[)";
      for (size_t i = 0; i < details_->causes.size(); ++i) {
        const auto& c = details_->causes[i];
        out += i ? ",{" : "{";
        bool cf = true;
        auto cfield = [&](std::string_view key, const std::string& v) {
          if (v.empty()) {
            return;
          }
          out += cf ? "" : ",";
          cf = false;
          appendJsonString(out, key);
          out += ":";
          appendJsonString(out, v);
        };
        cfield("reason", c.reason);
        cfield("message", c.message);
        cfield("field", c.field);
        out += "}";
      }
      out += "]";
    }
    if (details_->retry_after_seconds > 0) {
      out += first ? "" : ",";
      out += R"("retryAfterSeconds":)" + std::to_string(details_->retry_after_seconds);
    }
    out += "}";
  }
  out += R"(,"code":)" + std::to_string(code_) + "}";
  return out;
}

ApiError ApiError::notFound(std::string_view group, std::string_view resource,
                            std::string_view name) {
  ApiError e(404, "NotFound", qualified(group, resource) + " " + goQuote(name) + " not found");
  auto& d = e.mutableDetails();
  d.name = name;
  d.group = group;
  d.kind = resource;
  return e;
}

ApiError ApiError::alreadyExists(std::string_view group, std::string_view resource,
                                 std::string_view name) {
  ApiError e(409, "AlreadyExists",
             qualified(group, resource) + " " + goQuote(name) + " already exists");
  auto& d = e.mutableDetails();
  d.name = name;
  d.group = group;
  d.kind = resource;
  return e;
}

ApiError ApiError::conflict(std::string_view group, std::string_view resource,
                            std::string_view name, std::string_view why) {
  ApiError e(409, "Conflict",
             "Operation cannot be fulfilled on " + qualified(group, resource) + " " +
                 goQuote(name) + ": " + std::string(why));
  auto& d = e.mutableDetails();
  d.name = name;
  d.group = group;
  d.kind = resource;
  return e;
}

ApiError ApiError::invalid(std::string_view group, std::string_view kind, std::string_view name,
                           const FieldErrors& errors) {
  // Aggregate: duplicates removed, one message as is, several in brackets.
  std::vector<std::string> msgs;
  std::set<std::string> seen;
  for (const auto& fe : errors) {
    std::string m = fe.toString();
    if (seen.insert(m).second) {
      msgs.push_back(m);
    }
  }
  std::string message = qualified(group, kind) + " " + goQuote(name) + " is invalid";
  if (group.empty() && kind.empty()) {
    message = " " + goQuote(name) + " is invalid";
  }
  if (msgs.size() == 1) {
    message += ": " + msgs[0];
  } else if (msgs.size() > 1) {
    message += ": [";
    for (size_t i = 0; i < msgs.size(); ++i) {
      message += (i ? ", " : "") + msgs[i];
    }
    message += "]";
  }
  ApiError e(422, "Invalid", message);
  auto& d = e.mutableDetails();
  d.name = name;
  d.group = group;
  d.kind = kind;
  for (const auto& fe : errors) {
    d.causes.push_back({std::string(fe.reason()), fe.body(), fe.field});
  }
  return e;
}

ApiError ApiError::badRequest(std::string message) {
  return ApiError(400, "BadRequest", std::move(message));
}

ApiError ApiError::unauthorized(std::string message) {
  return ApiError(401, "Unauthorized", std::move(message));
}

ApiError ApiError::forbidden(std::string_view group, std::string_view resource,
                             std::string_view name, std::string_view why) {
  std::string message;
  if (resource.empty()) {
    message = "forbidden: " + std::string(why);
  } else if (name.empty()) {
    message = qualified(group, resource) + " is forbidden: " + std::string(why);
  } else {
    message =
        qualified(group, resource) + " " + goQuote(name) + " is forbidden: " + std::string(why);
  }
  ApiError e(403, "Forbidden", message);
  auto& d = e.mutableDetails();
  d.name = name;
  d.group = group;
  d.kind = resource;
  return e;
}

ApiError ApiError::methodNotAllowed() {
  return ApiError(405, "MethodNotAllowed",
                  "the server does not allow this method on the requested resource");
}

ApiError ApiError::notAcceptable(const std::vector<std::string>& accepted) {
  std::string list;
  for (size_t i = 0; i < accepted.size(); ++i) {
    list += (i ? ", " : "") + accepted[i];
  }
  return ApiError(406, "NotAcceptable", "only the following media types are accepted: " + list);
}

ApiError ApiError::unsupportedMediaType(const std::vector<std::string>& accepted) {
  std::string list;
  for (size_t i = 0; i < accepted.size(); ++i) {
    list += (i ? ", " : "") + accepted[i];
  }
  return ApiError(
      415, "UnsupportedMediaType",
      "the body of the request was in an unknown format - accepted media types include: " + list);
}

ApiError ApiError::requestEntityTooLarge(std::string message) {
  message.insert(0, "Request entity too large: ");
  return ApiError(413, "RequestEntityTooLarge", std::move(message));
}

ApiError ApiError::expired(std::string message) {
  return ApiError(410, "Expired", std::move(message));
}

ApiError ApiError::gone(std::string message) {
  return ApiError(410, "Gone", std::move(message));
}

ApiError ApiError::timeout(std::string message, int retry_after_seconds) {
  message.insert(0, "Timeout: ");
  ApiError e(504, "Timeout", std::move(message));
  e.mutableDetails().retry_after_seconds = retry_after_seconds;
  return e;
}

ApiError ApiError::tooManyRequests(std::string message, int retry_after_seconds) {
  message.insert(0, "Too many requests: ");
  ApiError e(429, "TooManyRequests", std::move(message));
  if (retry_after_seconds > 0) {
    e.mutableDetails().retry_after_seconds = retry_after_seconds;
    e.headers().emplace_back("Retry-After", std::to_string(retry_after_seconds));
  }
  return e;
}

ApiError ApiError::internal(std::string message) {
  ApiError e(500, "InternalError", "Internal error occurred: " + message);
  e.mutableDetails().causes.push_back({"", std::move(message), ""});
  return e;
}

ApiError ApiError::serviceUnavailable(std::string message) {
  return ApiError(503, "ServiceUnavailable", std::move(message));
}

ApiError ApiError::notFoundPath() {
  ApiError e(404, "NotFound", "the server could not find the requested resource");
  e.mutableDetails();
  return e;
}

}  // namespace ccm::kubesim
