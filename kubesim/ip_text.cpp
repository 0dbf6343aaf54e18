// IpText: Go-compatible IP and CIDR parsing.
#include "kubesim/ip_text.hpp"

#include <arpa/inet.h>

namespace ccm::kubesim {
namespace {

// Go's dtoi: decimal digits (leading zeros allowed) up to a non-digit; false without digits
// or when too big.
bool decimalPrefix(std::string_view s, size_t& pos, int64_t& out) {
  int64_t n = 0;
  size_t start = pos;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    n = n * 10 + (s[pos] - '0');
    if (n >= 0xFFFFFF) {
      return false;
    }
    ++pos;
  }
  out = n;
  return pos > start;
}

std::optional<IpAddress> parseV4(std::string_view s) {
  IpAddress ip;
  ip.v4 = true;
  ip.bytes[10] = 0xff;
  ip.bytes[11] = 0xff;
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      if (pos >= s.size() || s[pos] != '.') {
        return std::nullopt;
      }
      ++pos;
    }
    int64_t n = 0;
    if (!decimalPrefix(s, pos, n) || n > 0xFF) {
      return std::nullopt;
    }
    ip.bytes[size_t{12} + static_cast<size_t>(i)] = static_cast<uint8_t>(n);
  }
  if (pos != s.size()) {
    return std::nullopt;
  }
  return ip;
}

bool isV4Mapped(const std::array<uint8_t, 16>& b) {
  for (size_t i = 0; i < 10; ++i) {
    if (b[i] != 0) {
      return false;
    }
  }
  return b[10] == 0xff && b[11] == 0xff;
}

}  // namespace

std::string IpAddress::toString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (v4) {
    inet_ntop(AF_INET, bytes.data() + 12, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, bytes.data(), buf, sizeof(buf));
  }
  return buf;
}

bool IpCidr::contains(const IpAddress& ip) const {
  if (ip.v4 != base.v4) {
    return false;
  }
  size_t first = base.v4 ? 12 : 0;
  int left = prefix;
  for (size_t i = first; i < 16 && left > 0; ++i, left -= 8) {
    uint8_t mask = left >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - left));
    if ((ip.bytes[i] & mask) != (base.bytes[i] & mask)) {
      return false;
    }
  }
  return true;
}

std::string IpCidr::toString() const {
  IpAddress net = base;
  size_t first = base.v4 ? 12 : 0;
  int left = prefix;
  for (size_t i = first; i < 16; ++i, left -= 8) {
    uint8_t mask = left >= 8 ? 0xff : (left <= 0 ? 0 : static_cast<uint8_t>(0xff << (8 - left)));
    net.bytes[i] &= mask;
  }
  return net.toString() + "/" + std::to_string(prefix);
}

std::optional<IpAddress> parseIp(std::string_view text) {
  if (text.find(':') == std::string_view::npos) {
    return parseV4(text);
  }
  if (text.find('%') != std::string_view::npos) {
    return std::nullopt;  // zones are not IPs to the API server
  }
  IpAddress ip;
  std::string s(text);
  if (inet_pton(AF_INET6, s.c_str(), ip.bytes.data()) != 1) {
    return std::nullopt;
  }
  ip.v4 = isV4Mapped(ip.bytes);
  return ip;
}

std::optional<IpCidr> parseCidr(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view addr = text.substr(0, slash);
  std::string_view mask = text.substr(slash + 1);
  bool dotted = addr.find(':') == std::string_view::npos;
  auto ip = parseIp(addr);
  size_t pos = 0;
  int64_t n = 0;
  if (!ip || !decimalPrefix(mask, pos, n) || pos != mask.size()) {
    return std::nullopt;
  }
  // The prefix counts in the written form's bits: 32 for dotted text, 128 for IPv6 text.
  int bits = dotted ? 32 : 128;
  if (n > bits) {
    return std::nullopt;
  }
  IpCidr c;
  c.base = *ip;
  c.prefix = static_cast<int>(n);
  if (!dotted && ip->v4) {
    // An IPv4-mapped IPv6 network keeps IPv6 prefix arithmetic.
    c.base.v4 = false;
  }
  return c;
}

std::optional<IpAddress> addToIp(const IpAddress& ip, uint64_t offset) {
  IpAddress out = ip;
  size_t first = ip.v4 ? 12 : 0;
  uint64_t carry = offset;
  for (size_t i = 16; i-- > first && carry != 0;) {
    uint64_t v = out.bytes[i] + (carry & 0xff);
    carry >>= 8;
    out.bytes[i] = static_cast<uint8_t>(v & 0xff);
    carry += v >> 8;
  }
  if (carry != 0) {
    return std::nullopt;
  }
  return out;
}

}  // namespace ccm::kubesim
