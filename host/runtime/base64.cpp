// Base64 codecs shared by the host and kubesim.
#include "host/runtime/base64.hpp"

#include <algorithm>
#include <cstdint>

namespace ccm {
namespace {

constexpr std::string_view kStandard =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrlSafe =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string encode(std::string_view data, std::string_view alphabet, bool pad) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  auto byte = [&](size_t i) -> uint32_t {
    return i < data.size() ? static_cast<uint8_t>(data[i]) : 0;
  };
  for (size_t i = 0; i < data.size(); i += 3) {
    uint32_t group = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    size_t bytes = std::min<size_t>(3, data.size() - i);
    // n input bytes give n + 1 characters; the rest of the quantum is padding.
    for (size_t c = 0; c < 4; ++c) {
      if (c <= bytes) {
        out.push_back(alphabet[(group >> (18 - 6 * c)) & 63]);
      } else if (pad) {
        out.push_back('=');
      }
    }
  }
  return out;
}

// The 6-bit value of a character of either alphabet, or -1.
int sextet(char c) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 26;
  }
  if (c >= '0' && c <= '9') {
    return c - '0' + 52;
  }
  if (c == '+' || c == '-') {
    return 62;
  }
  if (c == '/' || c == '_') {
    return 63;
  }
  return -1;
}

}  // namespace

std::string base64Encode(std::string_view data) {
  return encode(data, kStandard, true);
}

std::string base64UrlEncode(std::string_view data) {
  return encode(data, kUrlSafe, false);
}

std::optional<std::string> base64DecodeStrict(std::string_view text) {
  size_t symbols = 0;
  for (char c : text) {
    if (c == '\r' || c == '\n') {
      continue;
    }
    if (c == '-' || c == '_' || c == ' ' || c == '\t') {
      return std::nullopt;
    }
    ++symbols;
  }
  if (symbols % 4 != 0) {
    return std::nullopt;
  }
  return base64Decode(text);
}

std::optional<std::string> base64UrlDecodeStrict(std::string_view text, size_t* bad_offset) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  size_t in_quantum = 0;
  size_t last_symbol = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\r' || c == '\n') {
      continue;
    }
    int v = c == '+' || c == '/' ? -1 : sextet(c);
    if (v < 0) {
      if (bad_offset != nullptr) {
        *bad_offset = i;
      }
      return std::nullopt;
    }
    last_symbol = i;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    in_quantum = (in_quantum + 1) % 4;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xffU));
    }
  }
  if (in_quantum == 1) {  // one lone symbol cannot encode a byte
    if (bad_offset != nullptr) {
      *bad_offset = last_symbol;
    }
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> base64Decode(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      continue;
    }
    if (c == '=') {
      padding = true;
      continue;
    }
    int v = sextet(c);
    if (padding || v < 0) {
      return std::nullopt;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6) {
    return std::nullopt;  // a dangling single character carries no whole byte
  }
  return out;
}

}  // namespace ccm
