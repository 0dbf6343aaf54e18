// Neutron calls.
#include "plugins/openstack/neutron_client.hpp"

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

Network parseNetwork(const JsonValue& obj) {
  Network n;
  n.id = jsonString(obj, "id");
  n.name = jsonString(obj, "name");
  n.external = jsonBool(obj, "router:external").value_or(false);
  n.subnets = jsonStrings(obj, "subnets");
  return n;
}

Subnet parseSubnet(const JsonValue& obj) {
  Subnet s;
  s.id = jsonString(obj, "id");
  s.name = jsonString(obj, "name");
  s.network_id = jsonString(obj, "network_id");
  s.ip_version = static_cast<int>(jsonInt(obj, "ip_version").value_or(4));
  s.cidr = jsonString(obj, "cidr");
  s.tags = jsonStrings(obj, "tags");
  return s;
}

Router parseRouter(const JsonValue& obj) {
  Router r;
  r.id = jsonString(obj, "id");
  r.tags = jsonStrings(obj, "tags");
  if (const JsonValue* routes = jsonArray(obj, "routes")) {
    for (const auto& rt : routes->GetArray()) {
      r.routes.push_back({jsonString(rt, "destination"), jsonString(rt, "nexthop")});
    }
  }
  return r;
}

std::string withQuery(const std::string& path, const std::string& query) {
  return query.empty() ? path : path + "?" + query;
}

Json routesJson(const std::vector<RouterRoute>& routes) {
  Json arr = Json::array();
  for (const auto& r : routes) {
    arr.push(Json::object().set("destination", r.destination).set("nexthop", r.nexthop));
  }
  return arr;
}

}  // namespace

Port parsePort(const JsonValue& obj) {
  Port p;
  p.id = jsonString(obj, "id");
  p.name = jsonString(obj, "name");
  p.network_id = jsonString(obj, "network_id");
  p.device_id = jsonString(obj, "device_id");
  p.device_owner = jsonString(obj, "device_owner");
  p.status = jsonString(obj, "status");
  if (const JsonValue* ips = jsonArray(obj, "fixed_ips")) {
    for (const auto& ip : ips->GetArray()) {
      p.fixed_ips.push_back({jsonString(ip, "subnet_id"), jsonString(ip, "ip_address")});
    }
  }
  if (const JsonValue* pairs = jsonArray(obj, "allowed_address_pairs")) {
    for (const auto& pair : pairs->GetArray()) {
      p.allowed_address_pairs.push_back(
          {jsonString(pair, "ip_address"), jsonString(pair, "mac_address")});
    }
  }
  p.port_security_enabled = jsonBool(obj, "port_security_enabled");
  p.security_groups = jsonStrings(obj, "security_groups");
  if (const JsonValue* trunk = jsonObject(obj, "trunk_details")) {
    if (const JsonValue* subs = jsonArray(*trunk, "sub_ports")) {
      for (const auto& sp : subs->GetArray()) {
        std::string id = jsonString(sp, "port_id");
        if (!id.empty()) {
          p.trunk_subport_ids.push_back(id);
        }
      }
    }
  }
  return p;
}

FloatingIp parseFloatingIp(const JsonValue& obj) {
  FloatingIp f;
  f.id = jsonString(obj, "id");
  f.floating_ip_address = jsonString(obj, "floating_ip_address");
  f.floating_network_id = jsonString(obj, "floating_network_id");
  f.port_id = jsonString(obj, "port_id");
  f.description = jsonString(obj, "description");
  return f;
}

sdk::Result<std::vector<Port>> NeutronClient::listPorts(const sdk::Call& call,
                                                     const std::string& query) {
  std::vector<Port> out;
  sdk::Status st = os_.forEachPage(call, Service::Network, withQuery("ports", query), "ports_links",
                              "port_list", [&](const JsonValue& page) {
                                if (const JsonValue* arr = jsonArray(page, "ports")) {
                                  for (const auto& p : arr->GetArray()) {
                                    out.push_back(parsePort(p));
                                  }
                                }
                                return true;
                              });
  if (!st.ok()) {
    return st;
  }
  return out;
}

sdk::Result<Port> NeutronClient::getPort(const sdk::Call& call, const std::string& id) {
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.getJson(call, Service::Network, "ports/" + urlEncode(id), "port_get"));
  const JsonValue* port = jsonObject(doc, "port");
  if (port == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Neutron answered without a port");
  }
  return parsePort(*port);
}

sdk::Status NeutronClient::setAllowedAddressPairs(const sdk::Call& call, const std::string& port_id,
                                             const std::vector<AddressPair>& pairs) {
  Json arr = Json::array();
  for (const auto& p : pairs) {
    Json pair = Json::object().set("ip_address", p.ip_address);
    if (!p.mac_address.empty()) {
      pair.set("mac_address", p.mac_address);
    }
    arr.push(std::move(pair));
  }
  Json body = Json::object().set("port", Json::object().set("allowed_address_pairs", arr));
  auto resp = os_.request(call, Service::Network, "PUT", "ports/" + urlEncode(port_id), &body,
                          "port_update");
  return resp.ok() ? sdk::Status() : resp.status();
}

sdk::Result<Network> NeutronClient::getNetwork(const sdk::Call& call, const std::string& id) {
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.getJson(call, Service::Network, "networks/" + urlEncode(id), "network_get"));
  const JsonValue* net = jsonObject(doc, "network");
  if (net == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Neutron answered without a network");
  }
  return parseNetwork(*net);
}

sdk::Result<std::vector<Network>> NeutronClient::listNetworks(const sdk::Call& call,
                                                           const std::string& query) {
  std::vector<Network> out;
  sdk::Status st = os_.forEachPage(call, Service::Network, withQuery("networks", query),
                              "networks_links", "network_list", [&](const JsonValue& page) {
                                if (const JsonValue* arr = jsonArray(page, "networks")) {
                                  for (const auto& n : arr->GetArray()) {
                                    out.push_back(parseNetwork(n));
                                  }
                                }
                                return true;
                              });
  if (!st.ok()) {
    return st;
  }
  return out;
}

sdk::Result<Subnet> NeutronClient::getSubnet(const sdk::Call& call, const std::string& id) {
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.getJson(call, Service::Network, "subnets/" + urlEncode(id), "subnet_get"));
  const JsonValue* sub = jsonObject(doc, "subnet");
  if (sub == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Neutron answered without a subnet");
  }
  return parseSubnet(*sub);
}

sdk::Result<std::vector<Subnet>> NeutronClient::listSubnets(const sdk::Call& call,
                                                         const std::string& query) {
  std::vector<Subnet> out;
  sdk::Status st = os_.forEachPage(call, Service::Network, withQuery("subnets", query), "subnets_links",
                              "subnet_list", [&](const JsonValue& page) {
                                if (const JsonValue* arr = jsonArray(page, "subnets")) {
                                  for (const auto& s : arr->GetArray()) {
                                    out.push_back(parseSubnet(s));
                                  }
                                }
                                return true;
                              });
  if (!st.ok()) {
    return st;
  }
  return out;
}

sdk::Result<std::vector<FloatingIp>> NeutronClient::listFloatingIps(const sdk::Call& call,
                                                                 const std::string& query) {
  std::vector<FloatingIp> out;
  sdk::Status st = os_.forEachPage(call, Service::Network, withQuery("floatingips", query),
                              "floatingips_links", "floatingip_list", [&](const JsonValue& page) {
                                if (const JsonValue* arr = jsonArray(page, "floatingips")) {
                                  for (const auto& f : arr->GetArray()) {
                                    out.push_back(parseFloatingIp(f));
                                  }
                                }
                                return true;
                              });
  if (!st.ok()) {
    return st;
  }
  return out;
}

sdk::Result<FloatingIp> NeutronClient::createFloatingIp(const sdk::Call& call, const Json& body) {
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.sendJson(call, Service::Network, "POST", "floatingips", body, "floatingip_create"));
  const JsonValue* fip = jsonObject(doc, "floatingip");
  if (fip == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Neutron answered without a floating IP");
  }
  return parseFloatingIp(*fip);
}

sdk::Status NeutronClient::setFloatingIpPort(const sdk::Call& call, const std::string& fip_id,
                                        const std::string& port_id) {
  Json inner = Json::object();
  if (port_id.empty()) {
    inner.set("port_id", nullptr);
  } else {
    inner.set("port_id", port_id);
  }
  Json body = Json::object().set("floatingip", std::move(inner));
  auto resp = os_.request(call, Service::Network, "PUT", "floatingips/" + urlEncode(fip_id), &body,
                          "floatingip_update");
  return resp.ok() ? sdk::Status() : resp.status();
}

sdk::Status NeutronClient::setFloatingIpDescription(const sdk::Call& call, const std::string& fip_id,
                                               const std::string& description) {
  Json body = Json::object().set("floatingip", Json::object().set("description", description));
  auto resp = os_.request(call, Service::Network, "PUT", "floatingips/" + urlEncode(fip_id), &body,
                          "floatingip_update");
  return resp.ok() ? sdk::Status() : resp.status();
}

sdk::Status NeutronClient::deleteFloatingIp(const sdk::Call& call, const std::string& fip_id) {
  auto resp = os_.request(call, Service::Network, "DELETE", "floatingips/" + urlEncode(fip_id),
                          nullptr, "floatingip_delete");
  if (!resp.ok() && resp.status().code() != CCM_STATUS_NOT_FOUND) {
    return resp.status();
  }
  return {};
}

sdk::Result<std::set<std::string>> NeutronClient::extensionAliases(const sdk::Call& call) {
  CCM_SDK_ASSIGN_OR_RETURN(rapidjson::Document doc,
                          os_.getJson(call, Service::Network, "extensions", "extension_list"));
  std::set<std::string> out;
  if (const JsonValue* arr = jsonArray(doc, "extensions")) {
    for (const auto& e : arr->GetArray()) {
      out.insert(jsonString(e, "alias"));
    }
  }
  return out;
}

sdk::Result<Router> NeutronClient::getRouter(const sdk::Call& call, const std::string& id) {
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.getJson(call, Service::Network, "routers/" + urlEncode(id), "router_get"));
  const JsonValue* router = jsonObject(doc, "router");
  if (router == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Neutron answered without a router");
  }
  return parseRouter(*router);
}

sdk::Status NeutronClient::setRouterRoutes(const sdk::Call& call, const std::string& router_id,
                                      const std::vector<RouterRoute>& routes) {
  Json body = Json::object().set("router", Json::object().set("routes", routesJson(routes)));
  auto resp = os_.request(call, Service::Network, "PUT", "routers/" + urlEncode(router_id), &body,
                          "router_update");
  return resp.ok() ? sdk::Status() : resp.status();
}

sdk::Status NeutronClient::changeExtraRoutes(const sdk::Call& call, const std::string& router_id,
                                        bool add, const std::vector<RouterRoute>& routes) {
  Json body = Json::object().set("router", Json::object().set("routes", routesJson(routes)));
  std::string action = add ? "add_extraroutes" : "remove_extraroutes";
  auto resp =
      os_.request(call, Service::Network, "PUT", "routers/" + urlEncode(router_id) + "/" + action,
                  &body, "router_" + action);
  return resp.ok() ? sdk::Status() : resp.status();
}

sdk::Status NeutronClient::addRouterTag(const sdk::Call& call, const std::string& router_id,
                                   const std::string& tag) {
  auto resp = os_.request(call, Service::Network, "PUT",
                          "routers/" + urlEncode(router_id) + "/tags/" + urlEncode(tag), nullptr,
                          "router_tag_add");
  return resp.ok() ? sdk::Status() : resp.status();
}

sdk::Status NeutronClient::removeRouterTag(const sdk::Call& call, const std::string& router_id,
                                      const std::string& tag) {
  auto resp = os_.request(call, Service::Network, "DELETE",
                          "routers/" + urlEncode(router_id) + "/tags/" + urlEncode(tag), nullptr,
                          "router_tag_delete");
  if (!resp.ok() && resp.status().code() != CCM_STATUS_NOT_FOUND) {
    return resp.status();
  }
  return {};
}

}  // namespace ccm::openstack
