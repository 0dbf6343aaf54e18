// Nova calls.
#include "plugins/openstack/nova_client.hpp"

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {

constexpr int kServerPageSize = 1000;

Server parseServer(const JsonValue& obj) {
  Server s;
  s.id = jsonString(obj, "id");
  s.name = jsonString(obj, "name");
  s.status = jsonString(obj, "status");
  s.availability_zone = jsonString(obj, "OS-EXT-AZ:availability_zone");
  s.access_ipv4 = jsonString(obj, "accessIPv4");
  s.access_ipv6 = jsonString(obj, "accessIPv6");
  if (const JsonValue* flavor = jsonObject(obj, "flavor")) {
    s.flavor_id = jsonString(*flavor, "id");
    s.flavor_original_name = jsonString(*flavor, "original_name");
  }
  if (const JsonValue* md = jsonObject(obj, "metadata")) {
    for (const auto& m : md->GetObject()) {
      if (m.value.IsString()) {
        s.metadata[m.name.GetString()] = m.value.GetString();
      }
    }
  }
  if (const JsonValue* addrs = jsonObject(obj, "addresses")) {
    for (const auto& net : addrs->GetObject()) {
      if (!net.value.IsArray()) {
        continue;
      }
      for (const auto& a : net.value.GetArray()) {
        NovaAddress na;
        na.network = net.name.GetString();
        na.addr = jsonString(a, "addr");
        na.version = static_cast<int>(jsonInt(a, "version").value_or(4));
        na.type = jsonString(a, "OS-EXT-IPS:type");
        if (!na.addr.empty()) {
          s.addresses.push_back(std::move(na));
        }
      }
    }
  }
  return s;
}

sdk::Result<Server> NovaClient::getServer(const sdk::Call& call, const std::string& id) {
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.getJson(call, Service::Compute, "servers/" + urlEncode(id), "server_get"));
  const JsonValue* server = jsonObject(doc, "server");
  if (server == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Nova answered without a server object");
  }
  return parseServer(*server);
}

sdk::Result<std::vector<Server>> NovaClient::findByName(const sdk::Call& call,
                                                     const std::string& name) {
  std::vector<Server> found;
  std::string path = "servers/detail?name=" + urlEncode("^" + quoteRegex(name) + "$");
  sdk::Status st = os_.forEachPage(call, Service::Compute, path, "servers_links", "server_list",
                              [&](const JsonValue& page) {
                                if (const JsonValue* arr = jsonArray(page, "servers")) {
                                  for (const auto& s : arr->GetArray()) {
                                    Server server = parseServer(s);
                                    // Nova's regex match is a search; keep exact names only.
                                    if (server.name == name) {
                                      found.push_back(std::move(server));
                                    }
                                  }
                                }
                                return found.size() <= 1;
                              });
  if (!st.ok()) {
    return st;
  }
  return found;
}

sdk::Status NovaClient::listServers(const sdk::Call& call,
                               const std::function<void(Server)>& on_server) {
  std::string path = "servers/detail?limit=" + std::to_string(kServerPageSize);
  return os_.forEachPage(call, Service::Compute, path, "servers_links", "server_list",
                         [&](const JsonValue& page) {
                           if (const JsonValue* arr = jsonArray(page, "servers")) {
                             for (const auto& s : arr->GetArray()) {
                               on_server(parseServer(s));
                             }
                           }
                           return true;
                         });
}

sdk::Result<std::string> NovaClient::flavorName(const sdk::Call& call,
                                             const std::string& flavor_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = flavor_names_.find(flavor_id);
    if (it != flavor_names_.end()) {
      return it->second;
    }
  }
  CCM_SDK_ASSIGN_OR_RETURN(
      rapidjson::Document doc,
      os_.getJson(call, Service::Compute, "flavors/" + urlEncode(flavor_id), "flavor_get"));
  const JsonValue* flavor = jsonObject(doc, "flavor");
  if (flavor == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Nova answered without a flavor object");
  }
  std::string name = jsonString(*flavor, "name");
  std::lock_guard<std::mutex> lock(mu_);
  flavor_names_[flavor_id] = name;
  return name;
}

}  // namespace ccm::openstack
