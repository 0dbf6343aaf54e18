// Neutron calls for security groups, their rules and the groups on a port.
#include "plugins/openstack/neutron_client.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

SecurityGroup parseSecurityGroup(const JsonValue& obj) {
  SecurityGroup g;
  g.id = jsonString(obj, "id");
  g.name = jsonString(obj, "name");
  g.description = jsonString(obj, "description");
  return g;
}

SecurityGroupRule parseRule(const JsonValue& obj) {
  SecurityGroupRule r;
  r.id = jsonString(obj, "id");
  r.security_group_id = jsonString(obj, "security_group_id");
  r.direction = jsonString(obj, "direction");
  r.ethertype = jsonString(obj, "ethertype");
  r.protocol = toLower(jsonString(obj, "protocol"));
  r.port_range_min = jsonInt(obj, "port_range_min");
  r.port_range_max = jsonInt(obj, "port_range_max");
  r.remote_ip_prefix = jsonString(obj, "remote_ip_prefix");
  r.remote_group_id = jsonString(obj, "remote_group_id");
  r.description = jsonString(obj, "description");
  return r;
}

std::string withQuery(const std::string& path, const std::string& query) {
  return query.empty() ? path : path + "?" + query;
}

}  // namespace

sdk::Status NeutronClient::setPortSecurityGroups(const sdk::Call& call, const std::string& port_id,
                                            const std::vector<std::string>& group_ids) {
  Json body = Json::object().set(
      "port", Json::object().set("security_groups", Json::stringArray(group_ids)));
  auto resp = os_.request(call, Service::Network, "PUT", "ports/" + urlEncode(port_id), &body,
                          "port_update");
  return resp.ok() ? sdk::Status() : resp.status();
}

sdk::Result<std::vector<SecurityGroup>> NeutronClient::listSecurityGroups(const sdk::Call& call,
                                                                       const std::string& query) {
  std::vector<SecurityGroup> out;
  sdk::Status st =
      os_.forEachPage(call, Service::Network, withQuery("security-groups", query),
                      "security_groups_links", "security_group_list", [&](const JsonValue& page) {
                        if (const JsonValue* arr = jsonArray(page, "security_groups")) {
                          for (const auto& g : arr->GetArray()) {
                            out.push_back(parseSecurityGroup(g));
                          }
                        }
                        return true;
                      });
  if (!st.ok()) {
    return st;
  }
  return out;
}

sdk::Result<SecurityGroup> NeutronClient::createSecurityGroup(const sdk::Call& call,
                                                           const std::string& name,
                                                           const std::string& description) {
  Json body = Json::object().set("security_group",
                                 Json::object().set("name", name).set("description", description));
  CCM_SDK_ASSIGN_OR_RETURN(rapidjson::Document doc,
                          os_.sendJson(call, Service::Network, "POST", "security-groups", body,
                                       "security_group_create"));
  const JsonValue* g = jsonObject(doc, "security_group");
  if (g == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "Neutron answered without a security group");
  }
  return parseSecurityGroup(*g);
}

sdk::Status NeutronClient::deleteSecurityGroup(const sdk::Call& call, const std::string& id) {
  auto resp = os_.request(call, Service::Network, "DELETE", "security-groups/" + urlEncode(id),
                          nullptr, "security_group_delete");
  if (!resp.ok() && resp.status().code() != CCM_STATUS_NOT_FOUND) {
    return resp.status();
  }
  return {};
}

sdk::Result<std::vector<SecurityGroupRule>> NeutronClient::listSecurityGroupRules(
    const sdk::Call& call, const std::string& group_id) {
  std::vector<SecurityGroupRule> out;
  sdk::Status st = os_.forEachPage(
      call, Service::Network, "security-group-rules?security_group_id=" + urlEncode(group_id),
      "security_group_rules_links", "security_group_rule_list", [&](const JsonValue& page) {
        if (const JsonValue* arr = jsonArray(page, "security_group_rules")) {
          for (const auto& r : arr->GetArray()) {
            out.push_back(parseRule(r));
          }
        }
        return true;
      });
  if (!st.ok()) {
    return st;
  }
  return out;
}

sdk::Status NeutronClient::createSecurityGroupRule(const sdk::Call& call,
                                              const SecurityGroupRule& rule) {
  Json r = Json::object()
               .set("security_group_id", rule.security_group_id)
               .set("direction", rule.direction)
               .set("ethertype", rule.ethertype);
  if (!rule.protocol.empty()) {
    r.set("protocol", rule.protocol);
  }
  if (rule.port_range_min) {
    r.set("port_range_min", *rule.port_range_min);
  }
  if (rule.port_range_max) {
    r.set("port_range_max", *rule.port_range_max);
  }
  if (!rule.remote_ip_prefix.empty()) {
    r.set("remote_ip_prefix", rule.remote_ip_prefix);
  }
  if (!rule.description.empty()) {
    r.set("description", rule.description);
  }
  Json body = Json::object().set("security_group_rule", std::move(r));
  auto resp = os_.request(call, Service::Network, "POST", "security-group-rules", &body,
                          "security_group_rule_create");
  // Only Neutron's SecurityGroupRuleExists (409, "Security group rule already exists") is
  // "done already"; another 409 (OverQuota: "Quota exceeded ...") is a failure.
  if (!resp.ok() && resp.status().code() == CCM_STATUS_ABORTED &&
      resp.status().message().find("already exists") != std::string::npos) {
    return sdk::Status(CCM_STATUS_ALREADY_EXISTS, resp.status().message());
  }
  return resp.ok() ? sdk::Status() : resp.status();
}

sdk::Status NeutronClient::deleteSecurityGroupRule(const sdk::Call& call, const std::string& id) {
  auto resp = os_.request(call, Service::Network, "DELETE", "security-group-rules/" + urlEncode(id),
                          nullptr, "security_group_rule_delete");
  if (!resp.ok() && resp.status().code() != CCM_STATUS_NOT_FOUND) {
    return resp.status();
  }
  return {};
}

}  // namespace ccm::openstack
