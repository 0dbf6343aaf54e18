// IPv4 helpers of the fake cloud: parsing and printing addresses and CIDR blocks.
#include "plugins/fake-cloud/ipv4.hpp"

#include <arpa/inet.h>

#include <exception>

namespace ccm::fakecloud {

std::optional<uint32_t> parseIpv4(std::string_view text) {
  in_addr a{};
  if (inet_pton(AF_INET, std::string(text).c_str(), &a) != 1) {
    return std::nullopt;
  }
  return ntohl(a.s_addr);
}

std::optional<Ipv4Block> parseIpv4Block(std::string_view cidr) {
  auto slash = cidr.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  int prefix = 0;
  try {
    prefix = std::stoi(std::string(cidr.substr(slash + 1)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  auto address = parseIpv4(cidr.substr(0, slash));
  if (!address || prefix < 8 || prefix > 30) {
    return std::nullopt;
  }
  uint32_t mask = ~uint32_t{0} << (32 - prefix);
  return Ipv4Block{*address & mask, uint32_t{1} << (32 - prefix)};
}

std::string formatIpv4(uint32_t address) {
  in_addr a{};
  a.s_addr = htonl(address);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

}  // namespace ccm::fakecloud
