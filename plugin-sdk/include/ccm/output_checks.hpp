// ccm/output_checks.hpp — the checks the host makes on everything a plugin emits
// (header-only). The host and the fake host (ccm/testing/fake_host.hpp) both run these, so
// an output the fake host accepts in a provider's unit tests is one the host accepts too, and
// what it refuses carries the host's message.
//
// Two steps, in this order:
//   1. the shape of the C structs, before anything is read from them: every pointer/length
//      pair consistent ({data=NULL, size=12} and {addresses=NULL, address_count=3} are
//      refused, never read as empty), no NULL in an array of pointers, every count bounded
//      before its array is read (checkMetadataShape, checkLbStatusShape, checkRouteShape);
//   2. the content of the copies (ccm/types.hpp): sizes, UTF-8, address types, IPs, CIDRs,
//      hostnames, ports, the 1.1 providerID prefix and annotation domain
//      (validateMetadata, validateLbStatus, validateLbAnnotations, validateRoute).
// Each returns an empty string when the value is acceptable, else one sentence naming the
// field ("addresses is NULL with address_count 3", "ingress[0].ip \"not-an-ip\" is not an IP
// address").
//
// THREAD: pure functions.
#pragma once

#include <arpa/inet.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "ccm/provider_abi.h"
#include "ccm/types.hpp"
#include "ccm/validation.hpp"

namespace ccm::sdk {
inline namespace v1 {

// The most items of one array the host reads from a plugin's output.
inline constexpr size_t kMaxOutputAddresses = 256;
inline constexpr size_t kMaxOutputLabels = 256;
inline constexpr size_t kMaxOutputIngress = 64;
inline constexpr size_t kMaxOutputPorts = 1024;
inline constexpr size_t kMaxOutputAnnotations = 256;

// The length of the valid UTF-8 sequence at text[i] (1 to 4), with its code point in *cp;
// 0 when the bytes there are not valid UTF-8 (overlong, surrogate, truncated, > U+10FFFF).
inline size_t utf8Sequence(std::string_view text, size_t i, char32_t* cp) {
  auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t n = 0;
  char32_t v = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    v = c & 0x1Fu;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    v = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    v = c & 0x07u;
  } else {
    return 0;
  }
  if (i + n > text.size()) {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(text[i + k]);
    if ((cc & 0xC0) != 0x80) {
      return 0;
    }
    v = (v << 6) | (cc & 0x3Fu);
  }
  if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
      (v >= 0xD800 && v <= 0xDFFF)) {
    return 0;
  }
  *cp = v;
  return n;
}

// Valid UTF-8 without NUL.
inline bool isValidUtf8Text(std::string_view s) {
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

// True for a syntactically valid IPv4 or IPv6 address.
inline bool isIpAddress(std::string_view s) {
  if (s.empty() || s.size() > 45) {
    return false;
  }
  std::string z(s);
  in_addr a4{};
  in6_addr a6{};
  return inet_pton(AF_INET, z.c_str(), &a4) == 1 || inet_pton(AF_INET6, z.c_str(), &a6) == 1;
}

// "10.244.1.0/24", "fd00::/64".
inline bool isCidr(std::string_view s) {
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

namespace detail {

// "<field>[<i>]" and "<field>[<i>].<member>".
inline std::string indexed(std::string_view field, size_t i, std::string_view member = {}) {
  std::string out(field);
  out += '[';
  out += std::to_string(i);
  out += ']';
  if (!member.empty()) {
    out += '.';
    out += member;
  }
  return out;
}

// The value quoted as the host's messages quote it, cut to max bytes.
inline std::string q(std::string_view s, size_t max = std::string_view::npos) {
  std::string out = "\"";
  out += s.substr(0, max);
  out += '"';
  return out;
}

// An array field and its count: consistent and bounded.
inline std::string checkArray(std::string_view field, std::string_view count_field,
                              const void* data, size_t count, size_t max) {
  if (data == nullptr && count != 0) {
    return std::string(field) + " is NULL with " + std::string(count_field) + " " +
           std::to_string(count);
  }
  if (count > max) {
    return std::string(count_field) + " " + std::to_string(count) + " is more than the " +
           std::to_string(max) + " the host accepts";
  }
  return {};
}

}  // namespace detail

// ---- 1. shapes ---------------------------------------------------------------------------

inline std::string checkStrShape(std::string_view field, ccm_str s) {
  if (s.data == nullptr && s.size != 0) {
    return std::string(field) + " has data NULL with size " + std::to_string(s.size);
  }
  return {};
}

namespace detail {

inline std::string checkAddressesShape(std::string_view field, std::string_view count_field,
                                       const ccm_node_address* addresses, size_t count) {
  if (auto e = checkArray(field, count_field, addresses, count, kMaxOutputAddresses);
      !e.empty()) {
    return e;
  }
  for (size_t i = 0; i < count; ++i) {
    if (auto e = checkStrShape(indexed(field, i, "type"), addresses[i].type); !e.empty()) {
      return e;
    }
    if (auto e = checkStrShape(indexed(field, i, "address"), addresses[i].address); !e.empty()) {
      return e;
    }
  }
  return {};
}

inline std::string checkPairsShape(std::string_view field, std::string_view count_field,
                                   const ccm_kv* kv, size_t count, size_t max) {
  if (auto e = checkArray(field, count_field, kv, count, max); !e.empty()) {
    return e;
  }
  for (size_t i = 0; i < count; ++i) {
    if (auto e = checkStrShape(indexed(field, i, "key"), kv[i].key); !e.empty()) {
      return e;
    }
    if (auto e = checkStrShape(indexed(field, i, "value"), kv[i].value); !e.empty()) {
      return e;
    }
  }
  return {};
}

inline std::string checkIngressShape(const std::string& field, const ccm_lb_ingress* raw) {
  ccm_lb_ingress in = copyStruct(raw);
  for (auto [name, value] : {std::pair{"ip", in.ip}, std::pair{"hostname", in.hostname},
                             std::pair{"ip_mode", in.ip_mode}}) {
    if (auto e = checkStrShape(field + "." + name, value); !e.empty()) {
      return e;
    }
  }
  std::string ports = field + ".ports";
  if (auto e = checkArray(ports, "port_count", in.ports, in.port_count, kMaxOutputPorts);
      !e.empty()) {
    return e;
  }
  for (size_t j = 0; j < in.port_count; ++j) {
    if (in.ports[j] == nullptr) {
      return indexed(ports, j) + " is NULL";
    }
    ccm_port_status p = copyStruct(in.ports[j]);
    if (auto e = checkStrShape(indexed(ports, j, "protocol"), p.protocol); !e.empty()) {
      return e;
    }
    if (auto e = checkStrShape(indexed(ports, j, "error"), p.error); !e.empty()) {
      return e;
    }
  }
  return {};
}

}  // namespace detail

inline std::string checkMetadataShape(const ccm_instance_metadata* metadata) {
  ccm_instance_metadata m = copyStruct(metadata);
  for (auto [name, value] :
       {std::pair{"provider_id", m.provider_id}, std::pair{"instance_type", m.instance_type},
        std::pair{"zone", m.zone}, std::pair{"region", m.region}}) {
    if (auto e = checkStrShape(name, value); !e.empty()) {
      return e;
    }
  }
  if (auto e = detail::checkAddressesShape("addresses", "address_count", m.addresses,
                                           m.address_count);
      !e.empty()) {
    return e;
  }
  return detail::checkPairsShape("additional_labels", "additional_label_count",
                                 m.additional_labels, m.additional_label_count,
                                 kMaxOutputLabels);
}

// annotations: whether to read the 1.1 annotation fields (only from a plugin that chose minor
// 1 or later: an older one may leave them unset).
inline std::string checkLbStatusShape(const ccm_lb_status* status, bool annotations = true) {
  ccm_lb_status s = copyStruct(status);
  if (auto e = detail::checkArray("ingress", "ingress_count", s.ingress, s.ingress_count,
                                  kMaxOutputIngress);
      !e.empty()) {
    return e;
  }
  for (size_t i = 0; i < s.ingress_count; ++i) {
    if (s.ingress[i] == nullptr) {
      return detail::indexed("ingress", i) + " is NULL";
    }
    if (auto e = detail::checkIngressShape(detail::indexed("ingress", i), s.ingress[i]);
        !e.empty()) {
      return e;
    }
  }
  // Since 1.1; zero (absent) in a 1.0 plugin's shorter struct.
  if (!annotations) {
    return {};
  }
  if (auto e = detail::checkPairsShape("annotations", "annotation_count", s.annotations,
                                       s.annotation_count, kMaxOutputAnnotations);
      !e.empty()) {
    return e;
  }
  if (auto e = detail::checkArray("removed_annotations", "removed_annotation_count",
                                  s.removed_annotations, s.removed_annotation_count,
                                  kMaxOutputAnnotations);
      !e.empty()) {
    return e;
  }
  for (size_t i = 0; i < s.removed_annotation_count; ++i) {
    if (auto e = checkStrShape(detail::indexed("removed_annotations", i),
                               s.removed_annotations[i]);
        !e.empty()) {
      return e;
    }
  }
  return {};
}

inline std::string checkRouteShape(const ccm_route* route) {
  ccm_route r = copyStruct(route);
  for (auto [name, value] : {std::pair{"name", r.name}, std::pair{"target_node", r.target_node},
                             std::pair{"destination_cidr", r.destination_cidr}}) {
    if (auto e = checkStrShape(name, value); !e.empty()) {
      return e;
    }
  }
  return detail::checkAddressesShape("target_node_addresses", "target_node_address_count",
                                     r.target_node_addresses, r.target_node_address_count);
}

// ---- 2. content ----------------------------------------------------------------------------

// At most max_bytes of valid UTF-8 without NUL.
inline std::string validateText(std::string_view field, std::string_view value,
                                size_t max_bytes) {
  if (value.size() > max_bytes) {
    return std::string(field) + " is " + std::to_string(value.size()) + " bytes long (at most " +
           std::to_string(max_bytes) + ")";
  }
  if (!isValidUtf8Text(value)) {
    return std::string(field) + " is not valid UTF-8 text";
  }
  return {};
}

namespace detail {

inline std::string validateAddress(const std::string& field, const NodeAddress& a) {
  if (a.type != "Hostname" && a.type != "InternalIP" && a.type != "ExternalIP" &&
      a.type != "InternalDNS" && a.type != "ExternalDNS") {
    return field + ".type " + q(a.type, 64) +
           " is not one of Hostname, InternalIP, ExternalIP, InternalDNS, ExternalDNS";
  }
  if (auto e = validateText(field + ".address", a.address, 253); !e.empty()) {
    return e;
  }
  if (a.address.empty()) {
    return field + ".address is empty";
  }
  if ((a.type == "InternalIP" || a.type == "ExternalIP") && !isIpAddress(a.address)) {
    return field + ".address " + q(a.address) + " is not an IP address";
  }
  return {};
}

}  // namespace detail

// provider_id_prefix: the plugin's declared prefix (ABI 1.1); a non-empty providerID must
// start with it. Empty: not declared.
inline std::string validateMetadata(const InstanceMetadata& m,
                                    std::string_view provider_id_prefix = {}) {
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
    if (auto e = checkProviderId(m.provider_id, provider_id_prefix); !e.empty()) {
      return e;
    }
  }
  if (m.addresses.size() > kMaxOutputAddresses) {
    return std::to_string(m.addresses.size()) + " addresses (at most " +
           std::to_string(kMaxOutputAddresses) + ")";
  }
  for (size_t i = 0; i < m.addresses.size(); ++i) {
    if (auto e = detail::validateAddress(detail::indexed("addresses", i), m.addresses[i]);
        !e.empty()) {
      return e;
    }
  }
  if (m.additional_labels.size() > kMaxOutputLabels) {
    return std::to_string(m.additional_labels.size()) + " additional labels (at most " +
           std::to_string(kMaxOutputLabels) + ")";
  }
  for (size_t i = 0; i < m.additional_labels.size(); ++i) {
    const auto& [k, v] = m.additional_labels[i];
    if (auto e = validateText(detail::indexed("additionalLabels", i, "key"), k, 317);
        !e.empty()) {
      return e;
    }
    if (auto e = validateText(detail::indexed("additionalLabels", i, "value"), v, 63);
        !e.empty()) {
      return e;
    }
  }
  return {};
}

inline std::string validateLbStatus(const LoadBalancerStatus& s) {
  if (s.ingress.size() > kMaxOutputIngress) {
    return std::to_string(s.ingress.size()) + " ingress entries (at most " +
           std::to_string(kMaxOutputIngress) + ")";
  }
  for (size_t i = 0; i < s.ingress.size(); ++i) {
    const Ingress& in = s.ingress[i];
    std::string f = detail::indexed("ingress", i);
    if (in.ip.empty() && in.hostname.empty()) {
      return f + " has neither ip nor hostname";
    }
    if (!in.ip.empty() && !isIpAddress(in.ip)) {
      return f + ".ip " + detail::q(in.ip, 64) + " is not an IP address";
    }
    if (auto e = validateText(f + ".hostname", in.hostname, 253); !e.empty()) {
      return e;
    }
    // The API server refuses these in status.loadBalancer.ingress[].hostname (422).
    if (!in.hostname.empty() && isIpAddress(in.hostname)) {
      return f + ".hostname " + detail::q(in.hostname) + " is an IP address, not a DNS name";
    }
    if (!in.hostname.empty() && !isDns1123Subdomain(in.hostname)) {
      return f + ".hostname " + detail::q(in.hostname, 64) +
             " is not a lowercase RFC 1123 subdomain";
    }
    if (!in.ip_mode.empty() && in.ip_mode != "VIP" && in.ip_mode != "Proxy") {
      return f + ".ipMode " + detail::q(in.ip_mode, 64) + " is not VIP or Proxy";
    }
    if (in.ports.size() > kMaxOutputPorts) {
      return f + " has " + std::to_string(in.ports.size()) + " ports (at most " +
             std::to_string(kMaxOutputPorts) + ")";
    }
    for (size_t j = 0; j < in.ports.size(); ++j) {
      const PortStatus& p = in.ports[j];
      std::string pf = detail::indexed(f + ".ports", j);
      if (p.port < 1 || p.port > 65535) {
        return pf + ".port " + std::to_string(p.port) + " is out of range";
      }
      if (p.protocol != "TCP" && p.protocol != "UDP" && p.protocol != "SCTP") {
        return pf + ".protocol " + detail::q(p.protocol, 16) + " is not TCP, UDP or SCTP";
      }
      if (auto e = validateText(pf + ".error", p.error, 316); !e.empty()) {
        return e;
      }
    }
  }
  return {};
}

// The annotations of a status (ABI 1.1) against the plugin's declared annotation domain
// (empty: none may be written); the message names the key.
inline std::string validateLbAnnotations(const LoadBalancerStatus& s,
                                         std::string_view annotation_domain) {
  if (s.annotations.size() + s.removed_annotations.size() > kMaxOutputLabels) {
    return std::to_string(s.annotations.size() + s.removed_annotations.size()) +
           " annotations set and removed (at most " + std::to_string(kMaxOutputLabels) + ")";
  }
  for (size_t i = 0; i < s.annotations.size(); ++i) {
    if (auto e = validateText(detail::indexed("annotations", i, "value"),
                              s.annotations[i].second, size_t{64} * 1024);
        !e.empty()) {
      return e;
    }
  }
  return checkAnnotations(s.annotations, s.removed_annotations, annotation_domain);
}

inline std::string validateRoute(const Route& r) {
  if (auto e = validateText("route.name", r.name, 1024); !e.empty()) {
    return e;
  }
  if (auto e = validateText("route.targetNode", r.target_node, 253); !e.empty()) {
    return e;
  }
  if (!isCidr(r.destination_cidr)) {
    return "route.destinationCIDR " + detail::q(r.destination_cidr, 64) + " is not a CIDR";
  }
  if (r.target_node_addresses.size() > kMaxOutputAddresses) {
    return "route has too many target node addresses";
  }
  for (size_t i = 0; i < r.target_node_addresses.size(); ++i) {
    if (auto e = detail::validateAddress(detail::indexed("route.targetNodeAddresses", i),
                                         r.target_node_addresses[i]);
        !e.empty()) {
      return e;
    }
  }
  return {};
}

// ---- 3. one emitted output, both steps -------------------------------------------------------
// What the host's emit_* services run on what a plugin hands them: the shape, then the copy's
// content. On success the copy is in *out; else the problem (the host prefixes "invalid
// instance metadata: ", "invalid load balancer status: ", "invalid route: ", "invalid
// string: ").

inline std::string acceptMetadata(const ccm_instance_metadata* md,
                                  std::string_view provider_id_prefix, InstanceMetadata* out) {
  if (std::string e = checkMetadataShape(md); !e.empty()) {
    return e;
  }
  InstanceMetadata m = toInstanceMetadata(md);
  if (std::string e = validateMetadata(m, provider_id_prefix); !e.empty()) {
    return e;
  }
  *out = std::move(m);
  return {};
}

// v11: the plugin chose minor 1 or later (only then are the annotation fields read).
inline std::string acceptLbStatus(const ccm_lb_status* status, bool v11,
                                  std::string_view annotation_domain, LoadBalancerStatus* out) {
  if (std::string e = checkLbStatusShape(status, v11); !e.empty()) {
    return e;
  }
  LoadBalancerStatus s = toLoadBalancerStatus(status, v11);
  if (std::string e = validateLbStatus(s); !e.empty()) {
    return e;
  }
  if (v11) {
    if (std::string e = validateLbAnnotations(s, annotation_domain); !e.empty()) {
      return e;
    }
  }
  *out = std::move(s);
  return {};
}

inline std::string acceptRoute(const ccm_route* route, Route* out) {
  if (std::string e = checkRouteShape(route); !e.empty()) {
    return e;
  }
  Route r = toRoute(route);
  if (std::string e = validateRoute(r); !e.empty()) {
    return e;
  }
  *out = std::move(r);
  return {};
}

// What kind of output a call may emit through the emit_* host services (anything else is a
// contract violation: the emit is refused).
enum class OutputKind { None, Metadata, LbStatus, Routes, String };

inline std::string_view outputName(OutputKind k) {
  switch (k) {
    case OutputKind::None: return "no output";
    case OutputKind::Metadata: return "instance metadata";
    case OutputKind::LbStatus: return "a load balancer status";
    case OutputKind::Routes: return "routes";
    case OutputKind::String: return "a string";
  }
  return "?";
}

// Empty when `service` (an emit_* name) may emit `emitted` during a call that returns
// `expected`; else what is wrong.
inline std::string checkOutputKind(OutputKind expected, OutputKind emitted,
                                   std::string_view service) {
  if (emitted == OutputKind::None || emitted == expected) {
    return {};
  }
  return std::string(service) + " called during a call that returns " +
         std::string(outputName(expected));
}

// The answers of instance_exists and instance_shutdown, as the plugin wrote them. A value
// outside the ABI's set is refused (the call fails as INTERNAL): it is not read as any state,
// least of all NOT_FOUND, on which a Node is deleted.
inline std::string acceptExistence(int32_t written, Existence* out) {
  switch (written) {
    case CCM_EXISTENCE_UNKNOWN: *out = Existence::Unknown; return {};
    case CCM_EXISTENCE_EXISTS: *out = Existence::Exists; return {};
    case CCM_EXISTENCE_NOT_FOUND: *out = Existence::NotFound; return {};
    default:
      return "instance_exists wrote existence " + std::to_string(written) +
             ", which is not one of CCM_EXISTENCE_UNKNOWN, CCM_EXISTENCE_EXISTS, "
             "CCM_EXISTENCE_NOT_FOUND";
  }
}

inline std::string acceptPower(int32_t written, Power* out) {
  switch (written) {
    case CCM_POWER_UNKNOWN: *out = Power::Unknown; return {};
    case CCM_POWER_RUNNING: *out = Power::Running; return {};
    case CCM_POWER_SHUTDOWN: *out = Power::Shutdown; return {};
    default:
      return "instance_shutdown wrote power state " + std::to_string(written) +
             ", which is not one of CCM_POWER_UNKNOWN, CCM_POWER_RUNNING, CCM_POWER_SHUTDOWN";
  }
}

inline std::string acceptString(ccm_str value, std::string* out) {
  if (std::string e = checkStrShape("value", value); !e.empty()) {
    return e;
  }
  if (std::string e = validateText("value", view(value), 1024); !e.empty()) {
    return e;
  }
  *out = std::string(view(value));
  return {};
}

}  // namespace v1
}  // namespace ccm::sdk
