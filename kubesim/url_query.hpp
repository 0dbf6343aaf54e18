// UrlQuery: a request target split into path and decoded query parameters (percent-decoding,
// '+' as space; repeated keys keep every value, get() returns the first).
//
// THREAD: value type.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ccm::kubesim {

class UrlQuery {
 public:
  // Parses "/api/v1/nodes?limit=5&watch=1". Returns nullopt for undecodable escapes.
  static std::optional<UrlQuery> parse(std::string_view target);

  const std::string& path() const { return path_; }
  bool has(std::string_view key) const;
  // First value of key (empty when absent).
  std::string get(std::string_view key) const;
  std::vector<std::string> getAll(std::string_view key) const;
  // Go's strconv.ParseBool truth ("1", "t", "T", "true", "TRUE", "True") of the first value.
  bool getBool(std::string_view key) const;
  const std::vector<std::pair<std::string, std::string>>& params() const { return params_; }

  static std::optional<std::string> percentDecode(std::string_view s, bool plus_is_space);

 private:
  std::string path_;
  std::vector<std::pair<std::string, std::string>> params_;
};

}  // namespace ccm::kubesim
