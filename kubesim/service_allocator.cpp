// ServiceAllocator: Service defaults, cluster IP and node port allocation.
#include "kubesim/service_allocator.hpp"

namespace ccm::kubesim {
namespace {

std::string ipFromOffset(uint32_t offset) {
  uint32_t base = (10u << 24) | (96u << 16);  // 10.96.0.0
  uint32_t ip = base + offset;
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

void defaultString(JsonValue& obj, std::string_view name, std::string_view value,
                   JsonAllocator& alloc) {
  const JsonValue* v = member(obj, name);
  if (v == nullptr || !v->IsString() || v->GetStringLength() == 0) {
    setString(obj, name, value, alloc);
  }
}

}  // namespace

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
    std::string_view ip = stringMember(*spec, "clusterIP");
    if (!ip.empty() && ip != "None") {
      ips.emplace(ip);
    }
    if (const JsonValue* ps = member(*spec, "ports"); ps && ps->IsArray()) {
      for (const auto& p : ps->GetArray()) {
        const JsonValue* np = member(p, "nodePort");
        if (np && np->IsInt64() && np->GetInt64() != 0) {
          ports.insert(np->GetInt64());
        }
      }
    }
    const JsonValue* hc = member(*spec, "healthCheckNodePort");
    if (hc && hc->IsInt64() && hc->GetInt64() != 0) {
      ports.insert(hc->GetInt64());
    }
  }
}

FieldErrors ServiceAllocator::prepare(JsonValue& svc, JsonAllocator& alloc, const JsonValue* old) {
  FieldErrors errs;
  JsonValue& spec = ensureObject(svc, "spec", alloc);
  defaultString(spec, "type", "ClusterIP", alloc);
  std::string type(stringMember(spec, "type"));
  defaultString(spec, "sessionAffinity", "None", alloc);
  if (type == "ExternalName") {
    return errs;
  }
  if (JsonValue* ports = member(spec, "ports"); ports && ports->IsArray()) {
    for (auto& p : ports->GetArray()) {
      if (!p.IsObject()) {
        continue;
      }
      defaultString(p, "protocol", "TCP", alloc);
      if (member(p, "targetPort") == nullptr) {
        if (const JsonValue* port = member(p, "port"); port && port->IsInt64()) {
          setInt(p, "targetPort", port->GetInt64(), alloc);
        }
      }
      if (type == "ClusterIP") {
        removeMember(p, "nodePort");
      }
    }
  }
  defaultString(spec, "internalTrafficPolicy", "Cluster", alloc);
  if (type == "NodePort" || type == "LoadBalancer") {
    defaultString(spec, "externalTrafficPolicy", "Cluster", alloc);
  } else {
    removeMember(spec, "externalTrafficPolicy");
  }
  if (type == "LoadBalancer" && member(spec, "allocateLoadBalancerNodePorts") == nullptr) {
    setBool(spec, "allocateLoadBalancerNodePorts", true, alloc);
  }
  // Keep what was allocated before (an update that omits them).
  if (old != nullptr) {
    if (const JsonValue* old_spec = member(*old, "spec")) {
      if (stringMember(spec, "clusterIP").empty() &&
          !stringMember(*old_spec, "clusterIP").empty()) {
        setString(spec, "clusterIP", stringMember(*old_spec, "clusterIP"), alloc);
      }
      const JsonValue* old_ports = member(*old_spec, "ports");
      JsonValue* ports = member(spec, "ports");
      if (type != "ClusterIP" && old_ports && old_ports->IsArray() && ports && ports->IsArray()) {
        for (auto& p : ports->GetArray()) {
          if (member(p, "nodePort") != nullptr) {
            continue;
          }
          for (const auto& op : old_ports->GetArray()) {
            const JsonValue* a = member(p, "port");
            const JsonValue* b = member(op, "port");
            const JsonValue* np = member(op, "nodePort");
            if (a && b && np && *a == *b &&
                stringMember(p, "protocol") == stringMember(op, "protocol")) {
              JsonValue copy;
              copy.CopyFrom(*np, alloc);
              setMember(p, "nodePort", std::move(copy), alloc);
            }
          }
        }
      }
      if (const JsonValue* hc = member(*old_spec, "healthCheckNodePort");
          hc && member(spec, "healthCheckNodePort") == nullptr &&
          stringMember(spec, "externalTrafficPolicy") == "Local") {
        JsonValue copy;
        copy.CopyFrom(*hc, alloc);
        setMember(spec, "healthCheckNodePort", std::move(copy), alloc);
      }
    }
  }

  std::lock_guard lock(mu_);
  std::set<std::string> used_ips(recent_ips_);
  std::set<int64_t> used_ports(recent_ports_);
  std::string self_key;
  if (const JsonValue* meta = member(svc, "metadata")) {
    self_key = storeKey(stringMember(*meta, "namespace"), stringMember(*meta, "name"));
  }
  collectUsed(used_ips, used_ports, old != nullptr ? self_key : std::string());

  std::string ip(stringMember(spec, "clusterIP"));
  if (ip.empty()) {
    do {
      ip = ipFromOffset(next_ip_++);
      if (next_ip_ >= (1u << 20) - 1) {
        next_ip_ = 10;
      }
    } while (used_ips.count(ip));
    recent_ips_.insert(ip);
    setString(spec, "clusterIP", ip, alloc);
  } else if (ip != "None" && old == nullptr && used_ips.count(ip)) {
    errs.push_back(FieldError::invalidString(
        "spec.clusterIPs", ip,
        "failed to allocate IP " + ip + ": provided IP is already allocated"));
  }
  JsonValue ips(rapidjson::kArrayType);
  ips.PushBack(makeString(ip, alloc), alloc);
  setMember(spec, "clusterIPs", std::move(ips), alloc);
  if (ip != "None") {
    JsonValue fam(rapidjson::kArrayType);
    fam.PushBack(JsonValue("IPv4"), alloc);
    if (member(spec, "ipFamilies") == nullptr) {
      setMember(spec, "ipFamilies", std::move(fam), alloc);
    }
    defaultString(spec, "ipFamilyPolicy", "SingleStack", alloc);
  }

  auto nextPort = [&]() {
    int64_t p;
    int guard = 0;
    do {
      p = next_port_++;
      if (next_port_ > 32767) {
        next_port_ = 30000;
      }
    } while (used_ports.count(p) && ++guard < 3000);
    used_ports.insert(p);
    recent_ports_.insert(p);
    return p;
  };
  bool want_node_ports = type == "NodePort" || (type == "LoadBalancer" && [&] {
                           const JsonValue* a = member(spec, "allocateLoadBalancerNodePorts");
                           return a == nullptr || !a->IsBool() || a->GetBool();
                         }());
  if (JsonValue* ports = member(spec, "ports"); ports && ports->IsArray() && want_node_ports) {
    for (auto& p : ports->GetArray()) {
      const JsonValue* np = member(p, "nodePort");
      if (np == nullptr || !np->IsInt64() || np->GetInt64() == 0) {
        setInt(p, "nodePort", nextPort(), alloc);
      }
    }
  }
  if (type == "LoadBalancer" && stringMember(spec, "externalTrafficPolicy") == "Local" &&
      member(spec, "healthCheckNodePort") == nullptr) {
    setInt(spec, "healthCheckNodePort", nextPort(), alloc);
  }
  if (recent_ips_.size() > 4096) {
    recent_ips_.clear();
  }
  if (recent_ports_.size() > 1024) {
    recent_ports_.clear();
  }
  return errs;
}

}  // namespace ccm::kubesim
