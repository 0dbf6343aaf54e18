// ServiceAllocator: Service defaulting, update carry-over and drops, IP families, allocation.
#include "kubesim/service_allocator.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace ccm::kubesim {
namespace {

constexpr int64_t kPortMin = 30000;
constexpr int64_t kPortMax = 32767;
const char* const kPortRange = "30000-32767";

std::string typeOf(const JsonValue& spec) {
  return std::string(stringMember(spec, "type"));
}
bool needsClusterIp(const std::string& type) {
  return type != "ExternalName";
}
bool needsNodePort(const std::string& type) {
  return type == "NodePort" || type == "LoadBalancer";
}
bool needsHealthCheck(const JsonValue& spec) {
  return typeOf(spec) == "LoadBalancer" && stringMember(spec, "externalTrafficPolicy") == "Local";
}

std::vector<std::string> strings(const JsonValue& obj, std::string_view name) {
  std::vector<std::string> out;
  if (const JsonValue* a = member(obj, name); a && a->IsArray()) {
    for (const auto& e : a->GetArray()) {
      out.emplace_back(e.IsString() ? std::string(e.GetString(), e.GetStringLength()) : "");
    }
  }
  return out;
}

void setStrings(JsonValue& obj, std::string_view name, const std::vector<std::string>& v,
                JsonAllocator& alloc) {
  JsonValue arr(rapidjson::kArrayType);
  for (const auto& s : v) {
    arr.PushBack(makeString(s, alloc), alloc);
  }
  setMember(obj, name, std::move(arr), alloc);
}

int64_t intMember(const JsonValue& obj, std::string_view name) {
  const JsonValue* v = member(obj, name);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : 0;
}

bool sameMember(const JsonValue& a, const JsonValue& b, std::string_view name) {
  const JsonValue* x = member(a, name);
  const JsonValue* y = member(b, name);
  if (x == nullptr || y == nullptr) {
    return x == y;
  }
  return *x == *y;
}

std::string goStrings(const std::vector<std::string>& v) {
  std::string out = "[]string{";
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i ? ", " : "") + goQuote(v[i]);
  }
  return out + "}";
}

std::set<int64_t> nodePortsOf(const JsonValue& spec) {
  std::set<int64_t> out;
  if (const JsonValue* ps = member(spec, "ports"); ps && ps->IsArray()) {
    for (const auto& p : ps->GetArray()) {
      if (int64_t np = intMember(p, "nodePort"); np != 0) {
        out.insert(np);
      }
    }
  }
  return out;
}

void defaultString(JsonValue& obj, std::string_view name, std::string_view value,
                   JsonAllocator& alloc) {
  const JsonValue* v = member(obj, name);
  if (v == nullptr || !v->IsString() || v->GetStringLength() == 0) {
    setString(obj, name, value, alloc);
  }
}

// v1 SetDefaults_Service.
void applyDefaults(JsonValue& spec, JsonAllocator& alloc) {
  defaultString(spec, "sessionAffinity", "None", alloc);
  defaultString(spec, "type", "ClusterIP", alloc);
  std::string type = typeOf(spec);
  if (JsonValue* ports = member(spec, "ports"); ports && ports->IsArray()) {
    for (auto& p : ports->GetArray()) {
      if (!p.IsObject()) {
        continue;
      }
      defaultString(p, "protocol", "TCP", alloc);
      const JsonValue* tp = member(p, "targetPort");
      bool unset = tp == nullptr || (tp->IsInt64() && tp->GetInt64() == 0) ||
                   (tp->IsString() && tp->GetStringLength() == 0);
      if (unset) {
        if (const JsonValue* port = member(p, "port"); port && port->IsInt64()) {
          setInt(p, "targetPort", port->GetInt64(), alloc);
        }
      }
    }
  }
  if (needsNodePort(type)) {
    defaultString(spec, "externalTrafficPolicy", "Cluster", alloc);
  }
  if ((needsNodePort(type) || type == "ClusterIP") &&
      member(spec, "internalTrafficPolicy") == nullptr) {
    setString(spec, "internalTrafficPolicy", "Cluster", alloc);
  }
  if (type == "LoadBalancer" && member(spec, "allocateLoadBalancerNodePorts") == nullptr) {
    setBool(spec, "allocateLoadBalancerNodePorts", true, alloc);
  }
}

// Values an update left out are the stored ones (patchAllocatedValues).
void carryAllocatedValues(JsonValue& spec, const JsonValue& old_spec, JsonAllocator& alloc) {
  std::string type = typeOf(spec);
  std::string old_type = typeOf(old_spec);
  if (needsClusterIp(type) && needsClusterIp(old_type)) {
    if (stringMember(spec, "clusterIP").empty() && !stringMember(old_spec, "clusterIP").empty()) {
      setString(spec, "clusterIP", stringMember(old_spec, "clusterIP"), alloc);
    }
    if (strings(spec, "clusterIPs").empty() && !strings(old_spec, "clusterIPs").empty()) {
      setStrings(spec, "clusterIPs", strings(old_spec, "clusterIPs"), alloc);
    }
  }
  if (needsNodePort(type) && needsNodePort(old_type)) {
    std::set<int64_t> old_ports = nodePortsOf(old_spec);
    std::set<int64_t> new_ports = nodePortsOf(spec);
    std::map<std::string, int64_t> by_name;
    if (const JsonValue* ps = member(old_spec, "ports"); ps && ps->IsArray()) {
      for (const auto& p : ps->GetArray()) {
        by_name[std::string(stringMember(p, "name"))] = intMember(p, "nodePort");
      }
    }
    if (JsonValue* ps = member(spec, "ports"); ps && ps->IsArray()) {
      for (auto& p : ps->GetArray()) {
        if (!p.IsObject() || intMember(p, "nodePort") != 0) {
          continue;
        }
        int64_t was = by_name[std::string(stringMember(p, "name"))];
        bool used_by_another = old_ports.count(was) != 0 && new_ports.count(was) != 0;
        if (was != 0 && !used_by_another) {
          setInt(p, "nodePort", was, alloc);
        }
      }
    }
  }
  if (needsHealthCheck(spec) && needsHealthCheck(old_spec) &&
      intMember(spec, "healthCheckNodePort") == 0 && intMember(old_spec, "healthCheckNodePort")) {
    setInt(spec, "healthCheckNodePort", intMember(old_spec, "healthCheckNodePort"), alloc);
  }
}

// clusterIP and clusterIPs kept in step (normalizeClusterIPs).
void normalizeClusterIps(JsonValue& spec, const JsonValue* old_spec, JsonAllocator& alloc) {
  std::string ip(stringMember(spec, "clusterIP"));
  std::vector<std::string> ips = strings(spec, "clusterIPs");
  if (old_spec == nullptr) {
    if (!ip.empty() && ips.empty()) {
      setStrings(spec, "clusterIPs", {ip}, alloc);
    }
    return;
  }
  std::string old_ip(stringMember(*old_spec, "clusterIP"));
  std::vector<std::string> old_ips = strings(*old_spec, "clusterIPs");
  if (!old_ips.empty() && ips.empty() && old_ip == ip) {
    ips = old_ips;
    setStrings(spec, "clusterIPs", ips, alloc);
  }
  if (old_ip != ip && ips == old_ips) {
    if (!old_ip.empty() && ip.empty()) {
      removeMember(spec, "clusterIPs");
    } else {
      setStrings(spec, "clusterIPs", {ip}, alloc);
    }
  }
}

// Fields the new type does not use, dropped when the client did not change them
// (dropTypeDependentFields); the load balancer status goes with the LoadBalancer type.
void dropTypeDependentFields(JsonValue& svc, JsonValue& spec, const JsonValue& old_spec,
                             JsonAllocator& alloc) {
  std::string type = typeOf(spec);
  std::string old_type = typeOf(old_spec);
  if (needsClusterIp(old_type) && !needsClusterIp(type)) {
    if (sameMember(spec, old_spec, "clusterIP") && sameMember(spec, old_spec, "clusterIPs")) {
      removeMember(spec, "clusterIP");
      removeMember(spec, "clusterIPs");
    }
    if (sameMember(spec, old_spec, "ipFamilies")) {
      removeMember(spec, "ipFamilies");
    }
    if (sameMember(spec, old_spec, "ipFamilyPolicy")) {
      removeMember(spec, "ipFamilyPolicy");
    }
  }
  if (needsNodePort(old_type) && !needsNodePort(type)) {
    std::set<int64_t> old_ports = nodePortsOf(old_spec);
    std::set<int64_t> new_ports = nodePortsOf(spec);
    if (std::includes(old_ports.begin(), old_ports.end(), new_ports.begin(), new_ports.end())) {
      if (JsonValue* ps = member(spec, "ports"); ps && ps->IsArray()) {
        for (auto& p : ps->GetArray()) {
          removeMember(p, "nodePort");
        }
      }
    }
  }
  if (needsHealthCheck(old_spec) && !needsHealthCheck(spec) &&
      intMember(spec, "healthCheckNodePort") == intMember(old_spec, "healthCheckNodePort")) {
    removeMember(spec, "healthCheckNodePort");
  }
  if (old_type == "LoadBalancer" && type != "LoadBalancer") {
    const JsonValue* a = member(spec, "allocateLoadBalancerNodePorts");
    const JsonValue* b = member(old_spec, "allocateLoadBalancerNodePorts");
    if (a != nullptr && b != nullptr && *a == *b) {
      removeMember(spec, "allocateLoadBalancerNodePorts");
    }
    if (sameMember(spec, old_spec, "loadBalancerClass")) {
      removeMember(spec, "loadBalancerClass");
    }
  }
  if (needsNodePort(old_type) && !needsNodePort(type) &&
      sameMember(spec, old_spec, "externalTrafficPolicy")) {
    removeMember(spec, "externalTrafficPolicy");
  }
  if (type != "LoadBalancer") {
    JsonValue& status = ensureObject(svc, "status", alloc);
    setMember(status, "loadBalancer", JsonValue(rapidjson::kObjectType), alloc);
  }
}

// ValidateServiceClusterIPsRelatedFields (run before allocation).
FieldErrors validateClusterIpFields(const JsonValue& spec) {
  FieldErrors errs;
  std::string ip(stringMember(spec, "clusterIP"));
  std::vector<std::string> ips = strings(spec, "clusterIPs");
  if (!ip.empty()) {
    if (ips.empty()) {
      errs.push_back(FieldError::required("spec.clusterIPs"));
    } else if (ips[0] != ip) {
      errs.push_back(FieldError::invalid("spec.clusterIPs", goStrings(ips),
                                         "first value must match `clusterIP`"));
    }
  } else if (!ips.empty()) {
    errs.push_back(FieldError::invalid("spec.clusterIPs", goStrings(ips),
                                       "must be empty when `clusterIP` is not specified"));
  }
  std::vector<std::string> families = strings(spec, "ipFamilies");
  std::set<std::string> seen;
  for (size_t i = 0; i < families.size(); ++i) {
    std::string f = "spec.ipFamilies[" + std::to_string(i) + "]";
    if (families[i] != "IPv4" && families[i] != "IPv6") {
      errs.push_back(FieldError::notSupported(f, families[i], {"IPv4", "IPv6"}));
    }
    if (!seen.insert(families[i]).second) {
      errs.push_back(FieldError::duplicate(f, goQuote(families[i])));
    }
  }
  if (const JsonValue* p = member(spec, "ipFamilyPolicy"); p && p->IsString()) {
    std::string_view policy(p->GetString(), p->GetStringLength());
    if (policy != "SingleStack" && policy != "PreferDualStack" && policy != "RequireDualStack") {
      errs.push_back(FieldError::notSupported(
          "spec.ipFamilyPolicy", policy, {"PreferDualStack", "RequireDualStack", "SingleStack"}));
    }
  }
  bool bad_ips = false;
  int v4 = 0;
  for (size_t i = 0; i < ips.size(); ++i) {
    if (i == 0 && ips[i] == "None") {
      if (ips.size() > 1) {
        bad_ips = true;
        errs.push_back(FieldError::invalid("spec.clusterIPs", goStrings(ips),
                                           "'None' must be the first and only value"));
      }
      continue;
    }
    auto parsed = parseIp(ips[i]);
    if (!parsed) {
      bad_ips = true;
      errs.push_back(FieldError::invalidString("spec.clusterIPs[" + std::to_string(i) + "]",
                                               ips[i],
                                               "must be a valid IP address, (e.g. 10.9.8.7 or "
                                               "2001:db8::ffff)"));
    } else if (parsed->v4) {
      ++v4;
    }
  }
  if (ips.size() > 2) {
    errs.push_back(
        FieldError::invalid("spec.clusterIPs", goStrings(ips), "may only hold up to 2 values"));
  }
  if (bad_ips) {
    return errs;
  }
  if (ips.size() == 2 && v4 != 1) {
    errs.push_back(FieldError::invalid("spec.clusterIPs", goStrings(ips),
                                       "may specify no more than one IP for each IP family"));
  }
  if (!(ips.size() == 1 && ips[0] == "None")) {
    for (size_t i = 0; i < ips.size() && i < families.size(); ++i) {
      auto parsed = parseIp(ips[i]);
      bool is_v6 = parsed && !parsed->v4;
      if (families[i] == "IPv4" && is_v6) {
        errs.push_back(FieldError::invalidString(
            "spec.clusterIPs[" + std::to_string(i) + "]", ips[i],
            "expected an IPv4 value as indicated by `ipFamilies[" + std::to_string(i) + "]`"));
      }
      if (families[i] == "IPv6" && !is_v6) {
        errs.push_back(FieldError::invalidString(
            "spec.clusterIPs[" + std::to_string(i) + "]", ips[i],
            "expected an IPv6 value as indicated by `ipFamilies[" + std::to_string(i) + "]`"));
      }
    }
  }
  return errs;
}

std::optional<ApiError> invalid(const JsonValue& svc, const FieldErrors& errs) {
  std::string_view name;
  if (const JsonValue* meta = member(svc, "metadata")) {
    name = stringMember(*meta, "name");
  }
  return ApiError::invalid("", "Service", name, errs);
}

}  // namespace

ServiceAllocator::ServiceAllocator(const ObjectStore& store, IpCidr range,
                                   std::optional<IpCidr> secondary)
    : store_(store),
      range_(range),
      secondary_(secondary),
      range_size_((range.bits() - range.prefix) >= 20
                      ? (uint64_t{1} << 20)
                      : (uint64_t{1} << (range.bits() - range.prefix))) {}

ApiOr<std::vector<IpCidr>> ServiceAllocator::parseServiceRanges(std::string_view text) {
  std::vector<IpCidr> out;
  size_t comma = text.find(',');
  for (std::string_view part :
       {text.substr(0, comma),
        comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1)}) {
    if (part.empty() && !out.empty()) {
      break;
    }
    auto r = parseServiceRange(part);
    if (!r.ok()) {
      return r.error();
    }
    out.push_back(r.value());
  }
  if (out.size() == 2 && out[0].base.v4 == out[1].base.v4) {
    return ApiError::badRequest("--service-cluster-ip-range: a dual-stack value needs one IPv4 "
                                "and one IPv6 CIDR");
  }
  return out;
}

ApiOr<IpCidr> ServiceAllocator::parseServiceRange(std::string_view text) {
  if (text.find(',') != std::string_view::npos) {
    return ApiError::badRequest("--service-cluster-ip-range: dual-stack ranges are not served; "
                                "give one CIDR");
  }
  auto c = parseCidr(text);
  if (!c) {
    return ApiError::badRequest("--service-cluster-ip-range: not a CIDR: " + std::string(text));
  }
  if (c->bits() - c->prefix < 4) {
    return ApiError::badRequest("--service-cluster-ip-range: " + std::string(text) +
                                " is too small (at most /" + std::to_string(c->bits() - 4) + ")");
  }
  // Keep the network address.
  auto net = parseCidr(c->toString());
  return *net;
}

std::string ServiceAllocator::allocateFrom(const IpCidr& range, uint64_t& next,
                                           const std::set<std::string>& used) {
  uint64_t size = (range.bits() - range.prefix) >= 20
                      ? (uint64_t{1} << 20)
                      : (uint64_t{1} << (range.bits() - range.prefix));
  auto net = parseIp(range.toString().substr(0, range.toString().find('/')));
  for (uint64_t tries = 0; tries < size; ++tries) {
    if (next >= size - 1) {
      next = 1;
    }
    auto candidate = addToIp(*net, next++);
    if (candidate && inRangeOf(range, *candidate) && !used.count(candidate->toString()) &&
        !recent_ips_.count(candidate->toString())) {
      return candidate->toString();
    }
  }
  return {};
}

std::string ServiceAllocator::kubernetesServiceIp() const {
  auto net = parseIp(range_.toString().substr(0, range_.toString().find('/')));
  return addToIp(*net, 1)->toString();
}

bool ServiceAllocator::inRangeOf(const IpCidr& range, const IpAddress& ip) {
  if (!range.contains(ip)) {
    return false;
  }
  auto net = parseIp(range.toString().substr(0, range.toString().find('/')));
  if (ip.bytes == net->bytes) {
    return false;
  }
  if (range.base.v4) {
    uint64_t size = uint64_t{1} << (32 - range.prefix);
    auto broadcast = addToIp(*net, size - 1);
    return !(broadcast && broadcast->bytes == ip.bytes);
  }
  return true;
}

void ServiceAllocator::collectUsed(std::set<std::string>& ips, std::set<int64_t>& ports,
                                   std::string_view skip_key) const {
  const ResourceType& services = *ResourceRegistry::builtin().find("", "v1", "services");
  auto list = store_.list(services, {});
  if (!list.ok()) {
    return;
  }
  for (const auto& obj : list.value().items) {
    if (obj->key() == skip_key) {
      continue;
    }
    JsonDocument doc;
    doc.Parse(obj->json.data(), obj->json.size());
    const JsonValue* spec = member(doc, "spec");
    if (spec == nullptr) {
      continue;
    }
    for (const auto& ip : strings(*spec, "clusterIPs")) {
      if (auto parsed = parseIp(ip)) {
        ips.insert(parsed->toString());
      }
    }
    for (int64_t p : nodePortsOf(*spec)) {
      ports.insert(p);
    }
    if (int64_t hc = intMember(*spec, "healthCheckNodePort"); hc != 0) {
      ports.insert(hc);
    }
  }
}

std::optional<ApiError> ServiceAllocator::prepare(JsonValue& svc, JsonAllocator& alloc,
                                                  const JsonValue* old) {
  JsonValue& spec = ensureObject(svc, "spec", alloc);
  applyDefaults(spec, alloc);
  const JsonValue* old_spec = old != nullptr ? member(*old, "spec") : nullptr;
  if (old_spec != nullptr) {
    carryAllocatedValues(spec, *old_spec, alloc);
  }
  normalizeClusterIps(spec, old_spec, alloc);
  if (old_spec != nullptr) {
    dropTypeDependentFields(svc, spec, *old_spec, alloc);
  }
  const std::string type = typeOf(spec);
  if (type == "ExternalName") {
    return std::nullopt;
  }

  // IP family fields (initIPFamilyFields).
  if (member(spec, "ipFamilyPolicy") == nullptr) {
    const JsonValue* old_policy = old_spec ? member(*old_spec, "ipFamilyPolicy") : nullptr;
    const JsonValue* selector = member(spec, "selector");
    bool selectorless = selector == nullptr || !selector->IsObject() || selector->ObjectEmpty();
    if (old_policy != nullptr && old_policy->IsString()) {
      setString(spec, "ipFamilyPolicy", old_policy->GetString(), alloc);
    } else if (stringMember(spec, "clusterIP") == "None" && selectorless) {
      setString(spec, "ipFamilyPolicy", "RequireDualStack", alloc);
    } else {
      setString(spec, "ipFamilyPolicy", "SingleStack", alloc);
    }
  }
  if (FieldErrors errs = validateClusterIpFields(spec); !errs.empty()) {
    return invalid(svc, errs);
  }
  const std::string policy(stringMember(spec, "ipFamilyPolicy"));
  std::vector<std::string> ips = strings(spec, "clusterIPs");
  std::vector<std::string> families = strings(spec, "ipFamilies");
  FieldErrors errs;
  if (policy == "SingleStack") {
    if (ips.size() == 2) {
      errs.push_back(FieldError::invalidString(
          "spec.ipFamilyPolicy", policy,
          "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are "
          "specified"));
    }
    if (families.size() == 2) {
      errs.push_back(FieldError::invalidString(
          "spec.ipFamilyPolicy", policy,
          "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are "
          "specified"));
    }
  }
  for (size_t i = 0; i < ips.size() && ips[i] != "None"; ++i) {
    std::string fam = parseIp(ips[i])->v4 ? "IPv4" : "IPv6";
    if (i >= families.size()) {
      if (fam != familyName() && !dualStack()) {
        errs.push_back(FieldError::invalid("spec.clusterIPs[" + std::to_string(i) + "]",
                                           goStrings(ips), fam + " is not configured on this cluster"));
      } else {
        families.push_back(fam);
      }
    }
  }
  if (!errs.empty()) {
    return invalid(svc, errs);
  }
  const JsonValue* selector = member(spec, "selector");
  bool selectorless = selector == nullptr || !selector->IsObject() || selector->ObjectEmpty();
  if (stringMember(spec, "clusterIP") == "None" && selectorless) {
    // Headless and selectorless: any families, nothing to allocate.
    if (families.empty()) {
      families.push_back(familyName());
    }
    if (families.size() < 2 && policy != "SingleStack") {
      families.emplace_back(families[0] == "IPv4" ? "IPv6" : "IPv4");
    }
    setStrings(spec, "ipFamilies", families, alloc);
  } else {
    if (policy == "RequireDualStack" && !dualStack()) {
      errs.push_back(FieldError::invalidString(
          "spec.ipFamilyPolicy", policy, "this cluster is not configured for dual-stack services"));
    }
    for (size_t i = 0; i < families.size(); ++i) {
      if (families[i] != familyName() && !dualStack()) {
        errs.push_back(FieldError::invalidString("spec.ipFamilies[" + std::to_string(i) + "]",
                                                 families[i], "not configured on this cluster"));
      }
    }
    if (!errs.empty()) {
      return invalid(svc, errs);
    }
    if (families.empty()) {
      families.push_back(familyName());
    }
    if (dualStack() && policy != "SingleStack" && families.size() < 2) {
      families.emplace_back(families[0] == "IPv4" ? "IPv6" : "IPv4");
    }
    setStrings(spec, "ipFamilies", families, alloc);
  }

  std::lock_guard lock(mu_);
  // Requested values are checked against the stored Services; automatic ones also skip what
  // was handed out recently and may not be stored yet.
  std::set<std::string> used_ips;
  std::set<int64_t> used_ports;
  std::string self_key;
  if (const JsonValue* meta = member(svc, "metadata")) {
    self_key = storeKey(stringMember(*meta, "namespace"), stringMember(*meta, "name"));
  }
  collectUsed(used_ips, used_ports, old != nullptr ? self_key : std::string());

  // Cluster IP: on create, or when the Service leaves ExternalName.
  bool allocate_ip = old_spec == nullptr || typeOf(*old_spec) == "ExternalName";
  if (allocate_ip && !(ips.size() == 1 && ips[0] == "None")) {
    if (ips.empty()) {
      std::vector<std::string> allocated;
      for (const std::string& family : families.empty() ? std::vector<std::string>{familyName()}
                                                         : families) {
        bool primary = family == familyName() || !dualStack();
        std::string ip = primary ? allocateFrom(range_, next_ip_, used_ips)
                                 : allocateFrom(*secondary_, next_secondary_ip_, used_ips);
        if (ip.empty()) {
          return ApiError::internal("failed to allocate a serviceIP: range is full");
        }
        recent_ips_.insert(ip);
        allocated.push_back(ip);
      }
      setString(spec, "clusterIP", allocated.front(), alloc);
      setStrings(spec, "clusterIPs", allocated, alloc);
    } else {
      auto parsed = parseIp(ips[0]);
      std::string why;
      if (!inRange(*parsed) && !(secondary_ && inRangeOf(*secondary_, *parsed))) {
        why = "the provided IP (" + parsed->toString() +
              ") is not in the valid range. The range of valid IPs is " + range_.toString();
      } else if (used_ips.count(parsed->toString())) {
        why = "provided IP is already allocated";
      }
      if (!why.empty()) {
        return invalid(svc, {FieldError::invalid("spec.clusterIPs", goStrings(ips),
                                                 "failed to allocate IP " + ips[0] + ": " + why)});
      }
    }
  }

  auto nextPort = [&]() -> int64_t {
    for (int64_t tries = 0; tries <= kPortMax - kPortMin; ++tries) {
      int64_t p = next_port_++;
      if (next_port_ > kPortMax) {
        next_port_ = kPortMin;
      }
      if (!used_ports.count(p) && !recent_ports_.count(p)) {
        used_ports.insert(p);
        recent_ports_.insert(p);
        return p;
      }
    }
    return 0;
  };
  auto claim = [&](int64_t p) -> std::string {
    if (p < kPortMin || p > kPortMax) {
      return std::string("provided port is not in the valid range. The range of valid ports is ") +
             kPortRange;
    }
    if (used_ports.count(p)) {
      return "provided port is already allocated";
    }
    used_ports.insert(p);  // requested values are not remembered: a refused write frees them
    return {};
  };

  // Node ports.
  if (needsNodePort(type)) {
    const JsonValue* a = member(spec, "allocateLoadBalancerNodePorts");
    bool allocate_new = type == "NodePort" || a == nullptr || !a->IsBool() || a->GetBool();
    std::set<int64_t> old_ports = old_spec ? nodePortsOf(*old_spec) : std::set<int64_t>{};
    std::map<int64_t, int64_t> by_service_port;  // a port number served twice shares its node port
    std::set<int64_t> claimed;
    if (JsonValue* ps = member(spec, "ports"); ps && ps->IsArray()) {
      for (rapidjson::SizeType i = 0; i < ps->Size(); ++i) {
        JsonValue& p = (*ps)[i];
        int64_t np = intMember(p, "nodePort");
        int64_t port = intMember(p, "port");
        if (np == 0 && !allocate_new) {
          continue;
        }
        if (np == 0 && old_spec == nullptr && by_service_port.count(port)) {
          setInt(p, "nodePort", by_service_port[port], alloc);
          continue;
        }
        if (np != 0) {
          if (!old_ports.count(np) && !claimed.count(np)) {
            if (std::string why = claim(np); !why.empty()) {
              return invalid(svc, {FieldError::invalid(
                                      "spec.ports[" + std::to_string(i) + "].nodePort",
                                      std::to_string(np), why)});
            }
            claimed.insert(np);
          }
          by_service_port.emplace(port, np);
          continue;
        }
        int64_t next = nextPort();
        if (next == 0) {
          return ApiError::internal("failed to allocate a nodePort: range is full");
        }
        setInt(p, "nodePort", next, alloc);
        by_service_port.emplace(port, next);
      }
    }
  }

  // Health-check node port: when the Service starts to need one.
  if (needsHealthCheck(spec) && (old_spec == nullptr || !needsHealthCheck(*old_spec))) {
    int64_t hc = intMember(spec, "healthCheckNodePort");
    if (hc != 0) {
      if (std::string why = claim(hc); !why.empty()) {
        return ApiError::internal("failed to allocate requested HealthCheck NodePort " +
                                  std::to_string(hc) + ": " + why);
      }
    } else {
      int64_t next = nextPort();
      if (next == 0) {
        return ApiError::internal("failed to allocate a HealthCheck NodePort 0: range is full");
      }
      setInt(spec, "healthCheckNodePort", next, alloc);
    }
  }
  if (recent_ips_.size() > 4096) {
    recent_ips_.clear();
  }
  if (recent_ports_.size() > 1024) {
    recent_ports_.clear();
  }
  return std::nullopt;
}

}  // namespace ccm::kubesim
