// IpAddress and Cidr: parsing, family, containment and canonical text for IPv4/IPv6, as the
// address rules, source ranges and routes need them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ccm::openstack {

struct IpAddress {
  int family = 0;                   // 4 or 6
  std::array<uint8_t, 16> bytes{};  // IPv4 as ::ffff:a.b.c.d (Go's 16-byte form)

  static std::optional<IpAddress> parse(std::string_view text);
  bool isV4() const { return family == 4; }
  std::string toString() const;
  auto operator<=>(const IpAddress&) const = default;
};

struct Cidr {
  IpAddress base;  // masked
  int prefix = 0;  // bits, relative to the family (0..32 or 0..128)

  static std::optional<Cidr> parse(std::string_view text);
  bool contains(const IpAddress& ip) const;
  // Canonical text of the network ("10.0.0.0/8").
  std::string toString() const;
  auto operator<=>(const Cidr&) const = default;
};

// IPv4 for "a.b.c.d" and "a.b.c.d/n", 6 for IPv6 forms, 0 when not parsable.
int ipFamilyOf(std::string_view address_or_cidr);

}  // namespace ccm::openstack
