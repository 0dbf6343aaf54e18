// IPv4/IPv6 address and CIDR helpers.
#include "plugins/openstack/ip_address.hpp"

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>

namespace ccm::openstack {

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  std::string s(text);
  IpAddress ip;
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    ip.family = 4;
    ip.bytes[10] = 0xff;
    ip.bytes[11] = 0xff;
    std::memcpy(ip.bytes.data() + 12, &v4, 4);
    return ip;
  }
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    ip.family = 6;
    std::memcpy(ip.bytes.data(), &v6, 16);
    return ip;
  }
  return std::nullopt;
}

std::string IpAddress::toString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family == 4) {
    inet_ntop(AF_INET, bytes.data() + 12, buf, sizeof buf);
  } else {
    inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf);
  }
  return buf;
}

std::optional<Cidr> Cidr::parse(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  auto ip = IpAddress::parse(text.substr(0, slash));
  if (!ip) {
    return std::nullopt;
  }
  std::string bits(text.substr(slash + 1));
  if (bits.empty() || bits.size() > 3) {
    return std::nullopt;
  }
  for (char c : bits) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
  }
  int prefix = std::atoi(bits.c_str());
  int max = ip->family == 4 ? 32 : 128;
  if (prefix > max) {
    return std::nullopt;
  }
  Cidr c;
  c.prefix = prefix;
  c.base = *ip;
  int offset = ip->family == 4 ? 96 : 0;
  for (int bit = offset + prefix; bit < 128; ++bit) {
    c.base.bytes[static_cast<size_t>(bit / 8)] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  }
  return c;
}

bool Cidr::contains(const IpAddress& ip) const {
  if (ip.family != base.family) {
    return false;
  }
  int offset = base.family == 4 ? 96 : 0;
  for (int bit = offset; bit < offset + prefix; ++bit) {
    auto idx = static_cast<size_t>(bit / 8);
    uint8_t mask = static_cast<uint8_t>(0x80u >> (bit % 8));
    if ((ip.bytes[idx] & mask) != (base.bytes[idx] & mask)) {
      return false;
    }
  }
  return true;
}

std::string Cidr::toString() const {
  return base.toString() + "/" + std::to_string(prefix);
}

int ipFamilyOf(std::string_view text) {
  if (text.find('/') != std::string_view::npos) {
    auto c = Cidr::parse(text);
    return c ? c->base.family : 0;
  }
  auto ip = IpAddress::parse(text);
  return ip ? ip->family : 0;
}

}  // namespace ccm::openstack
