// CIDR parsing and containment.
#include "host/controllers/route/cidr.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <charconv>
#include <cstring>

namespace ccm::controllers::route {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  if (text.empty() || text.size() > 64) {
    return std::nullopt;
  }
  std::string s(text);
  IpAddress ip;
  if (s.find(':') != std::string::npos) {
    in6_addr a{};
    if (inet_pton(AF_INET6, s.c_str(), &a) != 1) {
      return std::nullopt;
    }
    ip.v6 = true;
    std::memcpy(ip.bytes.data(), &a, 16);
    return ip;
  }
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) {
    return std::nullopt;
  }
  std::memcpy(ip.bytes.data(), &a, 4);
  return ip;
}

std::string IpAddress::toString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (v6) {
    in6_addr a{};
    std::memcpy(&a, bytes.data(), 16);
    inet_ntop(AF_INET6, &a, buf, sizeof buf);
  } else {
    in_addr a{};
    std::memcpy(&a, bytes.data(), 4);
    inet_ntop(AF_INET, &a, buf, sizeof buf);
  }
  return buf;
}

std::optional<Cidr> Cidr::parse(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  auto ip = IpAddress::parse(text.substr(0, slash));
  if (!ip) {
    return std::nullopt;
  }
  std::string_view bits = text.substr(slash + 1);
  int prefix = -1;
  auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), prefix);
  if (bits.empty() || ec != std::errc() || end != bits.data() + bits.size() || prefix < 0 ||
      prefix > static_cast<int>(ip->size() * 8) || (bits.size() > 1 && bits[0] == '0')) {
    return std::nullopt;
  }
  Cidr c;
  c.prefix_ = prefix;
  c.network_ = *ip;
  for (size_t i = 0; i < ip->size(); ++i) {
    int keep = prefix - static_cast<int>(i) * 8;
    uint8_t mask = keep >= 8 ? 0xff : keep <= 0 ? 0 : static_cast<uint8_t>(0xff << (8 - keep));
    c.network_.bytes[i] &= mask;
  }
  return c;
}

IpAddress Cidr::last() const {
  IpAddress out = network_;
  for (size_t i = 0; i < out.size(); ++i) {
    int keep = prefix_ - static_cast<int>(i) * 8;
    uint8_t mask = keep >= 8 ? 0xff : keep <= 0 ? 0 : static_cast<uint8_t>(0xff << (8 - keep));
    out.bytes[i] |= static_cast<uint8_t>(~mask);
  }
  return out;
}

bool Cidr::contains(const IpAddress& ip) const {
  if (ip.v6 != network_.v6) {
    return false;
  }
  for (size_t i = 0; i < ip.size(); ++i) {
    int keep = prefix_ - static_cast<int>(i) * 8;
    if (keep <= 0) {
      break;
    }
    uint8_t mask = keep >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - keep));
    if ((ip.bytes[i] & mask) != network_.bytes[i]) {
      return false;
    }
  }
  return true;
}

std::string Cidr::toString() const {
  return fmt::format("{}/{}", network_.toString(), prefix_);
}

std::string canonicalCidr(std::string_view text) {
  auto c = Cidr::parse(text);
  return c ? c->toString() : std::string(text);
}

StatusOr<std::vector<Cidr>> parseClusterCidrs(std::string_view flag_value) {
  auto bad = [&](std::string_view why) {
    return Status(Code::InvalidArgument,
                  fmt::format("invalid --cluster-cidr=\"{}\": {}; the route controller needs the "
                              "cluster's pod CIDR (for example --cluster-cidr=10.244.0.0/16), or "
                              "disable it with --configure-cloud-routes=false",
                              flag_value, why));
  };
  std::vector<Cidr> out;
  std::string_view rest = flag_value;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view piece = trim(rest.substr(0, comma));
    auto c = Cidr::parse(piece);
    if (!c) {
      return bad(piece.empty() ? std::string("empty value")
                               : fmt::format("\"{}\" is not a CIDR", piece));
    }
    out.push_back(*c);
    if (comma == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(comma + 1);
  }
  if (out.size() > 2) {
    return bad("at most two CIDRs (a dual-stack pair) are allowed");
  }
  if (out.size() == 2 && out[0].v6() == out[1].v6()) {
    return bad("two CIDRs must be a dual-stack pair (one IPv4, one IPv6)");
  }
  return out;
}

bool isResponsibleForRoute(const std::vector<Cidr>& cluster_cidrs, std::string_view destination) {
  auto c = Cidr::parse(destination);
  if (!c) {
    return false;
  }
  IpAddress first = c->first();
  IpAddress last = c->last();
  for (const auto& cluster : cluster_cidrs) {
    if (cluster.contains(first) || cluster.contains(last)) {
      return true;
    }
  }
  return false;
}

}  // namespace ccm::controllers::route
