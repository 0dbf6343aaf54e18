// Service + config -> LbSettings.
#include "plugins/openstack/lb_settings.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>

#include "plugins/openstack/ip_address.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

class Annotations {
 public:
  explicit Annotations(const std::map<std::string, std::string>& a) : a_(a) {}

  const std::string* find(const std::string& full_name) const {
    auto it = a_.find(full_name);
    return it == a_.end() ? nullptr : &it->second;
  }
  const std::string* lb(const std::string& short_name) const {
    return find(kAnnotationPrefix + short_name);
  }
  // The annotation's value when present (an empty value counts as set, as upstream).
  std::string str(const std::string& short_name, const std::string& fallback) const {
    const std::string* v = lb(short_name);
    return v != nullptr ? *v : fallback;
  }
  sdk::Result<bool> boolean(const std::string& full_name, bool fallback) const {
    const std::string* v = find(full_name);
    if (v == nullptr) {
      return fallback;
    }
    if (*v == "true") {
      return true;
    }
    if (*v == "false") {
      return false;
    }
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  "annotation " + full_name + ": want \"true\" or \"false\", got \"" + *v + "\"");
  }
  sdk::Result<int64_t> integer(const std::string& short_name, int64_t fallback, int64_t min,
                            int64_t max) const {
    const std::string* v = lb(short_name);
    if (v == nullptr) {
      return fallback;
    }
    std::string_view t = trim(*v);
    int64_t parsed = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), parsed);
    std::optional<int64_t> n;
    if (ec == std::errc() && end == t.data() + t.size() && !t.empty()) {
      n = parsed;
    }
    if (!n || *n < min || *n > max) {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, std::string("annotation ") + kAnnotationPrefix +
                                               short_name + ": want an integer in [" +
                                               std::to_string(min) + ", " + std::to_string(max) +
                                               "], got \"" + *v + "\"");
    }
    return *n;
  }

 private:
  const std::map<std::string, std::string>& a_;
};

std::string firstNonEmpty(std::initializer_list<std::string> values) {
  for (const auto& v : values) {
    if (!v.empty()) {
      return v;
    }
  }
  return {};
}

// A source range that does not parse, named with where it came from.
sdk::Status notACidr(const std::string& source, const std::string& range) {
  return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, source + ": \"" + range + "\" is not a CIDR");
}

// The SNI certificates of the sni-container-refs annotation (comma-separated, blanks
// ignored); they need a default certificate, as the listener is TERMINATED_HTTPS only with one.
sdk::Result<std::vector<std::string>> sniContainerRefs(const std::string* value,
                                                    const std::string& default_ref) {
  std::vector<std::string> refs;
  if (value == nullptr) {
    return refs;
  }
  for (const std::string& r : splitAny(*value, ",")) {
    std::string_view t = trim(r);
    if (!t.empty()) {
      refs.emplace_back(t);
    }
  }
  if (!refs.empty() && default_ref.empty()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  std::string("annotation ") + kAnnotationPrefix +
                      "sni-container-refs needs a default certificate too "
                      "(annotation " +
                      kAnnotationPrefix + "default-tls-container-ref or [LoadBalancer] " +
                      "default-tls-container-ref)");
  }
  return refs;
}

}  // namespace

std::string loadBalancerName(const std::string& cluster, const sdk::Service& svc) {
  return truncateUtf8("kube_service_" + cluster + "_" + svc.namespace_ + "_" + svc.name, 255);
}

bool matchesSelector(const sdk::Node& node,
                     const std::map<std::string, std::optional<std::string>>& selector) {
  for (const auto& [key, value] : selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end()) {
      return false;
    }
    if (value && it->second != *value) {
      return false;
    }
  }
  return true;
}

sdk::Result<LbSettings> buildLbSettings(const LoadBalancerConfig& cfg, const std::string& cluster,
                                        const sdk::Service& svc) {
  Annotations a(svc.annotations);
  LbSettings s;
  std::string ns_name = svc.namespace_ + "/" + svc.name;
  s.lb_name = loadBalancerName(cluster, svc);
  s.lb_name_suffix = "_" + svc.namespace_ + "_" + svc.name;
  std::string uid;
  for (char c : svc.uid) {
    if (c != '-') {
      uid.push_back(c);
    }
  }
  s.legacy_name = ("a" + uid).substr(0, 32);
  s.description = "Kubernetes external service " + ns_name + " from cluster " + cluster;
  s.fip_description =
      "Floating IP for Kubernetes external service " + ns_name + " from cluster " + cluster;
  s.lb_id = a.str("load-balancer-id", "");
  s.lb_id_written_back = !s.lb_id.empty() && !a.str("load-balancer-address", "").empty();

  if (!svc.ip_families.empty() && svc.ip_families.front() == "IPv6") {
    s.ip_family = 6;
  }

  if (cfg.internal_lb) {
    s.internal = true;
  } else {
    CCM_SDK_ASSIGN_OR_RETURN(s.internal, a.boolean(kInternalAnnotation, false));
  }

  // Class, then annotations, then config, with the class winning for the floating IP.
  const LoadBalancerClass* cls = nullptr;
  if (const std::string* name = a.lb("class")) {
    auto it = cfg.classes.find(*name);
    if (it == cfg.classes.end()) {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, std::string("annotation ") + kAnnotationPrefix +
                                               "class: no [LoadBalancerClass \"" + *name +
                                               "\"] in the cloud config");
    }
    cls = &it->second;
  }
  LoadBalancerClass none;
  const LoadBalancerClass& c = cls != nullptr ? *cls : none;

  s.vip_port_id = a.str("port-id", "");
  s.vip_subnet_id = firstNonEmpty({a.str("subnet-id", ""), c.subnet_id, cfg.subnet_id});
  s.vip_network_id = firstNonEmpty({a.str("network-id", ""), c.network_id, cfg.network_id});
  s.member_subnet_id =
      firstNonEmpty({a.str("member-subnet-id", ""), c.member_subnet_id, cfg.member_subnet_id});

  s.floating_network_id = firstNonEmpty(
      {c.floating_network_id, a.str("floating-network-id", ""), cfg.floating_network_id});
  bool class_has_subnet = !c.floating_subnet_id.empty() || !c.floating_subnet.empty() ||
                          !c.floating_subnet_tags.empty();
  if (class_has_subnet) {
    s.floating_subnet_id = c.floating_subnet_id;
    s.floating_subnet = c.floating_subnet;
    s.floating_subnet_tags = c.floating_subnet_tags;
  } else if (a.lb("floating-subnet-id") != nullptr || a.lb("floating-subnet") != nullptr ||
             a.lb("floating-subnet-tags") != nullptr) {
    s.floating_subnet_id = a.str("floating-subnet-id", "");
    s.floating_subnet = a.str("floating-subnet", "");
    s.floating_subnet_tags = a.str("floating-subnet-tags", "");
  } else {
    s.floating_subnet_id = cfg.floating_subnet_id;
    s.floating_subnet = cfg.floating_subnet;
    s.floating_subnet_tags = cfg.floating_subnet_tags;
  }
  if (auto tags = parseTagFilter(s.floating_subnet_tags); !tags.ok()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, std::string("annotation ") + kAnnotationPrefix +
                                             "floating-subnet-tags: " + tags.status().message());
  }

  CCM_SDK_ASSIGN_OR_RETURN(s.keep_floating_ip,
                          a.boolean(std::string(kAnnotationPrefix) + "keep-floatingip", false));

  if (const std::string* proxy = a.lb("proxy-protocol")) {
    if (*proxy == "true" || *proxy == "v1") {
      s.proxy_protocol = "PROXY";
    } else if (*proxy == "v2") {
      s.proxy_protocol = "PROXYV2";
    } else if (*proxy != "false" && !proxy->empty()) {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                    std::string("annotation ") + kAnnotationPrefix +
                        "proxy-protocol: want true, v1, v2 or false, got \"" + *proxy + "\"");
    }
  }
  CCM_SDK_ASSIGN_OR_RETURN(s.x_forwarded_for,
                          a.boolean(std::string(kAnnotationPrefix) + "x-forwarded-for", false));
  if (s.x_forwarded_for && !s.proxy_protocol.empty()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  "annotations loadbalancer.openstack.org/proxy-protocol and x-forwarded-for "
                  "cannot be used together");
  }
  s.lb_method = a.str("lb-method", cfg.lb_method);
  static const std::set<std::string> kMethods = {"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP",
                                                 "SOURCE_IP_PORT"};
  if (kMethods.count(s.lb_method) == 0) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  std::string("annotation ") + kAnnotationPrefix +
                      "lb-method: want ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or "
                      "SOURCE_IP_PORT, got \"" +
                      s.lb_method + "\"");
  }
  CCM_SDK_ASSIGN_OR_RETURN(s.connection_limit, a.integer("connection-limit", -1, -1, 1000000000));
  CCM_SDK_ASSIGN_OR_RETURN(s.timeout_client_data,
                          a.integer("timeout-client-data", 50000, 0, 2147483647));
  CCM_SDK_ASSIGN_OR_RETURN(s.timeout_member_connect,
                          a.integer("timeout-member-connect", 5000, 0, 2147483647));
  CCM_SDK_ASSIGN_OR_RETURN(s.timeout_member_data,
                          a.integer("timeout-member-data", 50000, 0, 2147483647));
  CCM_SDK_ASSIGN_OR_RETURN(s.timeout_tcp_inspect,
                          a.integer("timeout-tcp-inspect", 0, 0, 2147483647));
  s.flavor_id = a.str("flavor-id", cfg.flavor_id);
  s.availability_zone = a.str("availability-zone", cfg.availability_zone);
  s.tls_container_ref = a.str("default-tls-container-ref", cfg.default_tls_container_ref);
  s.tls_container_source = a.lb("default-tls-container-ref") != nullptr
                               ? std::string("annotation ") + kAnnotationPrefix +
                                     "default-tls-container-ref"
                               : "[LoadBalancer] default-tls-container-ref";
  CCM_SDK_ASSIGN_OR_RETURN(s.sni_container_refs, sniContainerRefs(a.lb("sni-container-refs"),
                                                                 s.tls_container_ref));

  CCM_SDK_ASSIGN_OR_RETURN(
      s.health_monitor,
      a.boolean(std::string(kAnnotationPrefix) + "enable-health-monitor", cfg.create_monitor));
  auto secs = [](Duration d) {
    return std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(d).count());
  };
  CCM_SDK_ASSIGN_OR_RETURN(s.hm_delay,
                          a.integer("health-monitor-delay", secs(cfg.monitor_delay), 1, 86400));
  CCM_SDK_ASSIGN_OR_RETURN(s.hm_timeout,
                          a.integer("health-monitor-timeout", secs(cfg.monitor_timeout), 1, 86400));
  CCM_SDK_ASSIGN_OR_RETURN(s.hm_max_retries,
                          a.integer("health-monitor-max-retries", cfg.monitor_max_retries, 1, 10));
  CCM_SDK_ASSIGN_OR_RETURN(s.hm_max_retries_down, a.integer("health-monitor-max-retries-down",
                                                           cfg.monitor_max_retries_down, 1, 10));
  if (s.health_monitor && s.hm_timeout > s.hm_delay) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "health monitor timeout (" + std::to_string(s.hm_timeout) +
                                             "s) must not exceed its delay (" +
                                             std::to_string(s.hm_delay) + "s)");
  }

  s.hostname = a.str("hostname", "");
  CCM_SDK_ASSIGN_OR_RETURN(s.node_selector,
                          parseNodeSelector(a.str("node-selector", cfg.node_selector)));

  std::vector<std::string> ranges = svc.source_ranges;
  std::string range_source = "spec.loadBalancerSourceRanges";
  if (ranges.empty()) {
    if (const std::string* v = a.find(kSourceRangesAnnotation)) {
      ranges = splitAny(*v, ",");
      range_source = std::string("annotation ") + kSourceRangesAnnotation;
    }
  }
  std::set<std::string> normalised;
  for (const std::string& r : ranges) {
    auto cidr = Cidr::parse(trim(r));
    if (!cidr) {
      return notACidr(range_source, r);
    }
    normalised.insert(cidr->toString());
  }
  s.source_ranges.assign(normalised.begin(), normalised.end());
  return s;
}

}  // namespace ccm::openstack
