// ccm/plugin_text.hpp — text a plugin hands the host (its name and version, log and error
// messages) made safe to print, and the checks the host applies to the plugin's name and
// version at load. Header-only, C++20; the host and the fake host (ccm/testing/fake_host.hpp)
// both use it, so a plugin the fake host accepts is accepted by the host.
//
// THREAD: pure functions.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

#include "ccm/output_checks.hpp"

namespace ccm::sdk {
inline namespace v1 {

// The longest version string a plugin may declare, in bytes.
inline constexpr size_t kMaxPluginVersionBytes = 64;
// The longest provider name, in bytes (the host loads <name>.so and the plugin must call
// itself <name>).
inline constexpr size_t kMaxProviderNameBytes = 63;

// A provider name: 1 to 63 bytes of [a-z0-9-].
inline bool isValidProviderName(std::string_view name) {
  if (name.empty() || name.size() > kMaxProviderNameBytes) {
    return false;
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      return false;
    }
  }
  return true;
}

namespace text_detail {

inline bool isControl(char32_t cp) { return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f); }

inline void escapeControl(char32_t cp, std::string& out) {
  switch (cp) {
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      break;
  }
  char buf[8];
  std::snprintf(buf, sizeof buf, cp < 0x80 ? "\\x%02x" : "\\u%04x", static_cast<unsigned>(cp));
  out += buf;
}

// Where a cut at max_bytes must fall so that no UTF-8 sequence is split.
inline size_t cutPoint(std::string_view text, size_t max_bytes) {
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    size_t n = utf8Sequence(text, i, &cp);
    n = n == 0 ? 1 : n;
    if (i + n > max_bytes) {
      break;
    }
    i += n;
  }
  return i;
}

}  // namespace text_detail

// text with every control character (C0, DEL, C1) and every byte that is not part of valid
// UTF-8 escaped as \n, \r, \t, \xHH (a byte) or \u00HH (a C1 character); other UTF-8 is
// kept. When text is longer than max_bytes, only its first max_bytes (ending on a character
// boundary) are kept and "… [cut N bytes]" is appended, N being how many bytes were dropped.
inline std::string safeText(std::string_view text, size_t max_bytes) {
  size_t keep = text.size() > max_bytes ? text_detail::cutPoint(text, max_bytes) : text.size();
  std::string_view kept = text.substr(0, keep);
  std::string out;
  out.reserve(kept.size() + 32);
  size_t i = 0;
  while (i < kept.size()) {
    char32_t cp = 0;
    size_t n = utf8Sequence(kept, i, &cp);
    if (n == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(kept[i]));
      out += buf;
      ++i;
      continue;
    }
    if (text_detail::isControl(cp)) {
      text_detail::escapeControl(cp, out);
    } else {
      out.append(kept.substr(i, n));
    }
    i += n;
  }
  if (keep < text.size()) {
    out += "\u2026 [cut " + std::to_string(text.size() - keep) + " bytes]";
  }
  return out;
}

// Why text is not a clean identity string of at most max_bytes (printable UTF-8 without
// control characters), or an empty string when it is. field names it in the message, and
// the offending text is shown escaped: `its version "1.0\x1b[31m" has a control character at
// byte 3`.
inline std::string checkPrintable(std::string_view field, std::string_view text,
                                  size_t max_bytes) {
  if (text.size() > max_bytes) {
    return std::string(field) + " is " + std::to_string(text.size()) + " bytes long (at most " +
           std::to_string(max_bytes) + "): \"" + safeText(text, 64) + "\"";
  }
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    size_t n = utf8Sequence(text, i, &cp);
    if (n == 0) {
      return std::string(field) + " \"" + safeText(text, max_bytes) +
             "\" is not valid UTF-8 (at byte " + std::to_string(i) + ")";
    }
    if (text_detail::isControl(cp)) {
      return std::string(field) + " \"" + safeText(text, max_bytes) +
             "\" has a control character at byte " + std::to_string(i);
    }
    i += n;
  }
  return {};
}

// The name and version of a negotiated ccm_plugin, checked as the host checks them at load
// (the host also requires the name to be the one it loaded the file as): empty when both are
// acceptable, else what is wrong.
inline std::string checkPluginIdentity(std::string_view name, std::string_view version) {
  if (!isValidProviderName(name)) {
    return "it calls itself \"" + safeText(name, 64) +
           "\", which is not a provider name (1 to 63 of lowercase letters, digits and '-')";
  }
  if (std::string problem = checkPrintable("its version", version, kMaxPluginVersionBytes);
      !problem.empty()) {
    return problem + " (ccm_plugin.version must be printable text, e.g. \"1.4.2\")";
  }
  return {};
}

}  // namespace v1
}  // namespace ccm::sdk
