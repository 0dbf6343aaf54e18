// GoTime: Go's time.Parse for the API's two layouts, walking the layout chunk by chunk as Go
// does so that the refusal names the same value and layout elements.
#include "kubesim/go_time.hpp"

#include <array>
#include <cstdint>

#include "kubesim/api_error.hpp"

namespace ccm::kubesim {
namespace {

// One layout element: literal text that must appear first, then a field.
enum class Field { Year, Month, Day, Hour, Minute, Second, Micros, Zone };
struct Chunk {
  std::string_view prefix;
  Field field;
  std::string_view text;  // the field as written in the layout
};

constexpr std::array<Chunk, 7> kRfc3339 = {{{"", Field::Year, "2006"},
                                             {"-", Field::Month, "01"},
                                             {"-", Field::Day, "02"},
                                             {"T", Field::Hour, "15"},
                                             {":", Field::Minute, "04"},
                                             {":", Field::Second, "05"},
                                             {"", Field::Zone, "Z07:00"}}};
constexpr std::array<Chunk, 8> kRfc3339Micro = {{{"", Field::Year, "2006"},
                                                  {"-", Field::Month, "01"},
                                                  {"-", Field::Day, "02"},
                                                  {"T", Field::Hour, "15"},
                                                  {":", Field::Minute, "04"},
                                                  {":", Field::Second, "05"},
                                                  {"", Field::Micros, ".000000"},
                                                  {"", Field::Zone, "Z07:00"}}};

bool isDigit(std::string_view s, size_t i) {
  return i < s.size() && s[i] >= '0' && s[i] <= '9';
}

// Go's getnum: one or two digits (exactly two when fixed).
bool getNum(std::string_view& s, bool fixed, int& out) {
  if (!isDigit(s, 0)) {
    return false;
  }
  if (!isDigit(s, 1)) {
    if (fixed) {
      return false;
    }
    out = s[0] - '0';
    s.remove_prefix(1);
    return true;
  }
  out = (s[0] - '0') * 10 + (s[1] - '0');
  s.remove_prefix(2);
  return true;
}

// Go's atoi in the time package: optional sign, then only digits.
bool atoi(std::string_view s, int64_t& out) {
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) {
    return false;
  }
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || v > (int64_t{1} << 40)) {
      return false;
    }
    v = v * 10 + (c - '0');
  }
  out = neg ? -v : v;
  return true;
}

bool leapYear(int64_t y) {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

int daysIn(int64_t month, int64_t year) {
  static constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month == 2 && leapYear(year)) {
    return 29;
  }
  return kDays[static_cast<size_t>(month - 1)];
}

template <size_t N>
std::optional<std::string> parse(const std::array<Chunk, N>& chunks, std::string_view layout,
                                  std::string_view input) {
  const std::string head = "parsing time " + goQuote(input);
  auto cannot = [&](std::string_view value_elem, std::string_view layout_elem) {
    return head + " as " + goQuote(layout) + ": cannot parse " + goQuote(value_elem) + " as " +
           goQuote(layout_elem);
  };
  auto outOfRange = [&](std::string_view what) {
    return head + ": " + std::string(what) + " out of range";
  };
  std::string_view value = input;
  int64_t year = 0;
  int month = 0;
  int day = 0;
  for (size_t ci = 0; ci < chunks.size(); ++ci) {
    const Chunk& c = chunks[ci];
    for (char p : c.prefix) {
      if (value.empty() || value[0] != p) {
        return cannot(value, c.prefix);
      }
      value.remove_prefix(1);
    }
    const std::string_view hold = value;
    bool ok = true;
    int num = 0;
    switch (c.field) {
      case Field::Year:
        if (value.size() < 4 || !isDigit(value, 0)) {
          ok = false;
          break;
        }
        ok = atoi(value.substr(0, 4), year);
        value.remove_prefix(4);
        break;
      case Field::Month:
        ok = getNum(value, true, month);
        if (ok && (month <= 0 || month > 12)) {
          return outOfRange("month");
        }
        break;
      case Field::Day:
        ok = getNum(value, true, day);
        break;
      case Field::Hour:
        ok = getNum(value, false, num);
        if (ok && num >= 24) {
          return outOfRange("hour");
        }
        break;
      case Field::Minute:
        ok = getNum(value, true, num);
        if (ok && num >= 60) {
          return outOfRange("minute");
        }
        break;
      case Field::Second: {
        ok = getNum(value, true, num);
        if (!ok) {
          break;
        }
        if (num >= 60) {
          return outOfRange("second");
        }
        // A fraction in the value although the layout has none: Go reads any number of digits.
        bool layout_has_fraction = ci + 1 < chunks.size() && chunks[ci + 1].field == Field::Micros;
        if (!layout_has_fraction && value.size() >= 2 && (value[0] == '.' || value[0] == ',') &&
            isDigit(value, 1)) {
          size_t n = 2;
          while (isDigit(value, n)) {
            ++n;
          }
          value.remove_prefix(n);
        }
        break;
      }
      case Field::Micros: {
        constexpr size_t kWidth = 7;  // the separator and six digits
        int64_t frac = 0;
        if (value.size() < kWidth || (value[0] != '.' && value[0] != ',') ||
            !atoi(value.substr(1, kWidth - 1), frac)) {
          ok = false;
          break;
        }
        value.remove_prefix(kWidth);
        break;
      }
      case Field::Zone: {
        if (!value.empty() && value[0] == 'Z') {
          value.remove_prefix(1);
          break;
        }
        if (value.size() < 6 || value[3] != ':') {
          ok = false;
          break;
        }
        std::string_view hh = value.substr(1, 2);
        std::string_view mm = value.substr(4, 2);
        char sign = value[0];
        value.remove_prefix(6);
        int h = 0;
        int m = 0;
        ok = getNum(hh, true, h) && getNum(mm, true, m);
        if (h > 24) {
          return outOfRange("time zone offset hour");
        }
        if (m > 60) {
          return outOfRange("time zone offset minute");
        }
        if (sign != '+' && sign != '-') {
          ok = false;
        }
        break;
      }
    }
    if (!ok) {
      return cannot(hold, c.text);
    }
  }
  if (!value.empty()) {
    return head + ": extra text: " + goQuote(value);
  }
  if (day < 1 || day > daysIn(month, year)) {
    return outOfRange("day");
  }
  return std::nullopt;
}

}  // namespace

std::string_view goTimeLayoutText(GoTimeLayout layout) {
  return layout == GoTimeLayout::Rfc3339Micro ? "2006-01-02T15:04:05.000000Z07:00"
                                              : "2006-01-02T15:04:05Z07:00";
}

std::optional<std::string> goTimeParseError(GoTimeLayout layout, std::string_view value) {
  if (layout == GoTimeLayout::Rfc3339Micro) {
    return parse(kRfc3339Micro, goTimeLayoutText(layout), value);
  }
  return parse(kRfc3339, goTimeLayoutText(layout), value);
}

}  // namespace ccm::kubesim
