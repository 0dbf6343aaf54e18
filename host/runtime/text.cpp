// Name checks and URL percent-decoding (the trimming helpers are inline in the header).
#include "host/runtime/text.hpp"

#include <algorithm>

namespace ccm::text {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

}  // namespace

std::optional<std::string> percentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) {
        return std::nullopt;
      }
      int hi = hexValue(s[i + 1]);
      int lo = hexValue(s[i + 2]);
      if (hi < 0 || lo < 0) {
        return std::nullopt;
      }
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    out.push_back(c);
  }
  return out;
}

bool isDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) {
    return false;
  }
  // Dot-separated labels of [a-z0-9-], each starting and ending alphanumeric.
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty() || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
        return false;
      }
    }
    if (dot == std::string_view::npos) {
      break;
    }
    start = dot + 1;
  }
  return true;
}

bool isQualifiedNamePart(std::string_view s) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool isQualifiedName(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) {
    return isQualifiedNamePart(s);
  }
  return isDns1123Subdomain(s.substr(0, slash)) && isQualifiedNamePart(s.substr(slash + 1));
}

}  // namespace ccm::text
