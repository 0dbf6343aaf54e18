// ccm/validation.hpp — the rules for what a plugin declares and returns under ABI 1.1
// (header-only). The host and the fake host (ccm/testing/fake_host.hpp) both check with these
// functions, so a provider that passes its unit tests against the fake host is accepted by the
// real one:
//   - ccm_plugin.provider_id_prefix, annotation_domain and metric_namespace;
//   - the annotation keys of a ccm_lb_status (inside the declared domain);
//   - a providerID against the declared prefix.
// Each check returns an empty string when the value is acceptable, else a sentence saying what
// is wrong (without the plugin's name: the caller adds where it came from).
//
// THREAD: pure functions.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ccm::sdk {
inline namespace v1 {

// Longest accepted provider_id_prefix, in bytes.
inline constexpr size_t kMaxProviderIdPrefix = 64;

// Metric namespaces the host uses itself (or that Kubernetes components use): a plugin may not
// declare them, so its unprefixed metrics never collide with the host's. Beside the header's
// list, the first words of the host's own upstream-named metrics (node_controller_*,
// service_controller_*, route_controller_*, running_managed_controllers).
inline constexpr std::array<std::string_view, 13> kReservedMetricNamespaces = {
    "ccm",    "process", "go",    "rest",    "workqueue", "apiserver", "cloudprovider",
    "leader", "kubernetes", "node", "service", "route",  "running"};

// True for a lowercase RFC 1123 subdomain of at most 253 characters: dot-separated labels of
// [a-z0-9-], each starting and ending alphanumeric (the API server's DNS-1123 subdomain rule).
inline bool isDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) {
    return false;
  }
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string_view label =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
        return false;
      }
    }
    if (dot == std::string_view::npos) {
      break;
    }
    start = dot + 1;
  }
  return true;
}

namespace detail {

// Shortened and quoted for a message.
inline std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 80)) {
    auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : '?');
  }
  if (s.size() > 80) {
    out += "...";
  }
  out.push_back('"');
  return out;
}

inline bool isAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// s equals domain or ends with "." + domain.
inline bool isAtOrUnder(std::string_view s, std::string_view domain) {
  if (s == domain) {
    return true;
  }
  return s.size() > domain.size() && s.ends_with(domain) &&
         s[s.size() - domain.size() - 1] == '.';
}

}  // namespace detail

// The name part of a Kubernetes qualified name (annotation or label key after the '/'):
// 1 to 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric.
inline bool isQualifiedNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63 || !detail::isAlnum(s.front()) || !detail::isAlnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return detail::isAlnum(c) || c == '-' || c == '_' || c == '.';
  });
}

// provider_id_prefix: empty (not declared), or a lower-case scheme ([a-z][a-z0-9+.-]*), then
// "://", then optional printable ASCII; at most 64 bytes.
inline std::string checkProviderIdPrefix(std::string_view prefix) {
  if (prefix.empty()) {
    return {};
  }
  if (prefix.size() > kMaxProviderIdPrefix) {
    return "provider_id_prefix " + detail::quoted(prefix) + " is " +
           std::to_string(prefix.size()) + " bytes long (at most " +
           std::to_string(kMaxProviderIdPrefix) + ")";
  }
  for (char c : prefix) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      return "provider_id_prefix " + detail::quoted(prefix) +
             " has a character that is not printable ASCII";
    }
  }
  size_t sep = prefix.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    return "provider_id_prefix " + detail::quoted(prefix) +
           " is not a scheme followed by \"://\" (e.g. \"openstack://\")";
  }
  std::string_view scheme = prefix.substr(0, sep);
  bool scheme_ok = scheme.front() >= 'a' && scheme.front() <= 'z' &&
                   std::all_of(scheme.begin(), scheme.end(), [](char c) {
                     return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                            c == '-' || c == '.';
                   });
  if (!scheme_ok) {
    return "provider_id_prefix " + detail::quoted(prefix) + ": the scheme " +
           detail::quoted(scheme) + " is not lower-case letters, digits, '+', '-' or '.'";
  }
  return {};
}

// annotation_domain: empty (writes none), or a DNS-1123 subdomain that is neither
// kubernetes.io nor k8s.io nor under them.
inline std::string checkAnnotationDomain(std::string_view domain) {
  if (domain.empty()) {
    return {};
  }
  if (!isDns1123Subdomain(domain)) {
    return "annotation_domain " + detail::quoted(domain) +
           " is not a lower-case DNS subdomain (e.g. \"loadbalancer.example.com\")";
  }
  for (std::string_view reserved : {std::string_view("kubernetes.io"), std::string_view("k8s.io")}) {
    if (detail::isAtOrUnder(domain, reserved)) {
      return "annotation_domain " + detail::quoted(domain) + " is " +
             std::string(reserved) + " or under it, which Kubernetes reserves";
    }
  }
  return {};
}

// metric_namespace: empty (every metric under ccm_provider_), or [a-z][a-z0-9]* of at most
// 32 bytes that is not reserved (kReservedMetricNamespaces).
inline std::string checkMetricNamespace(std::string_view ns) {
  if (ns.empty()) {
    return {};
  }
  bool ok = ns.size() <= 32 && ns.front() >= 'a' && ns.front() <= 'z' &&
            std::all_of(ns.begin(), ns.end(),
                        [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
  if (!ok) {
    return "metric_namespace " + detail::quoted(ns) +
           " is not a lower-case letter followed by lower-case letters and digits (at most 32)";
  }
  if (std::find(kReservedMetricNamespaces.begin(), kReservedMetricNamespaces.end(), ns) !=
      kReservedMetricNamespaces.end()) {
    return "metric_namespace " + detail::quoted(ns) + " is reserved for the host's own metrics";
  }
  return {};
}

// One annotation key a plugin sets or removes: "<domain>/<name>" or "<sub>.<domain>/<name>"
// with a valid name part, for a declared (non-empty) domain.
inline std::string checkAnnotationKey(std::string_view key, std::string_view domain) {
  if (domain.empty()) {
    return "annotation " + detail::quoted(key) +
           ": the provider declared no annotation_domain, so it may not write annotations";
  }
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) {
    return "annotation " + detail::quoted(key) + " has no \"<domain>/\" prefix (it must be in " +
           std::string(domain) + ")";
  }
  std::string_view prefix = key.substr(0, slash);
  std::string_view name = key.substr(slash + 1);
  if (!detail::isAtOrUnder(prefix, domain) || !isDns1123Subdomain(prefix)) {
    return "annotation " + detail::quoted(key) + " is outside the provider's annotation domain " +
           std::string(domain);
  }
  if (!isQualifiedNamePart(name)) {
    return "annotation " + detail::quoted(key) +
           ": the name after the '/' is not 1-63 characters of [A-Za-z0-9-_.] starting and "
           "ending alphanumeric";
  }
  return {};
}

// The annotations of one load balancer status: every key valid for domain, no key twice, no
// key both set and removed, values at most 64 KiB.
inline std::string checkAnnotations(const std::vector<std::pair<std::string, std::string>>& set,
                                    const std::vector<std::string>& removed,
                                    std::string_view domain) {
  std::vector<std::string_view> seen;
  for (const auto& [key, value] : set) {
    if (auto e = checkAnnotationKey(key, domain); !e.empty()) {
      return e;
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return "annotation " + detail::quoted(key) + " is set twice";
    }
    seen.push_back(key);
    if (value.size() > size_t{64} * 1024) {
      return "annotation " + detail::quoted(key) + " has a value of " +
             std::to_string(value.size()) + " bytes (at most 65536)";
    }
  }
  for (const auto& key : removed) {
    if (auto e = checkAnnotationKey(key, domain); !e.empty()) {
      return e;
    }
    if (std::any_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == key; })) {
      return "annotation " + detail::quoted(key) + " is both set and removed";
    }
  }
  return {};
}

// A providerID a plugin returns, against its declared prefix (empty: anything goes).
inline std::string checkProviderId(std::string_view provider_id, std::string_view prefix) {
  if (prefix.empty() || provider_id.starts_with(prefix)) {
    return {};
  }
  return "providerID " + detail::quoted(provider_id) +
         " does not start with the provider's declared prefix " + detail::quoted(prefix);
}

}  // namespace v1
}  // namespace ccm::sdk
