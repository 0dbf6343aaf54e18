// RFC 3339 parsing and formatting without locale or time-zone database dependencies.
#include "host/kube/api/time_format.hpp"

#include <fmt/format.h>

#include <ctime>

namespace ccm::kube {
namespace {

bool digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) {
    return false;
  }
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return false;
    }
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct Parsed {
  int64_t seconds;
  int64_t micros;
};

std::optional<Parsed> parse(std::string_view s) {
  int year, month, day, hour, minute, second;
  if (!digits(s, 0, 4, &year) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, &month) ||
      s[7] != '-' || !digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !digits(s, 11, 2, &hour) || s[13] != ':' || !digits(s, 14, 2, &minute) || s[16] != ':' ||
      !digits(s, 17, 2, &second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  size_t pos = 19;
  int64_t micros = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    int64_t scale = 100000;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      micros += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) {
      return std::nullopt;
    }
  }
  int64_t offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !digits(s, pos + 4, 2, &om)) {
      return std::nullopt;
    }
    offset = (int64_t{oh} * 3600 + int64_t{om} * 60) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) {
    return std::nullopt;
  }
  int64_t days = daysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  return Parsed{days * 86400 + int64_t{hour} * 3600 + int64_t{minute} * 60 + second - offset,
                micros};
}

std::string formatDate(int64_t unix_seconds) {
  time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm {};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace

std::optional<int64_t> parseRfc3339(std::string_view text) {
  auto p = parse(text);
  if (!p) {
    return std::nullopt;
  }
  return p->seconds;
}

std::optional<std::chrono::system_clock::time_point> parseRfc3339Time(std::string_view text) {
  auto p = parse(text);
  if (!p) {
    return std::nullopt;
  }
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(p->seconds) + std::chrono::microseconds(p->micros)));
}

std::string formatRfc3339(int64_t unix_seconds) {
  return formatDate(unix_seconds) + "Z";
}

std::string formatRfc3339(std::chrono::system_clock::time_point t) {
  auto s = std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
  return formatRfc3339(s);
}

std::string formatMicroTime(std::chrono::system_clock::time_point t) {
  auto us = std::chrono::floor<std::chrono::microseconds>(t.time_since_epoch()).count();
  int64_t s = us >= 0 ? us / 1000000 : (us - 999999) / 1000000;
  int64_t frac = us - s * 1000000;
  return fmt::format("{}.{:06}Z", formatDate(s), frac);
}

}  // namespace ccm::kube
