// Escaping and bounding of plugin text.
#include "host/plugin/plugin_text.hpp"

#include <fmt/format.h>

#include "ccm/output_checks.hpp"

namespace ccm::plugin {
namespace {

bool isControl(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

void escapeControl(char32_t cp, std::string& out) {
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
  out += cp < 0x80 ? fmt::format("\\x{:02x}", static_cast<unsigned>(cp))
                   : fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
}

// Where a cut at max_bytes must fall so no UTF-8 sequence is split.
size_t cutPoint(std::string_view text, size_t max_bytes) {
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

}  // namespace

size_t utf8Sequence(std::string_view text, size_t i, char32_t* cp) {
  return sdk::utf8Sequence(text, i, cp);
}

std::string safeText(std::string_view text, size_t max_bytes) {
  size_t keep = text.size() > max_bytes ? cutPoint(text, max_bytes) : text.size();
  std::string_view kept = text.substr(0, keep);
  std::string out;
  out.reserve(kept.size() + 32);
  size_t i = 0;
  while (i < kept.size()) {
    char32_t cp = 0;
    size_t n = utf8Sequence(kept, i, &cp);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(kept[i]));
      ++i;
      continue;
    }
    if (isControl(cp)) {
      escapeControl(cp, out);
    } else {
      out.append(kept.substr(i, n));
    }
    i += n;
  }
  if (keep < text.size()) {
    out += fmt::format("\u2026 [cut {} bytes]", text.size() - keep);
  }
  return out;
}

std::string checkPrintable(std::string_view field, std::string_view text, size_t max_bytes) {
  if (text.size() > max_bytes) {
    return fmt::format("{} is {} bytes long (at most {}): \"{}\"", field, text.size(), max_bytes,
                       safeText(text, 64));
  }
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    size_t n = utf8Sequence(text, i, &cp);
    if (n == 0) {
      return fmt::format("{} \"{}\" is not valid UTF-8 (at byte {})", field,
                         safeText(text, max_bytes), i);
    }
    if (isControl(cp)) {
      return fmt::format("{} \"{}\" has a control character at byte {}", field,
                         safeText(text, max_bytes), i);
    }
    i += n;
  }
  return {};
}

}  // namespace ccm::plugin
