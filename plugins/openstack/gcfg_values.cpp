// gcfg value parsers: booleans, integers and Go durations.
#include "plugins/openstack/gcfg_values.hpp"

#include <cctype>
#include <limits>
#include <string>

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {

std::optional<bool> parseGcfgBool(std::string_view s) {
  std::string v = toLower(trim(s));
  if (v == "true" || v == "yes" || v == "on" || v == "1") {
    return true;
  }
  if (v == "false" || v == "no" || v == "off" || v == "0") {
    return false;
  }
  return std::nullopt;
}

std::optional<int64_t> parseGcfgInt(std::string_view text) {
  std::string_view s = trim(text);
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) {
    return std::nullopt;
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  uint64_t value = 0;
  for (char c : s) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    if (digit >= base) {
      return std::nullopt;
    }
    value = value * static_cast<uint64_t>(base) + static_cast<uint64_t>(digit);
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
  }
  auto v = static_cast<int64_t>(value);
  return negative ? -v : v;
}

std::optional<std::chrono::nanoseconds> parseGoDuration(std::string_view text) {
  std::string_view s = trim(text);
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") {
    return std::chrono::nanoseconds(0);
  }
  if (s.empty()) {
    return std::nullopt;
  }
  long double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    long double number = 0;
    bool any_digit = false;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      number = number * 10 + (s[i] - '0');
      any_digit = true;
      ++i;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      long double scale = 0.1L;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        number += (s[i] - '0') * scale;
        scale /= 10;
        any_digit = true;
        ++i;
      }
    }
    if (!any_digit) {
      return std::nullopt;
    }
    size_t unit_start = i;
    while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i])) && s[i] != '.') {
      ++i;
    }
    std::string_view unit = s.substr(unit_start, i - unit_start);
    long double factor;
    if (unit == "ns") {
      factor = 1;
    } else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") {
      factor = 1e3L;
    } else if (unit == "ms") {
      factor = 1e6L;
    } else if (unit == "s") {
      factor = 1e9L;
    } else if (unit == "m") {
      factor = 60e9L;
    } else if (unit == "h") {
      factor = 3600e9L;
    } else {
      return std::nullopt;  // missing or unknown unit
    }
    total += number * factor;
    if (total > static_cast<long double>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    s.remove_prefix(i);
  }
  auto ns = static_cast<int64_t>(total + 0.5L);
  return std::chrono::nanoseconds(negative ? -ns : ns);
}

}  // namespace ccm::openstack
