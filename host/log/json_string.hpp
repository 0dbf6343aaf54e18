// JSON string literals written by hand: the JSON log format, the secure server's Status
// bodies and kubesim's answers all quote text the same way (", \ and control characters
// escaped; everything else, UTF-8 included, copied as it is).
//
// THREAD: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace ccm::json {

// Appends s to out as a JSON string literal, quotes included.
void appendString(std::string& out, std::string_view s);

// s as a JSON string literal, quotes included.
std::string quoted(std::string_view s);

}  // namespace ccm::json
