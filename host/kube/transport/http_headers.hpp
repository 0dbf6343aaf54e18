// HTTP answer header fields as both transports read them (HttpTransport parses the header
// block itself; libcurl hands RestClient one "Name: value" line at a time).
//
// THREAD: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ccm::kube::http {

// ASCII case-insensitive comparison (header names, tokens).
bool iequals(std::string_view a, std::string_view b);
// Leading and trailing spaces, tabs, CR and LF removed.
std::string_view trimField(std::string_view v);
// Whether a comma-separated field value ("keep-alive, Upgrade") holds `token`.
bool hasToken(std::string_view value, std::string_view token);

struct Field {
  std::string_view name;
  std::string_view value;  // trimmed
};
// "Name: value\r\n" split at the first colon; nullopt for a line without one.
std::optional<Field> splitField(std::string_view line);

// A Warning value's text: "299 - \"text\"" -> "text" (the value itself without quotes).
std::string warningText(std::string_view value);
// A Retry-After value in whole seconds; -1 when it is not a non-negative number (an HTTP
// date is not honoured, as client-go).
long retryAfterSeconds(std::string_view value);

}  // namespace ccm::kube::http
