// Text a plugin hands the host (log messages, error messages, its name and version), made
// safe to print: bounded, with invalid UTF-8 and control characters escaped, so a plugin can
// neither break a JSON log line, nor drive the operator's terminal with escape sequences, nor
// flood the log. What was cut is always visible in the result.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ccm::plugin {

// The longest log message and error message the host keeps from a plugin, in bytes.
inline constexpr size_t kMaxPluginLogBytes = size_t{16} * 1024;
inline constexpr size_t kMaxPluginErrorBytes = size_t{4} * 1024;

// text with every control character (C0, DEL, C1) and every byte that is not part of valid
// UTF-8 escaped as \n, \r, \t, \xHH (a byte) or \u00HH (a C1 character); other UTF-8 is
// kept. When text is longer than max_bytes, only its first max_bytes (ending on a character
// boundary) are kept and "… [cut N bytes]" is appended, N being how many bytes were dropped.
std::string safeText(std::string_view text, size_t max_bytes);

// Why text is not a clean identity string of at most max_bytes (printable UTF-8 without
// control characters), or an empty string when it is. field names it in the message, and
// the offending text is shown escaped: `version "1.0\x1b[31m" has a control character at
// byte 3`.
std::string checkPrintable(std::string_view field, std::string_view text, size_t max_bytes);

// The length of the valid UTF-8 sequence at text[i] (1 to 4), with its code point in *cp;
// 0 when the bytes there are not valid UTF-8 (overlong, surrogate, truncated, > U+10FFFF).
size_t utf8Sequence(std::string_view text, size_t i, char32_t* cp);

}  // namespace ccm::plugin
