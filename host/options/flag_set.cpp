// FlagSet implementation: pflag-compatible parsing, Go durations, help output.
#include "host/options/flag_set.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <utility>

namespace ccm::options {
namespace {

Status invalid(std::string_view value, std::string_view flag, std::string_view why) {
  return Status(Code::InvalidArgument,
                fmt::format("invalid argument \"{}\" for \"--{}\" flag: {}", value, flag, why));
}

std::optional<bool> parseBool(std::string_view v) {
  if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") {
    return true;
  }
  if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False") {
    return false;
  }
  return std::nullopt;
}

std::optional<int64_t> parseInt(std::string_view v) {
  if (v.empty()) {
    return std::nullopt;
  }
  size_t i = 0;
  bool neg = false;
  if (v[0] == '-' || v[0] == '+') {
    neg = v[0] == '-';
    i = 1;
  }
  if (i == v.size()) {
    return std::nullopt;
  }
  int64_t out = 0;
  for (; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') {
      return std::nullopt;
    }
    if (out > (std::numeric_limits<int64_t>::max() - (v[i] - '0')) / 10) {
      return std::nullopt;
    }
    out = out * 10 + (v[i] - '0');
  }
  return neg ? -out : out;
}

std::vector<std::string> splitList(std::string_view v) {
  std::vector<std::string> out;
  if (v.empty()) {
    return out;
  }
  size_t start = 0;
  while (true) {
    size_t comma = v.find(',', start);
    std::string_view part =
        v.substr(start, comma == std::string_view::npos ? v.npos : comma - start);
    out.emplace_back(part);
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return out;
}

std::string joinList(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    out += (out.empty() ? "" : ",") + s;
  }
  return out;
}

std::string formatFloat(double d) {
  std::string s = fmt::format("{}", d);
  return s;
}

// A flag with the fields every typed flag shares; `set` parses and stores a value.
FlagSet::Flag typedFlag(std::string name, std::string type, std::string help,
                        std::string default_text, std::function<Status(std::string_view)> set) {
  FlagSet::Flag f;
  f.name = std::move(name);
  f.type = std::move(type);
  f.help = std::move(help);
  f.default_text = std::move(default_text);
  f.set = std::move(set);
  return f;
}

}  // namespace

std::optional<std::chrono::nanoseconds> parseGoDuration(std::string_view text) {
  std::string_view s = text;
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
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
    bool digits = false;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) {
      digits = digits || s[i] != '.';
      ++i;
    }
    if (!digits) {
      return std::nullopt;
    }
    long double number = 0;
    try {
      number = std::stold(std::string(s.substr(0, i)));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    s.remove_prefix(i);
    size_t j = 0;
    while (j < s.size() && !((s[j] >= '0' && s[j] <= '9') || s[j] == '.')) {
      ++j;
    }
    std::string_view unit = s.substr(0, j);
    s.remove_prefix(j);
    long double scale = 0;
    if (unit == "ns") {
      scale = 1;
    } else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") {
      scale = 1e3;
    } else if (unit == "ms") {
      scale = 1e6;
    } else if (unit == "s") {
      scale = 1e9;
    } else if (unit == "m") {
      scale = 60e9;
    } else if (unit == "h") {
      scale = 3600e9;
    } else {
      return std::nullopt;  // a missing or unknown unit
    }
    total += number * scale;
  }
  if (total > static_cast<long double>(std::numeric_limits<int64_t>::max())) {
    return std::nullopt;
  }
  auto ns = static_cast<int64_t>(std::llround(total));
  return std::chrono::nanoseconds(neg ? -ns : ns);
}

std::string formatGoDuration(std::chrono::nanoseconds d) {
  int64_t ns = d.count();
  if (ns == 0) {
    return "0s";
  }
  std::string sign = ns < 0 ? "-" : "";
  uint64_t u = ns < 0 ? static_cast<uint64_t>(-ns) : static_cast<uint64_t>(ns);
  auto trim = [](std::string s) {
    if (s.find('.') != std::string::npos) {
      while (!s.empty() && s.back() == '0') {
        s.pop_back();
      }
      if (!s.empty() && s.back() == '.') {
        s.pop_back();
      }
    }
    return s;
  };
  if (u < 1000) {
    return fmt::format("{}{}ns", sign, u);
  }
  if (u < 1000000) {
    return sign + trim(fmt::format("{:.3f}", static_cast<double>(u) / 1e3)) + "µs";
  }
  if (u < 1000000000) {
    return sign + trim(fmt::format("{:.6f}", static_cast<double>(u) / 1e6)) + "ms";
  }
  uint64_t hours = u / 3600000000000ULL;
  u -= hours * 3600000000000ULL;
  uint64_t minutes = u / 60000000000ULL;
  u -= minutes * 60000000000ULL;
  std::string secs = trim(fmt::format("{:.9f}", static_cast<double>(u) / 1e9)) + "s";
  std::string out = sign;
  if (hours > 0) {
    out += fmt::format("{}h{}m", hours, minutes);
  } else if (minutes > 0) {
    out += fmt::format("{}m", minutes);
  }
  return out + secs;
}

FlagSet::Flag& FlagSet::add(Flag flag) {
  flag.group = group_;
  flags_.push_back(std::move(flag));
  return flags_.back();
}

FlagSet::Flag& FlagSet::addString(std::string name, std::string* target, const std::string& def,
                                  std::string help) {
  *target = def;
  return add(
      typedFlag(std::move(name), "string", std::move(help), def, [target](std::string_view v) {
        *target = std::string(v);
        return okStatus();
      }));
}

FlagSet::Flag& FlagSet::addBool(const std::string& name, bool* target, bool def, std::string help) {
  *target = def;
  return add(typedFlag(name, "bool", std::move(help), def ? "true" : "false",
                       [target, n = name](std::string_view v) {
                         auto b = parseBool(v);
                         if (!b) {
                           return invalid(v, n,
                                          "strconv.ParseBool: parsing \"" + std::string(v) +
                                              "\": invalid syntax");
                         }
                         *target = *b;
                         return okStatus();
                       }));
}

FlagSet::Flag& FlagSet::addInt(const std::string& name, int64_t* target, int64_t def,
                               std::string help) {
  *target = def;
  return add(typedFlag(name, "int", std::move(help), std::to_string(def),
                       [target, n = name](std::string_view v) {
                         auto i = parseInt(v);
                         if (!i) {
                           return invalid(v, n, "parse error: not an integer");
                         }
                         *target = *i;
                         return okStatus();
                       }));
}

FlagSet::Flag& FlagSet::addInt32(const std::string& name, int32_t* target, int32_t def,
                                 std::string help) {
  *target = def;
  Flag f{name,
         "",
         "int32",
         std::move(help),
         std::to_string(def),
         "",
         Support::Implemented,
         false,
         false,
         [target, n = name](std::string_view v) {
           auto i = parseInt(v);
           if (!i || *i < std::numeric_limits<int32_t>::min() ||
               *i > std::numeric_limits<int32_t>::max()) {
             return invalid(v, n, "parse error: not a 32-bit integer");
           }
           *target = static_cast<int32_t>(*i);
           return okStatus();
         }};
  return add(std::move(f));
}

FlagSet::Flag& FlagSet::addFloat(const std::string& name, double* target, double def,
                                 std::string help) {
  *target = def;
  return add(typedFlag(name, "float", std::move(help), formatFloat(def),
                       [target, n = name](std::string_view v) {
                         try {
                           size_t used = 0;
                           double d = std::stod(std::string(v), &used);
                           if (used != v.size() || !std::isfinite(d)) {
                             return invalid(v, n, "parse error: not a number");
                           }
                           *target = d;
                         } catch (const std::exception&) {
                           return invalid(v, n, "parse error: not a number");
                         }
                         return okStatus();
                       }));
}

FlagSet::Flag& FlagSet::addDuration(const std::string& name, std::chrono::milliseconds* target,
                                    std::chrono::milliseconds def, std::string help) {
  *target = def;
  return add(typedFlag(name, "duration", std::move(help), formatGoDuration(def),
                       [target, n = name](std::string_view v) {
                         auto d = parseGoDuration(v);
                         if (!d) {
                           return invalid(v, n,
                                          "time: invalid duration \"" + std::string(v) + "\"");
                         }
                         *target = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
                         return okStatus();
                       }));
}

FlagSet::Flag& FlagSet::addStrings(std::string name, std::vector<std::string>* target,
                                   const std::vector<std::string>& def, std::string help) {
  *target = def;
  return add(typedFlag(std::move(name), "strings", std::move(help), "[" + joinList(def) + "]",
                       [target, first = std::make_shared<bool>(true)](std::string_view v) {
                         // Like pflag's StringSlice: the first use replaces the default, later uses
                         // append.
                         if (*first) {
                           target->clear();
                           *first = false;
                         }
                         for (auto& s : splitList(v)) {
                           target->push_back(std::move(s));
                         }
                         return okStatus();
                       }));
}

FlagSet::Flag* FlagSet::lookup(std::string_view name) {
  for (auto& f : flags_) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

FlagSet::Flag* FlagSet::lookupShort(std::string_view s) {
  for (auto& f : flags_) {
    if (!f.shorthand.empty() && f.shorthand == s) {
      return &f;
    }
  }
  return nullptr;
}

const FlagSet::Flag* FlagSet::find(std::string_view name) const {
  for (const auto& f : flags_) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

bool FlagSet::changed(std::string_view name) const {
  const Flag* f = find(name);
  return f != nullptr && f->changed;
}

Status FlagSet::parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argc) {
        return Status(Code::InvalidArgument,
                      fmt::format("unknown command \"{}\" for \"{}\": {} takes no arguments",
                                  argv[i + 1], program_, program_));
      }
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      return Status(Code::InvalidArgument,
                    fmt::format("unknown command \"{}\" for \"{}\": {} takes no arguments", arg,
                                program_, program_));
    }
    Flag* flag = nullptr;
    std::string_view name;
    std::optional<std::string_view> value;
    if (arg.substr(0, 2) == "--") {
      std::string_view body = arg.substr(2);
      auto eq = body.find('=');
      name = body.substr(0, eq);
      if (eq != std::string_view::npos) {
        value = body.substr(eq + 1);
      }
      if (name.empty() || name[0] == '-' || name[0] == '=') {
        return Status(Code::InvalidArgument, fmt::format("bad flag syntax: {}", arg));
      }
      flag = lookup(name);
      if (flag == nullptr) {
        return Status(Code::InvalidArgument, fmt::format("unknown flag: --{}", name));
      }
    } else {
      std::string_view body = arg.substr(1);
      auto eq = body.find('=');
      std::string_view shorthand = body.substr(0, 1);
      flag = lookupShort(shorthand);
      if (flag == nullptr) {
        return Status(Code::InvalidArgument,
                      fmt::format("unknown shorthand flag: '{}' in {}", shorthand, arg));
      }
      name = flag->name;
      if (eq != std::string_view::npos) {
        if (eq != 1) {
          return Status(Code::InvalidArgument, fmt::format("bad flag syntax: {}", arg));
        }
        value = body.substr(eq + 1);
      } else if (body.size() > 1) {
        value = body.substr(1);  // -v2
      }
    }
    if (!value) {
      if (flag->type == "bool") {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return Status(Code::InvalidArgument,
                      fmt::format("flag needs an argument: --{}", flag->name));
      }
    }
    Status s = flag->set(*value);
    if (!s.ok()) {
      return s;
    }
    flag->changed = true;
  }
  return okStatus();
}

std::vector<const FlagSet::Flag*> FlagSet::setButUnimplemented() const {
  std::vector<const Flag*> out;
  for (const auto& f : flags_) {
    if (f.changed && f.support == Support::Accepted) {
      out.push_back(&f);
    }
  }
  return out;
}

std::vector<std::string> FlagSet::describeValues(
    const std::function<std::string(const Flag&)>& value_of) const {
  std::vector<std::string> out;
  for (const auto& f : flags_) {
    out.push_back(fmt::format("--{}={}", f.name, value_of(f)));
  }
  return out;
}

std::string FlagSet::usage() const {
  std::string out;
  std::string current;
  bool first_group = true;
  for (const auto& f : flags_) {
    if (f.hidden) {
      continue;
    }
    if (first_group || f.group != current) {
      out += fmt::format("\n{}:\n\n", f.group.empty() ? "Flags" : f.group);
      current = f.group;
      first_group = false;
    }
    std::string lhs =
        f.shorthand.empty() ? "      --" + f.name : "  -" + f.shorthand + ", --" + f.name;
    if (f.type != "bool") {
      lhs += " " + f.type;
    }
    std::string help = f.help;
    if (f.support == Support::Accepted) {
      help += " [accepted for compatibility; not implemented by ccm]";
    }
    bool show_default = !(f.type == "bool" && f.default_text == "false") &&
                        !f.default_text.empty() && f.default_text != "[]" &&
                        !(f.type == "int" && f.default_text == "0");
    if (show_default) {
      help += f.type == "string" ? fmt::format(" (default \"{}\")", f.default_text)
                                 : fmt::format(" (default {})", f.default_text);
    }
    // The help text starts in column 46, on the next line when the flag is too long.
    out += lhs;
    if (lhs.size() >= 44) {
      out += '\n';
      out.append(46, ' ');
    } else {
      out.append(46 - lhs.size(), ' ');
    }
    out += help;
    out += '\n';
  }
  return out;
}

}  // namespace ccm::options
