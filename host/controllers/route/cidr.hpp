// IP addresses and CIDR blocks for the route controller: parsing (IPv4 and IPv6), canonical
// text, containment, and the --cluster-cidr flag (one CIDR or a dual-stack pair).
//
// THREAD: plain values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/runtime/status.hpp"

namespace ccm::controllers::route {

struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4 uses the first 4 bytes

  static std::optional<IpAddress> parse(std::string_view text);
  size_t size() const { return v6 ? 16 : 4; }
  std::string toString() const;
  bool operator==(const IpAddress&) const = default;
};

class Cidr {
 public:
  // "10.244.1.0/24", "fd00:10:244::/64". Host bits may be set ("10.0.0.5/8" is the block
  // 10.0.0.0/8), as Go's net.ParseCIDR allows. nullopt when it is not a CIDR.
  static std::optional<Cidr> parse(std::string_view text);

  bool v6() const { return network_.v6; }
  int prefix() const { return prefix_; }
  // The first and last address of the block.
  const IpAddress& first() const { return network_; }
  IpAddress last() const;
  bool contains(const IpAddress& ip) const;
  // "10.244.1.0/24"; IPv6 in RFC 5952 form.
  std::string toString() const;

 private:
  IpAddress network_;
  int prefix_ = 0;
};

// The canonical text of a CIDR ("10.244.1.0/24"), or the input unchanged when it does not
// parse. Route and pod CIDRs are compared in this form.
std::string canonicalCidr(std::string_view text);

// Parses --cluster-cidr: comma-separated, blanks trimmed, one CIDR or a dual-stack pair (one
// IPv4 and one IPv6). An error names the flag and the bad value.
StatusOr<std::vector<Cidr>> parseClusterCidrs(std::string_view flag_value);

// True when the route's destination belongs to this cluster: its first or its last address
// lies inside one of the cluster CIDRs (upstream's rule). Unparsable destinations: false.
bool isResponsibleForRoute(const std::vector<Cidr>& cluster_cidrs, std::string_view destination);

}  // namespace ccm::controllers::route
