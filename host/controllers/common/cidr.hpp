// IP addresses and CIDRs (IPv4 and IPv6) for the controllers that handle pod networks.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/runtime/status.hpp"

namespace ccm::controllers {

struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4 uses the first 4

  static std::optional<IpAddress> parse(std::string_view text);
  std::string toString() const;
  int bits() const { return v6 ? 128 : 32; }
  bool operator==(const IpAddress&) const = default;
};

struct Cidr {
  IpAddress base;  // network address (host bits cleared)
  int prefix = 0;

  // "10.244.0.0/16", "fd00::/48". The host bits must be zero unless `strict` is false (then
  // they are cleared).
  static StatusOr<Cidr> parse(std::string_view text, bool strict = false);
  std::string toString() const;
  bool v6() const { return base.v6; }
  bool contains(const IpAddress& ip) const;
  // The first and the last address of the range.
  IpAddress first() const { return base; }
  IpAddress last() const;
  // The index-th subnet of size new_prefix inside this CIDR (new_prefix >= prefix).
  Cidr subnet(int new_prefix, uint64_t index) const;
  // Which subnet of size new_prefix holds ip (when contains(ip)).
  uint64_t subnetIndex(const IpAddress& ip, int new_prefix) const;
  bool operator==(const Cidr&) const = default;
};

// --cluster-cidr: one CIDR, or a comma-separated dual-stack pair (one IPv4, one IPv6), blanks
// trimmed. Errors read `invalid --cluster-cidr="<value>": <why>` (an empty value is an error).
StatusOr<std::vector<Cidr>> parseClusterCidrs(std::string_view value);

// The canonical text of a CIDR ("10.244.1.7/24" -> "10.244.1.0/24", IPv6 in RFC 5952 form), or
// the input unchanged when it is not a CIDR. Pod and route CIDRs are compared in this form.
std::string canonicalCidr(std::string_view text);

}  // namespace ccm::controllers
