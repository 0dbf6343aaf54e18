// IP and CIDR arithmetic.
#include "host/controllers/common/cidr.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include "host/runtime/text.hpp"

namespace ccm::controllers {
namespace {

// Sets bit i (0 = most significant) of the address.
void setBits(IpAddress& ip, uint64_t value, int from_bit, int count) {
  for (int k = 0; k < count; ++k) {
    int bit = from_bit + count - 1 - k;
    bool on = k < 64 && ((value >> k) & 1u) != 0;  // an IPv6 host part can exceed 64 bits
    uint8_t mask = static_cast<uint8_t>(0x80u >> (bit % 8));
    if (on) {
      ip.bytes[static_cast<size_t>(bit / 8)] |= mask;
    } else {
      ip.bytes[static_cast<size_t>(bit / 8)] &= static_cast<uint8_t>(~mask);
    }
  }
}

uint64_t getBits(const IpAddress& ip, int from_bit, int count) {
  uint64_t v = 0;
  for (int bit = from_bit; bit < from_bit + count; ++bit) {
    v = (v << 1) | ((ip.bytes[static_cast<size_t>(bit / 8)] >> (7 - bit % 8)) & 1u);
  }
  return v;
}

}  // namespace

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  std::string s(text);
  IpAddress ip;
  if (inet_pton(AF_INET, s.c_str(), ip.bytes.data()) == 1) {
    return ip;
  }
  if (inet_pton(AF_INET6, s.c_str(), ip.bytes.data()) == 1) {
    ip.v6 = true;
    return ip;
  }
  return std::nullopt;
}

std::string IpAddress::toString() const {
  if (!v6) {
    // Dotted decimal written here: a route pass makes one canonical text per route and pod
    // CIDR, and inet_ntop's printf was a fifth of the pass.
    std::string out;
    out.reserve(INET_ADDRSTRLEN);
    for (size_t i = 0; i < 4; ++i) {
      if (i > 0) {
        out.push_back('.');
      }
      unsigned b = bytes[i];
      if (b >= 100) {
        out.push_back(static_cast<char>('0' + b / 100));
      }
      if (b >= 10) {
        out.push_back(static_cast<char>('0' + b / 10 % 10));
      }
      out.push_back(static_cast<char>('0' + b % 10));
    }
    return out;
  }
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf);
  return buf;
}

StatusOr<Cidr> Cidr::parse(std::string_view text, bool strict) {
  auto slash = text.find('/');
  auto bad = [&](std::string_view why) {
    return Status(Code::InvalidArgument, fmt::format("invalid CIDR address: {} ({})", text, why));
  };
  if (slash == std::string_view::npos) {
    return bad("no /prefix");
  }
  auto ip = IpAddress::parse(text.substr(0, slash));
  if (!ip) {
    return bad("not an IP address");
  }
  std::string_view p = text.substr(slash + 1);
  if (p.empty() || p.size() > 3) {
    return bad("bad prefix length");
  }
  int prefix = 0;
  for (char c : p) {
    if (c < '0' || c > '9') {
      return bad("bad prefix length");
    }
    prefix = prefix * 10 + (c - '0');
  }
  if (prefix > ip->bits()) {
    return bad("prefix length too large");
  }
  Cidr c;
  c.prefix = prefix;
  c.base = *ip;
  setBits(c.base, 0, prefix, ip->bits() - prefix);
  if (strict && !(c.base == *ip)) {
    return bad("host bits are set");
  }
  return c;
}

std::string Cidr::toString() const {
  std::string out = base.toString();
  out += '/';
  out += std::to_string(prefix);
  return out;
}

bool Cidr::contains(const IpAddress& ip) const {
  if (ip.v6 != base.v6) {
    return false;
  }
  for (int bit = 0; bit < prefix; ++bit) {
    size_t byte = static_cast<size_t>(bit / 8);
    uint8_t mask = static_cast<uint8_t>(0x80u >> (bit % 8));
    if ((ip.bytes[byte] & mask) != (base.bytes[byte] & mask)) {
      return false;
    }
  }
  return true;
}

IpAddress Cidr::last() const {
  IpAddress ip = base;
  for (int bit = prefix; bit < base.bits(); ++bit) {
    ip.bytes[static_cast<size_t>(bit / 8)] |= static_cast<uint8_t>(0x80u >> (bit % 8));
  }
  return ip;
}

Cidr Cidr::subnet(int new_prefix, uint64_t index) const {
  Cidr out;
  out.prefix = new_prefix;
  out.base = base;
  setBits(out.base, index, prefix, new_prefix - prefix);
  return out;
}

uint64_t Cidr::subnetIndex(const IpAddress& ip, int new_prefix) const {
  return getBits(ip, prefix, new_prefix - prefix);
}

StatusOr<std::vector<Cidr>> parseClusterCidrs(std::string_view value) {
  auto bad = [&](std::string_view why) {
    return Status(Code::InvalidArgument,
                  fmt::format("invalid --cluster-cidr=\"{}\": {}", value, why));
  };
  std::vector<Cidr> out;
  size_t start = 0;
  while (true) {
    size_t comma = value.find(',', start);
    std::string_view part =
        text::trimBlanks(value.substr(start, comma == std::string_view::npos ? value.npos : comma - start));
    if (part.empty()) {
      return bad("empty value; set the pods' network range, e.g. "
                 "--cluster-cidr=10.244.0.0/16 (or a dual-stack pair)");
    }
    auto c = Cidr::parse(part);
    if (!c.ok()) {
      return bad(fmt::format("\"{}\" is not a CIDR", part));
    }
    out.push_back(*c);
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  if (out.size() > 2) {
    return bad("at most two CIDRs (a dual-stack pair) are allowed");
  }
  if (out.size() == 2 && out[0].v6() == out[1].v6()) {
    return bad("two CIDRs must be a dual-stack pair (one IPv4, one IPv6)");
  }
  return out;
}

std::string canonicalCidr(std::string_view text) {
  auto c = Cidr::parse(text);
  return c.ok() ? c->toString() : std::string(text);
}

}  // namespace ccm::controllers
