// FlagSet: command-line flags with the syntax Kubernetes components use (spf13/pflag):
// --name=value, --name value, boolean --name / --name=false, shorthand -v=2 / -v 2, Go
// durations (1m30s), comma-separated lists, "--" ends flags. Unknown flags, malformed values
// and positional arguments are errors naming the flag.
//
// THREAD: main thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/runtime/status.hpp"

namespace ccm::options {

// Parses a Go duration ("300ms", "1.5h", "2m30s", "0"). Negative durations are accepted.
std::optional<std::chrono::nanoseconds> parseGoDuration(std::string_view text);
// Formats a duration the way Go does ("5m0s", "10s", "1.5s", "0s").
std::string formatGoDuration(std::chrono::nanoseconds d);

class FlagSet {
 public:
  // Whether the host implements a flag: Accepted flags parse but have no effect yet; a
  // start-up warning names them when the user sets them.
  enum class Support { Implemented, Accepted };

  struct Flag {
    std::string name;
    std::string shorthand;  // "" or one letter
    std::string type;       // "string", "bool", "int", "float", "duration", "strings"
    std::string help;
    std::string default_text;
    std::string group;
    Support support = Support::Implemented;
    bool hidden = false;
    bool changed = false;
    std::function<Status(std::string_view)> set;  // parses and stores a value
  };

  explicit FlagSet(std::string program) : program_(std::move(program)) {}

  // Groups order the --help output ("Generic flags", "Secure serving flags", ...).
  void setGroup(std::string group) { group_ = std::move(group); }

  Flag& addString(std::string name, std::string* target, const std::string& def, std::string help);
  Flag& addBool(const std::string& name, bool* target, bool def, std::string help);
  Flag& addInt(const std::string& name, int64_t* target, int64_t def, std::string help);
  Flag& addInt32(const std::string& name, int32_t* target, int32_t def, std::string help);
  Flag& addFloat(const std::string& name, double* target, double def, std::string help);
  Flag& addDuration(const std::string& name, std::chrono::milliseconds* target,
                    std::chrono::milliseconds def, std::string help);
  Flag& addStrings(std::string name, std::vector<std::string>* target,
                   const std::vector<std::string>& def, std::string help);

  // Parses argv[1..]. Errors are InvalidArgument with pflag's wording
  // ("unknown flag: --foo", "invalid argument \"x\" for \"--v\" flag: ...").
  Status parse(int argc, const char* const* argv);

  bool changed(std::string_view name) const;
  const Flag* find(std::string_view name) const;
  // Flags the user set that are Accepted but not implemented.
  std::vector<const Flag*> setButUnimplemented() const;
  // "--name=value" for every flag, for the verbose start-up dump.
  std::vector<std::string> describeValues(
      const std::function<std::string(const Flag&)>& value_of) const;

  std::string usage() const;
  const std::vector<Flag>& flags() const { return flags_; }

 private:
  Flag& add(Flag flag);
  Flag* lookup(std::string_view name);
  Flag* lookupShort(std::string_view s);

  std::string program_;
  std::string group_;
  std::vector<Flag> flags_;
};

}  // namespace ccm::options
