// IPv4 helpers of the fake cloud: address text, and the CIDR blocks that load balancer and
// automatic instance addresses come from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ccm::fakecloud {

// A CIDR block: `size` addresses from `base` (both in host byte order).
struct Ipv4Block {
  uint32_t base = 0;
  uint32_t size = 0;
};

// "a.b.c.d" in host byte order; nothing when the text is not a dotted-quad address.
std::optional<uint32_t> parseIpv4(std::string_view text);

// "a.b.c.d/n" with n from 8 to 30 (a block with usable hosts); the base is the network address.
std::optional<Ipv4Block> parseIpv4Block(std::string_view cidr);

// The dotted-quad text of an address in host byte order.
std::string formatIpv4(uint32_t address);

}  // namespace ccm::fakecloud
