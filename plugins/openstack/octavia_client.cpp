// Octavia calls.
#include "plugins/openstack/octavia_client.hpp"

#include <cstdlib>

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

OctaviaListener parseListener(const JsonValue& obj) {
  OctaviaListener l;
  l.id = jsonString(obj, "id");
  l.name = jsonString(obj, "name");
  l.protocol = jsonString(obj, "protocol");
  l.protocol_port = jsonInt(obj, "protocol_port").value_or(0);
  l.connection_limit = jsonInt(obj, "connection_limit").value_or(-1);
  l.default_pool_id = jsonString(obj, "default_pool_id");
  if (const JsonValue* h = jsonObject(obj, "insert_headers")) {
    l.x_forwarded_for = toLower(jsonString(*h, "X-Forwarded-For")) == "true";
  }
  l.allowed_cidrs = jsonStrings(obj, "allowed_cidrs");
  l.default_tls_container_ref = jsonString(obj, "default_tls_container_ref");
  l.sni_container_refs = jsonStrings(obj, "sni_container_refs");
  l.timeout_client_data = jsonInt(obj, "timeout_client_data");
  l.timeout_member_connect = jsonInt(obj, "timeout_member_connect");
  l.timeout_member_data = jsonInt(obj, "timeout_member_data");
  l.timeout_tcp_inspect = jsonInt(obj, "timeout_tcp_inspect");
  l.tags = jsonStrings(obj, "tags");
  l.provisioning_status = jsonString(obj, "provisioning_status");
  return l;
}

OctaviaPool parsePool(const JsonValue& obj) {
  OctaviaPool p;
  p.id = jsonString(obj, "id");
  p.name = jsonString(obj, "name");
  p.protocol = jsonString(obj, "protocol");
  p.lb_algorithm = jsonString(obj, "lb_algorithm");
  p.listener_ids = jsonIds(obj, "listeners");
  p.healthmonitor_id = jsonString(obj, "healthmonitor_id");
  if (const JsonValue* sp = jsonObject(obj, "session_persistence")) {
    p.session_persistence = jsonString(*sp, "type");
  }
  p.provisioning_status = jsonString(obj, "provisioning_status");
  return p;
}

OctaviaMember parseMember(const JsonValue& obj) {
  OctaviaMember m;
  m.id = jsonString(obj, "id");
  m.name = jsonString(obj, "name");
  m.address = jsonString(obj, "address");
  m.protocol_port = jsonInt(obj, "protocol_port").value_or(0);
  m.subnet_id = jsonString(obj, "subnet_id");
  m.monitor_port = jsonInt(obj, "monitor_port");
  m.provisioning_status = jsonString(obj, "provisioning_status");
  return m;
}

OctaviaMonitor parseMonitor(const JsonValue& obj) {
  OctaviaMonitor m;
  m.id = jsonString(obj, "id");
  m.name = jsonString(obj, "name");
  m.type = jsonString(obj, "type");
  m.delay = jsonInt(obj, "delay").value_or(0);
  m.timeout = jsonInt(obj, "timeout").value_or(0);
  m.max_retries = jsonInt(obj, "max_retries").value_or(0);
  m.max_retries_down = jsonInt(obj, "max_retries_down").value_or(0);
  m.url_path = jsonString(obj, "url_path");
  m.http_method = jsonString(obj, "http_method");
  m.expected_codes = jsonString(obj, "expected_codes");
  return m;
}

template <typename T, typename Parse>
sdk::Result<std::vector<T>> listAll(OpenStackClient& os, const sdk::Call& call,
                                 const std::string& path, const char* key, const std::string& op,
                                 Parse parse) {
  std::vector<T> out;
  std::string links = std::string(key) + "_links";
  sdk::Status st =
      os.forEachPage(call, Service::LoadBalancer, path, links, op, [&](const JsonValue& page) {
        if (const JsonValue* arr = jsonArray(page, key)) {
          for (const auto& item : arr->GetArray()) {
            out.push_back(parse(item));
          }
        }
        return true;
      });
  if (!st.ok()) {
    return st;
  }
  return out;
}

}  // namespace

OctaviaLoadBalancer parseLoadBalancer(const JsonValue& obj) {
  OctaviaLoadBalancer lb;
  lb.id = jsonString(obj, "id");
  lb.name = jsonString(obj, "name");
  lb.description = jsonString(obj, "description");
  lb.provisioning_status = jsonString(obj, "provisioning_status");
  lb.vip_address = jsonString(obj, "vip_address");
  lb.vip_port_id = jsonString(obj, "vip_port_id");
  lb.vip_subnet_id = jsonString(obj, "vip_subnet_id");
  lb.vip_network_id = jsonString(obj, "vip_network_id");
  lb.provider = jsonString(obj, "provider");
  lb.tags = jsonStrings(obj, "tags");
  lb.listener_ids = jsonIds(obj, "listeners");
  if (const JsonValue* vips = jsonArray(obj, "additional_vips"); vips != nullptr) {
    for (const JsonValue& v : vips->GetArray()) {
      if (v.IsObject()) {
        lb.additional_vips.push_back({jsonString(v, "subnet_id"), jsonString(v, "ip_address")});
      }
    }
  }
  return lb;
}

sdk::Status OctaviaClient::send(const sdk::Call& call, const std::string& method,
                           const std::string& path, const Json* body, const std::string& op) {
  auto resp = os_.request(call, Service::LoadBalancer, method, path, body, op);
  return resp.ok() ? sdk::Status() : resp.status();
}

sdk::Result<OctaviaVersion> OctaviaClient::apiVersion(const sdk::Call& call) {
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.getJson(call, Service::LoadBalancer, os_.octaviaRoot(), "loadbalancer_versions"));
  const JsonValue* versions = jsonArray(doc, "versions");
  if (versions == nullptr) {
    if (const JsonValue* obj = jsonObject(doc, "versions")) {
      versions = jsonArray(*obj, "values");
    }
  }
  OctaviaVersion best;
  bool any = false;
  if (versions != nullptr) {
    for (const auto& v : versions->GetArray()) {
      std::string id = jsonString(v, "id");
      if (id.size() < 2 || id[0] != 'v') {
        continue;
      }
      OctaviaVersion ver;
      ver.major = std::atoi(id.c_str() + 1);
      auto dot = id.find('.');
      ver.minor = dot == std::string::npos ? 0 : std::atoi(id.c_str() + dot + 1);
      if (!any || ver.atLeast(best.major, best.minor)) {
        best = ver;
      }
      any = true;
    }
  }
  if (!any) {
    return sdk::Status(CCM_STATUS_UNAVAILABLE, "Octavia's root lists no API versions");
  }
  return best;
}

sdk::Result<OctaviaLoadBalancer> OctaviaClient::getLoadBalancer(const sdk::Call& call,
                                                             const std::string& id) {
  CCM_SDK_ASSIGN_OR_RETURN(rapidjson::Document doc,
                          os_.getJson(call, Service::LoadBalancer,
                                      "lbaas/loadbalancers/" + urlEncode(id), "loadbalancer_get"));
  const JsonValue* lb = jsonObject(doc, "loadbalancer");
  if (lb == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Octavia answered without a loadbalancer");
  }
  return parseLoadBalancer(*lb);
}

sdk::Result<std::vector<OctaviaLoadBalancer>> OctaviaClient::findLoadBalancers(
    const sdk::Call& call, const std::string& name) {
  return listAll<OctaviaLoadBalancer>(os_, call, "lbaas/loadbalancers?name=" + urlEncode(name),
                                      "loadbalancers", "loadbalancer_list", parseLoadBalancer);
}

sdk::Result<OctaviaLoadBalancer> OctaviaClient::createLoadBalancer(const sdk::Call& call,
                                                                const Json& body) {
  CCM_SDK_ASSIGN_OR_RETURN(rapidjson::Document doc,
                          os_.sendJson(call, Service::LoadBalancer, "POST", "lbaas/loadbalancers",
                                       body, "loadbalancer_create"));
  const JsonValue* lb = jsonObject(doc, "loadbalancer");
  if (lb == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Octavia answered without a loadbalancer");
  }
  return parseLoadBalancer(*lb);
}

sdk::Status OctaviaClient::updateLoadBalancer(const sdk::Call& call, const std::string& id,
                                         const Json& body) {
  return send(call, "PUT", "lbaas/loadbalancers/" + urlEncode(id), &body, "loadbalancer_update");
}

sdk::Status OctaviaClient::deleteLoadBalancer(const sdk::Call& call, const std::string& id,
                                         bool cascade) {
  return send(call, "DELETE",
              "lbaas/loadbalancers/" + urlEncode(id) + (cascade ? "?cascade=true" : ""), nullptr,
              "loadbalancer_delete");
}

sdk::Result<std::vector<OctaviaListener>> OctaviaClient::listListeners(const sdk::Call& call,
                                                                    const std::string& lb_id) {
  return listAll<OctaviaListener>(os_, call, "lbaas/listeners?loadbalancer_id=" + urlEncode(lb_id),
                                  "listeners", "listener_list", parseListener);
}

sdk::Result<OctaviaListener> OctaviaClient::createListener(const sdk::Call& call, const Json& body) {
  CCM_SDK_ASSIGN_OR_RETURN(rapidjson::Document doc,
                          os_.sendJson(call, Service::LoadBalancer, "POST", "lbaas/listeners", body,
                                       "listener_create"));
  const JsonValue* l = jsonObject(doc, "listener");
  if (l == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Octavia answered without a listener");
  }
  return parseListener(*l);
}

sdk::Status OctaviaClient::updateListener(const sdk::Call& call, const std::string& id,
                                     const Json& body) {
  return send(call, "PUT", "lbaas/listeners/" + urlEncode(id), &body, "listener_update");
}

sdk::Status OctaviaClient::deleteListener(const sdk::Call& call, const std::string& id) {
  return send(call, "DELETE", "lbaas/listeners/" + urlEncode(id), nullptr, "listener_delete");
}

sdk::Result<std::vector<OctaviaPool>> OctaviaClient::listPools(const sdk::Call& call,
                                                            const std::string& lb_id) {
  return listAll<OctaviaPool>(os_, call, "lbaas/pools?loadbalancer_id=" + urlEncode(lb_id), "pools",
                              "pool_list", parsePool);
}

sdk::Result<OctaviaPool> OctaviaClient::createPool(const sdk::Call& call, const Json& body) {
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.sendJson(call, Service::LoadBalancer, "POST", "lbaas/pools", body, "pool_create"));
  const JsonValue* p = jsonObject(doc, "pool");
  if (p == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Octavia answered without a pool");
  }
  return parsePool(*p);
}

sdk::Status OctaviaClient::updatePool(const sdk::Call& call, const std::string& id, const Json& body) {
  return send(call, "PUT", "lbaas/pools/" + urlEncode(id), &body, "pool_update");
}

sdk::Status OctaviaClient::deletePool(const sdk::Call& call, const std::string& id) {
  return send(call, "DELETE", "lbaas/pools/" + urlEncode(id), nullptr, "pool_delete");
}

sdk::Result<std::vector<OctaviaMember>> OctaviaClient::listMembers(const sdk::Call& call,
                                                                const std::string& pool_id) {
  return listAll<OctaviaMember>(os_, call, "lbaas/pools/" + urlEncode(pool_id) + "/members",
                                "members", "member_list", parseMember);
}

sdk::Status OctaviaClient::replaceMembers(const sdk::Call& call, const std::string& pool_id,
                                     const Json& body) {
  return send(call, "PUT", "lbaas/pools/" + urlEncode(pool_id) + "/members", &body,
              "member_batch_update");
}

sdk::Status OctaviaClient::createMember(const sdk::Call& call, const std::string& pool_id,
                                   const Json& body) {
  return send(call, "POST", "lbaas/pools/" + urlEncode(pool_id) + "/members", &body,
              "member_create");
}

sdk::Status OctaviaClient::deleteMember(const sdk::Call& call, const std::string& pool_id,
                                   const std::string& member_id) {
  return send(call, "DELETE",
              "lbaas/pools/" + urlEncode(pool_id) + "/members/" + urlEncode(member_id), nullptr,
              "member_delete");
}

sdk::Result<OctaviaMonitor> OctaviaClient::getMonitor(const sdk::Call& call, const std::string& id) {
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.getJson(call, Service::LoadBalancer, "lbaas/healthmonitors/" + urlEncode(id),
                  "healthmonitor_get"));
  const JsonValue* m = jsonObject(doc, "healthmonitor");
  if (m == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Octavia answered without a health monitor");
  }
  return parseMonitor(*m);
}

sdk::Status OctaviaClient::createMonitor(const sdk::Call& call, const Json& body) {
  return send(call, "POST", "lbaas/healthmonitors", &body, "healthmonitor_create");
}

sdk::Status OctaviaClient::updateMonitor(const sdk::Call& call, const std::string& id,
                                    const Json& body) {
  return send(call, "PUT", "lbaas/healthmonitors/" + urlEncode(id), &body, "healthmonitor_update");
}

sdk::Status OctaviaClient::deleteMonitor(const sdk::Call& call, const std::string& id) {
  return send(call, "DELETE", "lbaas/healthmonitors/" + urlEncode(id), nullptr,
              "healthmonitor_delete");
}

}  // namespace ccm::openstack
