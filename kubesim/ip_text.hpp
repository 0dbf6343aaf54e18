// IpText: IP addresses and CIDRs read the way the API server's validation reads them (Go's
// net.ParseIP / net.ParseCIDR as in k8s.io/utils/net's "sloppy" variants: IPv4 parts may have
// leading zeros, nothing else is tolerated — no spaces, no zones), and the few operations
// kubesim's validation and Service allocation need on them.
//
// THREAD: value types and free functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ccm::kubesim {

struct IpAddress {
  std::array<uint8_t, 16> bytes{};  // IPv4 in the last four bytes
  bool v4 = false;                  // dotted-quad text, or an IPv4-mapped IPv6 address

  std::string toString() const;
};

struct IpCidr {
  IpAddress base;  // the address as written (host bits not cleared)
  int prefix = 0;

  bool contains(const IpAddress& ip) const;
  int bits() const { return base.v4 ? 32 : 128; }
  std::string toString() const;  // the network, host bits cleared ("10.96.0.0/12")
};

std::optional<IpAddress> parseIp(std::string_view text);
std::optional<IpCidr> parseCidr(std::string_view text);

// ip + offset (offset counted from the low-order end); nullopt past the family's end.
std::optional<IpAddress> addToIp(const IpAddress& ip, uint64_t offset);

}  // namespace ccm::kubesim
