// HTTP header field helpers shared by the two transports.
#include "host/kube/transport/http_headers.hpp"

#include <charconv>

#include "host/runtime/text.hpp"

namespace ccm::kube::http {
namespace {
char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c;
}
}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

std::string_view trimField(std::string_view v) { return text::trimSpace(v); }

bool hasToken(std::string_view value, std::string_view token) {
  for (size_t i = 0; i <= value.size();) {
    size_t comma = value.find(',', i);
    size_t end = comma == std::string_view::npos ? value.size() : comma;
    if (iequals(trimField(value.substr(i, end - i)), token)) {
      return true;
    }
    i = end + 1;
  }
  return false;
}

std::optional<Field> splitField(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  return Field{line.substr(0, colon), trimField(line.substr(colon + 1))};
}

std::string warningText(std::string_view value) {
  size_t q = value.find('"');
  size_t e = value.rfind('"');
  if (q != std::string_view::npos && e > q) {
    return std::string(value.substr(q + 1, e - q - 1));
  }
  return std::string(value);
}

long retryAfterSeconds(std::string_view value) {
  long seconds = -1;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  return ec == std::errc() && p == value.data() + value.size() && seconds >= 0 ? seconds : -1;
}

}  // namespace ccm::kube::http
