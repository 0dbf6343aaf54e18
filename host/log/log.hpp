// The host's logger: klog's text format by default, JSON with --logging-format=json, -v
// verbosity levels, structured key/value fields, and redaction of every registered secret
// (whoever logs it: host code or a plugin through the host service).
//
// THREAD: every function may be called from any thread; a line is written with one write(2).
#pragma once

#include <chrono>
#include <concepts>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

namespace ccm::log {

enum class Severity { Info, Warning, Error, Fatal };
enum class Format { Text, Json };

// One structured field: key="value" in text, "key":"value" in JSON. Numbers and booleans are
// written bare.
class Field {
 public:
  template <typename T>
  Field(std::string_view key, const T& value) : key_(key) {  // NOLINT
    using D = std::decay_t<T>;
    if constexpr (std::is_same_v<D, bool>) {
      value_ = value ? "true" : "false";
      quoted_ = false;
    } else if constexpr (std::is_arithmetic_v<D>) {
      value_ = fmt::format("{}", value);
      quoted_ = false;
    } else if constexpr (requires { value.count(); typename D::period; }) {
      value_ = formatDuration(std::chrono::duration_cast<std::chrono::microseconds>(value));
    } else if constexpr (requires { value.toString(); }) {
      value_ = value.toString();
    } else {
      value_ = std::string(std::string_view(value));
    }
  }

  std::string_view key() const { return key_; }
  const std::string& value() const { return value_; }
  bool quoted() const { return quoted_; }

  static std::string formatDuration(std::chrono::microseconds d);

 private:
  std::string_view key_;
  std::string value_;
  bool quoted_ = true;
};

using Fields = std::initializer_list<Field>;
// Fields built at run time (e.g. a plugin's log_fields); each Field's key must outlive the
// call.
using FieldSpan = std::span<const Field>;

struct Config {
  Format format = Format::Text;
  int verbosity = 0;
  int fd = 2;  // where lines go (stderr)
};

// Sets format, verbosity and destination. Call on the main thread at start-up.
void configure(const Config& config);
Config currentConfig();

// True when messages at verbosity v are printed (v <= -v).
bool enabled(int v);

// Every later line has each occurrence of value replaced by "<redacted>". Values shorter
// than 4 bytes are ignored (they would redact ordinary words).
void registerSecret(std::string_view value);

// Replaces registered secrets in text (also used for strings the host passes on elsewhere).
std::string redact(std::string_view text);

// Test hook: when set, lines go to sink instead of the file descriptor.
void setSinkForTest(std::function<void(std::string_view line)> sink);

// Where a line was logged: the caller's file and line. Not std::source_location, which
// clang 14 with libstdc++ 12 (the fuzz build) cannot compile; the builtins behind it work
// with both compilers. Default arguments are evaluated at the call site, so `here()` as a
// default argument names the caller.
struct Where {
  const char* file;
  unsigned line;
  static constexpr Where here(const char* file = __builtin_FILE(),
                              unsigned line = __builtin_LINE()) {
    return Where{file, line};
  }
};

void write(Severity severity, int v, std::string_view message, FieldSpan fields,
           const Where& where);
inline void write(Severity severity, int v, std::string_view message, Fields fields,
                  const Where& where) {
  write(severity, v, message, FieldSpan(fields.begin(), fields.size()), where);
}

inline void info(std::string_view message, Fields fields = {},
                 const Where& where = Where::here()) {
  write(Severity::Info, 0, message, fields, where);
}

// Info at verbosity v: printed only with -v=v or higher.
inline void infoV(int v, std::string_view message, Fields fields = {},
                  const Where& where = Where::here()) {
  if (enabled(v)) {
    write(Severity::Info, v, message, fields, where);
  }
}

inline void warning(std::string_view message, Fields fields = {},
                    const Where& where = Where::here()) {
  write(Severity::Warning, 0, message, fields, where);
}

inline void error(std::string_view message, Fields fields = {},
                  const Where& where = Where::here()) {
  write(Severity::Error, 0, message, fields, where);
}

}  // namespace ccm::log
