// String helpers for the OpenStack plugin.
#include "plugins/openstack/text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

#include "ccm/provider.hpp"

namespace ccm::openstack {

std::string toLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string toUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string_view trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) {
    ++b;
  }
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) {
    --e;
  }
  return s.substr(b, e - b);
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool contains(const std::vector<std::string>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::vector<std::string> splitAny(std::string_view s, std::string_view separators) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || separators.find(s[i]) != std::string_view::npos) {
      std::string_view piece = trim(s.substr(start, i - start));
      if (!piece.empty()) {
        out.emplace_back(piece);
      }
      start = i + 1;
    }
  }
  return out;
}

std::string urlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3);
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

bool isValidLabelValue(std::string_view s) {
  if (s.empty()) {
    return true;
  }
  if (s.size() > 63) {
    return false;
  }
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(s.front()) || !alnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

std::string sanitizeZone(std::string_view zone) {
  std::string out;
  bool in_bad_run = false;
  for (char c : zone) {
    bool good = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (good) {
      out.push_back(c);
      in_bad_run = false;
    } else if (!in_bad_run) {
      out.push_back('-');
      in_bad_run = true;
    }
  }
  auto trimmable = [](char c) { return c == '-' || c == '_' || c == '.'; };
  size_t b = 0;
  size_t e = out.size();
  while (b < e && trimmable(out[b])) {
    ++b;
  }
  while (e > b && trimmable(out[e - 1])) {
    --e;
  }
  out = out.substr(b, e - b);
  if (out.size() > 63) {
    out.resize(63);
  }
  return out;
}

std::string truncateUtf8(std::string_view s, size_t n) {
  if (s.size() <= n) {
    return std::string(s);
  }
  size_t cut = n;
  // Step back over continuation bytes so that no sequence is split.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return std::string(s.substr(0, cut));
}

std::string fnv1aHex(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

std::string quoteRegex(std::string_view s) {
  static constexpr std::string_view kSpecial = R"(\.+*?()|[]{}^$)";
  std::string out;
  for (char c : s) {
    if (kSpecial.find(c) != std::string_view::npos) {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace ccm::openstack
