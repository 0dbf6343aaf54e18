// ServiceValidator: Service spec, update and load balancer status rules.
#include "kubesim/service_validator.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "kubesim/field_checks.hpp"
#include "kubesim/ip_text.hpp"
#include "kubesim/label_selector.hpp"

namespace ccm::kubesim {

using namespace fieldcheck;  // NOLINT(google-build-using-namespace)

namespace {

bool isHeadless(const JsonValue& spec) {
  std::vector<std::string> ips = stringArray(member(spec, "clusterIPs"));
  return ips.size() == 1 && ips[0] == "None";
}

int64_t intOf(const JsonValue& obj, std::string_view name) {
  const JsonValue* v = member(obj, name);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : 0;
}

}  // namespace

// ValidateLoadBalancerStatus: ingress IPs must be IPs, hostnames DNS names and not IPs.
void validateLoadBalancerStatus(const JsonValue& obj, FieldErrors& errs) {
  const JsonValue* ingress = memberPath(obj, {"status", "loadBalancer", "ingress"});
  if (ingress == nullptr || !ingress->IsArray()) {
    return;
  }
  for (rapidjson::SizeType i = 0; i < ingress->Size(); ++i) {
    std::string idx = "status.loadBalancer.ingress[" + std::to_string(i) + "]";
    std::string ip = str((*ingress)[i], "ip");
    if (!ip.empty() && !parseIp(ip)) {
      errs.push_back(FieldError::invalidString(idx + ".ip", ip, "must be a valid IP address"));
    }
    std::string host = str((*ingress)[i], "hostname");
    if (!host.empty()) {
      addAll(errs, idx + ".hostname", host, validateDns1123Subdomain(host));
      if (parseIp(host)) {
        errs.push_back(FieldError::invalidString(idx + ".hostname", host,
                                                 "must be a DNS name, not an IP address"));
      }
    }
  }
}

// ValidateService (the spec rules kubesim serves; ports, type, source ranges, traffic
// policies, load balancer class, node ports per type).
void validateService(const JsonValue& obj, FieldErrors& errs) {
  const JsonValue* spec = member(obj, "spec");
  if (spec == nullptr) {
    errs.push_back(FieldError::required("spec.ports"));
    return;
  }
  std::string type = str(*spec, "type");
  static const std::vector<std::string> kTypes = {"ClusterIP", "ExternalName", "LoadBalancer",
                                                  "NodePort"};
  if (!type.empty() && std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end()) {
    errs.push_back(FieldError::notSupported("spec.type", type, kTypes));
  }
  const JsonValue* ports = member(*spec, "ports");
  size_t n = ports != nullptr && ports->IsArray() ? ports->Size() : 0;
  if (type == "ExternalName") {
    if (str(*spec, "externalName").empty()) {
      errs.push_back(FieldError::required("spec.externalName"));
    }
    return;
  }
  bool headless = isHeadless(*spec);
  if (n == 0 && !headless) {
    errs.push_back(FieldError::required("spec.ports"));
  }
  if (headless && (type == "LoadBalancer" || type == "NodePort")) {
    errs.push_back(FieldError::invalidString(
        "spec.clusterIPs[0]", "None",
        "may not be set to 'None' for " + type + " services"));
  }
  std::set<std::string> names;
  std::set<std::pair<int64_t, std::string>> port_protocols;
  for (size_t i = 0; i < n; ++i) {
    const JsonValue& p = (*ports)[static_cast<rapidjson::SizeType>(i)];
    std::string idx = "spec.ports[" + std::to_string(i) + "]";
    std::string name = str(p, "name");
    if (n > 1 && name.empty()) {
      errs.push_back(FieldError::required(idx + ".name"));
    } else if (!name.empty()) {
      addAll(errs, idx + ".name", name, validateDns1123Label(name));
      if (!names.insert(name).second) {
        errs.push_back(FieldError::duplicate(idx + ".name", goQuote(name)));
      }
    }
    const JsonValue* port = member(p, "port");
    int64_t pv = port != nullptr && port->IsInt64() ? port->GetInt64() : 0;
    if (pv < 1 || pv > 65535) {
      errs.push_back(FieldError::invalid(idx + ".port", std::to_string(pv),
                                         "must be between 1 and 65535, inclusive"));
    }
    std::string proto = str(p, "protocol");
    if (!proto.empty() && proto != "TCP" && proto != "UDP" && proto != "SCTP") {
      errs.push_back(FieldError::notSupported(idx + ".protocol", proto, {"SCTP", "TCP", "UDP"}));
    }
    if (!port_protocols.insert({pv, proto}).second) {
      errs.push_back(FieldError::duplicate(idx, "core.ServicePort{Name:\"\", Protocol:" +
                                                    goQuote(proto) + ", AppProtocol:(*string)(nil), Port:" +
                                                    std::to_string(pv) +
                                                    ", TargetPort:intstr.IntOrString{Type:0, "
                                                    "IntVal:0, StrVal:\"\"}, NodePort:0}"));
    }
    if (type == "ClusterIP" && intOf(p, "nodePort") != 0) {
      errs.push_back(FieldError::forbidden(idx + ".nodePort",
                                           "may not be used when `type` is 'ClusterIP'"));
    }
  }
  // loadBalancerSourceRanges (the field path is spelt as the API server spells it).
  std::vector<std::string> ranges = stringArray(member(*spec, "loadBalancerSourceRanges"));
  if (!ranges.empty()) {
    if (type != "LoadBalancer") {
      errs.push_back(FieldError::forbidden("spec.LoadBalancerSourceRanges",
                                           "may only be used when `type` is 'LoadBalancer'"));
    }
    bool ok = true;
    std::string shown = "[";
    for (size_t i = 0; i < ranges.size(); ++i) {
      shown += (i ? " " : "") + ranges[i];
      std::string trimmed = ranges[i];
      trimmed.erase(0, trimmed.find_first_not_of(" \t\n\r"));
      trimmed.erase(trimmed.find_last_not_of(" \t\n\r") + 1);
      ok = ok && parseCidr(trimmed).has_value();
    }
    shown += "]";
    if (!ok) {
      errs.push_back(FieldError::invalidString(
          "spec.LoadBalancerSourceRanges", shown,
          "must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 "));
    }
  }
  if (member(*spec, "allocateLoadBalancerNodePorts") != nullptr && type != "LoadBalancer") {
    errs.push_back(FieldError::forbidden("spec.allocateLoadBalancerNodePorts",
                                         "may only be used when `type` is 'LoadBalancer'"));
  }
  if (const JsonValue* cls = member(*spec, "loadBalancerClass"); cls && cls->IsString()) {
    std::string c(cls->GetString(), cls->GetStringLength());
    if (type == "LoadBalancer") {
      addAll(errs, "spec.loadBalancerClass", c, validateQualifiedName(c));
    } else {
      errs.push_back(FieldError::forbidden("spec.loadBalancerClass",
                                           "may only be used when `type` is 'LoadBalancer'"));
    }
  }
  // Traffic policies.
  bool external = type == "NodePort" || type == "LoadBalancer" ||
                  !stringArray(member(*spec, "externalIPs")).empty();
  std::string etp = str(*spec, "externalTrafficPolicy");
  if (!external) {
    if (!etp.empty()) {
      errs.push_back(FieldError::invalidString("spec.externalTrafficPolicy", etp,
                                               "may only be set for externally-accessible services"));
    }
  } else if (etp.empty()) {
    errs.push_back(FieldError::required("spec.externalTrafficPolicy"));
  } else if (etp != "Cluster" && etp != "Local") {
    errs.push_back(FieldError::notSupported("spec.externalTrafficPolicy", etp, {"Cluster", "Local"}));
  }
  int64_t hc = intOf(*spec, "healthCheckNodePort");
  bool needs_hc = type == "LoadBalancer" && etp == "Local";
  if (!needs_hc && hc != 0) {
    errs.push_back(FieldError::invalid(
        "spec.healthCheckNodePort", std::to_string(hc),
        "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"));
  } else if (needs_hc && hc == 0) {
    errs.push_back(FieldError::required("spec.healthCheckNodePort"));
  } else if (needs_hc && (hc < 1 || hc > 65535)) {
    errs.push_back(FieldError::invalid("spec.healthCheckNodePort", std::to_string(hc),
                                       "must be between 1 and 65535, inclusive"));
  }
}

// ValidateServiceUpdate's rules on top of ValidateService: cluster IPs, the load balancer
// class and the health-check node port cannot change.
void validateServiceUpdate(const JsonValue& obj, const JsonValue& old, FieldErrors& errs) {
  const JsonValue* spec = member(obj, "spec");
  const JsonValue* old_spec = member(old, "spec");
  if (spec == nullptr || old_spec == nullptr) {
    return;
  }
  std::string type = str(*spec, "type");
  std::string old_type = str(*old_spec, "type");
  if (type != "ExternalName" && old_type != "ExternalName" &&
      !(isHeadless(*spec) && isHeadless(*old_spec))) {
    std::vector<std::string> ips = stringArray(member(*spec, "clusterIPs"));
    std::vector<std::string> old_ips = stringArray(member(*old_spec, "clusterIPs"));
    if (ips.size() == old_ips.size()) {
      for (size_t i = 0; i < ips.size(); ++i) {
        if (ips[i] != old_ips[i]) {
          errs.push_back(FieldError::invalid("spec.clusterIPs[" + std::to_string(i) + "]",
                                             goStringSlice(ips), "may not change once set"));
        }
      }
    } else if (ips.size() < old_ips.size()) {
      if (ips.empty()) {
        errs.push_back(FieldError::invalid("spec.clusterIPs[0]", goStringSlice(ips),
                                           "primary clusterIP can not be unset"));
      } else if (ips[0] != old_ips[0]) {
        errs.push_back(FieldError::invalid("spec.clusterIPs[0]", goStringSlice(ips),
                                           "may not change once set"));
      }
    } else if (!old_ips.empty() && ips[0] != old_ips[0]) {
      errs.push_back(
          FieldError::invalid("spec.clusterIPs[0]", goStringSlice(ips), "may not change once set"));
    }
  }
  if (type == "LoadBalancer" && old_type == "LoadBalancer") {
    const JsonValue* cls = member(*spec, "loadBalancerClass");
    const JsonValue* old_cls = member(*old_spec, "loadBalancerClass");
    bool same = (cls == nullptr) == (old_cls == nullptr) && (cls == nullptr || *cls == *old_cls);
    if (!same) {
      errs.push_back(FieldError::invalid("spec.loadBalancerClass",
                                         cls && cls->IsString() ? goQuote(cls->GetString()) : "null",
                                         "may not change once set"));
    }
  }
  auto needsHc = [](const JsonValue& s) {
    return str(s, "type") == "LoadBalancer" && str(s, "externalTrafficPolicy") == "Local";
  };
  if (needsHc(*spec) && needsHc(*old_spec) &&
      intOf(*spec, "healthCheckNodePort") != intOf(*old_spec, "healthCheckNodePort")) {
    errs.push_back(FieldError::forbidden("spec.healthCheckNodePort", "field is immutable"));
  }
}

}  // namespace ccm::kubesim
