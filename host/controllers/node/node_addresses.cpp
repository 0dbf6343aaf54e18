// Node address rules.
#include "host/controllers/node/node_addresses.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fmt/format.h>
#include <string>

#include "host/controllers/common/well_known.hpp"
#include "host/runtime/text.hpp"

namespace ccm::controllers::node {
namespace {

struct Ip {
  int family = 0;  // AF_INET / AF_INET6
  std::array<unsigned char, 16> bytes{};
  bool unspecified() const {
    return std::all_of(bytes.begin(), bytes.end(), [](unsigned char b) { return b == 0; });
  }
};

std::optional<Ip> parseIp(std::string_view text) {
  std::string s(text);
  Ip ip;
  if (inet_pton(AF_INET, s.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET;
    return ip;
  }
  if (inet_pton(AF_INET6, s.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET6;
    return ip;
  }
  return std::nullopt;
}

bool equal(const Ip& a, const Ip& b) { return a.family == b.family && a.bytes == b.bytes; }

}  // namespace

bool sameIp(std::string_view a, std::string_view b) {
  auto x = parseIp(a);
  auto y = parseIp(b);
  return x && y && equal(*x, *y);
}

Addresses withKubeletHostname(const Addresses& cloud,
                              const kube::NodeList<kube::NodeAddress>& current) {
  Addresses out = cloud;
  bool cloud_has_hostname = std::any_of(cloud.begin(), cloud.end(), [](const auto& a) {
    return a.type == "Hostname";
  });
  if (!cloud_has_hostname) {
    for (const auto& a : current) {
      if (a.type == "Hostname") {
        out.push_back({std::string(a.type), std::string(a.address)});
      }
    }
  }
  return out;
}

StatusOr<Addresses> filterByProvidedNodeIp(std::string_view annotation, const Addresses& cloud) {
  std::vector<Ip> provided;
  std::vector<std::string> provided_text;
  size_t start = 0;
  while (true) {
    size_t comma = annotation.find(',', start);
    std::string_view part =
        text::trimBlanks(annotation.substr(start, comma == std::string_view::npos ? annotation.npos
                                                                        : comma - start));
    auto ip = parseIp(part);
    if (!ip) {
      return Status(Code::InvalidArgument,
                    fmt::format("could not parse \"{}\" in {}=\"{}\"", part,
                                keys::kProvidedNodeIp, annotation));
    }
    provided.push_back(*ip);
    provided_text.emplace_back(part);
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  if (provided.size() > 2) {
    return Status(Code::InvalidArgument,
                  fmt::format("{}=\"{}\" has more than two IPs", keys::kProvidedNodeIp,
                              annotation));
  }
  if (provided.size() == 2) {
    if (provided[0].family == provided[1].family) {
      return Status(Code::InvalidArgument,
                    fmt::format("{}=\"{}\" must be one IPv4 and one IPv6 address",
                                keys::kProvidedNodeIp, annotation));
    }
    if (provided[0].unspecified() || provided[1].unspecified()) {
      return Status(Code::InvalidArgument,
                    fmt::format("{}=\"{}\": a dual-stack pair cannot contain an unspecified "
                                "address",
                                keys::kProvidedNodeIp, annotation));
    }
  } else if (provided[0].unspecified()) {
    return cloud;  // "any address": no preference
  }
  Addresses out;
  std::vector<std::string> claimed;
  for (size_t p = 0; p < provided.size(); ++p) {
    bool matched = false;
    for (const auto& a : cloud) {
      auto ip = parseIp(a.address);
      if (ip && equal(*ip, provided[p])) {
        out.push_back(a);
        if (std::find(claimed.begin(), claimed.end(), a.type) == claimed.end()) {
          claimed.push_back(a.type);
        }
        matched = true;
      }
    }
    if (!matched) {
      return Status(Code::FailedPrecondition,
                    fmt::format("failed to get node address from cloud provider that matches "
                                "ip: {}",
                                provided_text[p]));
    }
  }
  for (const auto& a : cloud) {
    if (std::find(claimed.begin(), claimed.end(), a.type) == claimed.end()) {
      out.push_back(a);
    }
  }
  return out;
}

StatusOr<std::optional<Addresses>> desiredAddresses(const kube::Node& node,
                                                   const Addresses& cloud) {
  if (cloud.empty()) {
    return std::optional<Addresses>();
  }
  Addresses out = withKubeletHostname(cloud, node.addresses());
  if (auto provided = node.annotation(keys::kProvidedNodeIp)) {
    auto filtered = filterByProvidedNodeIp(*provided, out);
    if (!filtered.ok()) {
      return filtered.status();
    }
    out = std::move(filtered).value();
  }
  // The API server refuses a node status with the same (type, address) twice (422 Duplicate
  // value on status.addresses[i]); a cloud that reports one twice gets it published once.
  Addresses unique;
  unique.reserve(out.size());
  for (auto& a : out) {
    bool seen = std::any_of(unique.begin(), unique.end(), [&](const plugin::NodeAddress& u) {
      return u.type == a.type && u.address == a.address;
    });
    if (!seen) {
      unique.push_back(std::move(a));
    }
  }
  return std::optional<Addresses>(std::move(unique));
}

bool addressesChanged(const kube::NodeList<kube::NodeAddress>& current, const Addresses& desired) {
  if (current.size() != desired.size()) {
    return true;
  }
  std::vector<std::pair<std::string_view, std::string_view>> a;
  std::vector<std::pair<std::string_view, std::string_view>> b;
  for (const auto& x : current) {
    a.emplace_back(x.type, x.address);
  }
  for (const auto& x : desired) {
    b.emplace_back(x.type, x.address);
  }
  return a != b;
}

}  // namespace ccm::controllers::node
