// Validation rules for provider output: sizes, UTF-8, address types and IPs, CIDRs.
#include "host/plugin/output_validation.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <tuple>

#include "ccm/validation.hpp"
#include "host/plugin/plugin_text.hpp"
#include "host/runtime/text.hpp"

namespace ccm::plugin {
namespace {

constexpr size_t kMaxAddresses = 256;
constexpr size_t kMaxLabels = 256;
constexpr size_t kMaxIngress = 64;
constexpr size_t kMaxPorts = 1024;

bool validUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    char32_t cp = 0;
    size_t n = utf8Sequence(s, i, &cp);
    if (n == 0 || cp == 0) {
      return false;
    }
    i += n;
  }
  return true;
}

bool isCidr(std::string_view s) {
  auto slash = s.find('/');
  if (slash == std::string_view::npos || !isIpAddress(s.substr(0, slash))) {
    return false;
  }
  std::string_view bits = s.substr(slash + 1);
  if (bits.empty() || bits.size() > 3) {
    return false;
  }
  int n = 0;
  for (char c : bits) {
    if (c < '0' || c > '9') {
      return false;
    }
    n = n * 10 + (c - '0');
  }
  bool v6 = s.substr(0, slash).find(':') != std::string_view::npos;
  return n <= (v6 ? 128 : 32);
}

std::string validateAddress(std::string_view field, const sdk::NodeAddress& a) {
  if (a.type != "Hostname" && a.type != "InternalIP" && a.type != "ExternalIP" &&
      a.type != "InternalDNS" && a.type != "ExternalDNS") {
    return fmt::format("{}.type \"{}\" is not one of Hostname, InternalIP, ExternalIP, "
                       "InternalDNS, ExternalDNS",
                       field, a.type.substr(0, 64));
  }
  if (auto e = validateText(fmt::format("{}.address", field), a.address, 253); !e.empty()) {
    return e;
  }
  if (a.address.empty()) {
    return fmt::format("{}.address is empty", field);
  }
  if ((a.type == "InternalIP" || a.type == "ExternalIP") && !isIpAddress(a.address)) {
    return fmt::format("{}.address \"{}\" is not an IP address", field, a.address);
  }
  return {};
}

}  // namespace

bool isIpAddress(std::string_view s) {
  if (s.empty() || s.size() > 45) {
    return false;
  }
  std::string z(s);
  in_addr a4{};
  in6_addr a6{};
  return inet_pton(AF_INET, z.c_str(), &a4) == 1 || inet_pton(AF_INET6, z.c_str(), &a6) == 1;
}

std::string validateText(std::string_view field, std::string_view value, size_t max_bytes) {
  if (value.size() > max_bytes) {
    return fmt::format("{} is {} bytes long (at most {})", field, value.size(), max_bytes);
  }
  if (!validUtf8(value)) {
    return fmt::format("{} is not valid UTF-8 text", field);
  }
  return {};
}

std::string validateMetadata(const sdk::InstanceMetadata& m,
                             std::string_view provider_id_prefix) {
  for (auto [name, value, max] :
       {std::tuple{"providerID", std::string_view(m.provider_id), size_t{1024}},
        std::tuple{"instanceType", std::string_view(m.instance_type), size_t{63}},
        std::tuple{"zone", std::string_view(m.zone), size_t{63}},
        std::tuple{"region", std::string_view(m.region), size_t{63}}}) {
    if (auto e = validateText(name, value, max); !e.empty()) {
      return e;
    }
  }
  // An empty providerID is "none yet" (the node controller's rule); any other must be the
  // provider's own.
  if (!m.provider_id.empty()) {
    if (auto e = sdk::checkProviderId(m.provider_id, provider_id_prefix); !e.empty()) {
      return e;
    }
  }
  if (m.addresses.size() > kMaxAddresses) {
    return fmt::format("{} addresses (at most {})", m.addresses.size(), kMaxAddresses);
  }
  for (size_t i = 0; i < m.addresses.size(); ++i) {
    if (auto e = validateAddress(fmt::format("addresses[{}]", i), m.addresses[i]); !e.empty()) {
      return e;
    }
  }
  if (m.additional_labels.size() > kMaxLabels) {
    return fmt::format("{} additional labels (at most {})", m.additional_labels.size(),
                       kMaxLabels);
  }
  for (size_t i = 0; i < m.additional_labels.size(); ++i) {
    const auto& [k, v] = m.additional_labels[i];
    if (auto e = validateText(fmt::format("additionalLabels[{}].key", i), k, 317); !e.empty()) {
      return e;
    }
    if (auto e = validateText(fmt::format("additionalLabels[{}].value", i), v, 63); !e.empty()) {
      return e;
    }
  }
  return {};
}

std::string validateLbStatus(const sdk::LoadBalancerStatus& s) {
  if (s.ingress.size() > kMaxIngress) {
    return fmt::format("{} ingress entries (at most {})", s.ingress.size(), kMaxIngress);
  }
  for (size_t i = 0; i < s.ingress.size(); ++i) {
    const sdk::Ingress& in = s.ingress[i];
    std::string f = fmt::format("ingress[{}]", i);
    if (in.ip.empty() && in.hostname.empty()) {
      return f + " has neither ip nor hostname";
    }
    if (!in.ip.empty() && !isIpAddress(in.ip)) {
      return fmt::format("{}.ip \"{}\" is not an IP address", f, in.ip.substr(0, 64));
    }
    if (auto e = validateText(f + ".hostname", in.hostname, 253); !e.empty()) {
      return e;
    }
    // The API server refuses these in status.loadBalancer.ingress[].hostname (422).
    if (!in.hostname.empty() && isIpAddress(in.hostname)) {
      return fmt::format("{}.hostname \"{}\" is an IP address, not a DNS name", f, in.hostname);
    }
    if (!in.hostname.empty() && !text::isDns1123Subdomain(in.hostname)) {
      return fmt::format("{}.hostname \"{}\" is not a lowercase RFC 1123 subdomain", f,
                         in.hostname.substr(0, 64));
    }
    if (!in.ip_mode.empty() && in.ip_mode != "VIP" && in.ip_mode != "Proxy") {
      return fmt::format("{}.ipMode \"{}\" is not VIP or Proxy", f, in.ip_mode.substr(0, 64));
    }
    if (in.ports.size() > kMaxPorts) {
      return fmt::format("{} has {} ports (at most {})", f, in.ports.size(), kMaxPorts);
    }
    for (size_t j = 0; j < in.ports.size(); ++j) {
      const sdk::PortStatus& p = in.ports[j];
      if (p.port < 1 || p.port > 65535) {
        return fmt::format("{}.ports[{}].port {} is out of range", f, j, p.port);
      }
      if (p.protocol != "TCP" && p.protocol != "UDP" && p.protocol != "SCTP") {
        return fmt::format("{}.ports[{}].protocol \"{}\" is not TCP, UDP or SCTP", f, j,
                           p.protocol.substr(0, 16));
      }
      if (auto e = validateText(fmt::format("{}.ports[{}].error", f, j), p.error, 316);
          !e.empty()) {
        return e;
      }
    }
  }
  return {};
}

std::string validateLbAnnotations(const sdk::LoadBalancerStatus& s,
                                  std::string_view annotation_domain) {
  if (s.annotations.size() + s.removed_annotations.size() > kMaxLabels) {
    return fmt::format("{} annotations set and removed (at most {})",
                       s.annotations.size() + s.removed_annotations.size(), kMaxLabels);
  }
  for (size_t i = 0; i < s.annotations.size(); ++i) {
    if (auto e = validateText(fmt::format("annotations[{}].value", i), s.annotations[i].second,
                              size_t{64} * 1024);
        !e.empty()) {
      return e;
    }
  }
  return sdk::checkAnnotations(s.annotations, s.removed_annotations, annotation_domain);
}

std::string validateRoute(const sdk::Route& r) {
  if (auto e = validateText("route.name", r.name, 1024); !e.empty()) {
    return e;
  }
  if (auto e = validateText("route.targetNode", r.target_node, 253); !e.empty()) {
    return e;
  }
  if (!isCidr(r.destination_cidr)) {
    return fmt::format("route.destinationCIDR \"{}\" is not a CIDR",
                       r.destination_cidr.substr(0, 64));
  }
  if (r.target_node_addresses.size() > kMaxAddresses) {
    return "route has too many target node addresses";
  }
  for (size_t i = 0; i < r.target_node_addresses.size(); ++i) {
    if (auto e = validateAddress(fmt::format("route.targetNodeAddresses[{}]", i),
                                 r.target_node_addresses[i]);
        !e.empty()) {
      return e;
    }
  }
  return {};
}

}  // namespace ccm::plugin
