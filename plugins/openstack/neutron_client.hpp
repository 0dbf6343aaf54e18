// NeutronClient: the network calls the provider makes (ports, networks, subnets, floating IPs,
// extensions, router routes and tags) and the models it reads them into.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plugins/openstack/openstack_client.hpp"

namespace ccm::openstack {

struct FixedIp {
  std::string subnet_id;
  std::string ip_address;
};

struct AddressPair {
  std::string ip_address;
  std::string mac_address;
};

struct Port {
  std::string id;
  std::string name;
  std::string network_id;
  std::string device_id;
  std::string device_owner;
  std::string status;
  std::vector<FixedIp> fixed_ips;
  std::vector<AddressPair> allowed_address_pairs;
  std::optional<bool> port_security_enabled;
  std::vector<std::string> trunk_subport_ids;
  std::vector<std::string> security_groups;  // IDs
};

struct Network {
  std::string id;
  std::string name;
  bool external = false;
  std::vector<std::string> subnets;
};

struct Subnet {
  std::string id;
  std::string name;
  std::string network_id;
  int ip_version = 4;
  std::string cidr;
  std::vector<std::string> tags;
};

struct FloatingIp {
  std::string id;
  std::string floating_ip_address;
  std::string floating_network_id;
  std::string port_id;  // empty when not attached
  std::string description;
};

struct RouterRoute {
  std::string destination;
  std::string nexthop;
  bool operator==(const RouterRoute&) const = default;
};

struct Router {
  std::string id;
  std::vector<RouterRoute> routes;
  std::vector<std::string> tags;
};

struct SecurityGroup {
  std::string id;
  std::string name;
  std::string description;
};

struct SecurityGroupRule {
  std::string id;
  std::string security_group_id;
  std::string direction;  // ingress, egress
  std::string ethertype;  // IPv4, IPv6
  std::string protocol;   // lower case; empty: any
  std::optional<int64_t> port_range_min;
  std::optional<int64_t> port_range_max;
  std::string remote_ip_prefix;
  std::string remote_group_id;
  std::string description;
};

Port parsePort(const JsonValue& obj);
FloatingIp parseFloatingIp(const JsonValue& obj);

// THREAD: any.
class NeutronClient {
 public:
  explicit NeutronClient(OpenStackClient& os) : os_(os) {}

  // query is the part after '?' (already encoded), e.g. "device_id=X".
  sdk::Result<std::vector<Port>> listPorts(const sdk::Call& call, const std::string& query);
  sdk::Result<Port> getPort(const sdk::Call& call, const std::string& id);
  sdk::Status setAllowedAddressPairs(const sdk::Call& call, const std::string& port_id,
                                const std::vector<AddressPair>& pairs);

  // Replaces the port's security groups (IDs).
  sdk::Status setPortSecurityGroups(const sdk::Call& call, const std::string& port_id,
                               const std::vector<std::string>& group_ids);

  // Security groups (neutron_security_groups.cpp). query as for listPorts.
  sdk::Result<std::vector<SecurityGroup>> listSecurityGroups(const sdk::Call& call,
                                                          const std::string& query);
  sdk::Result<SecurityGroup> createSecurityGroup(const sdk::Call& call, const std::string& name,
                                              const std::string& description);
  // NOT_FOUND counts as done; 409 (still in use by a port) is an error.
  sdk::Status deleteSecurityGroup(const sdk::Call& call, const std::string& id);
  sdk::Result<std::vector<SecurityGroupRule>> listSecurityGroupRules(const sdk::Call& call,
                                                                  const std::string& group_id);
  // Creates the rule (its id is ignored). ALREADY_EXISTS when Neutron has the same rule.
  sdk::Status createSecurityGroupRule(const sdk::Call& call, const SecurityGroupRule& rule);
  // NOT_FOUND counts as done.
  sdk::Status deleteSecurityGroupRule(const sdk::Call& call, const std::string& id);

  sdk::Result<Network> getNetwork(const sdk::Call& call, const std::string& id);
  sdk::Result<std::vector<Network>> listNetworks(const sdk::Call& call, const std::string& query);
  sdk::Result<Subnet> getSubnet(const sdk::Call& call, const std::string& id);
  sdk::Result<std::vector<Subnet>> listSubnets(const sdk::Call& call, const std::string& query);

  sdk::Result<std::vector<FloatingIp>> listFloatingIps(const sdk::Call& call,
                                                    const std::string& query);
  sdk::Result<FloatingIp> createFloatingIp(const sdk::Call& call, const Json& body);
  // Attaches to port_id, or detaches when it is empty (sends "port_id": null).
  sdk::Status setFloatingIpPort(const sdk::Call& call, const std::string& fip_id,
                           const std::string& port_id);
  sdk::Status setFloatingIpDescription(const sdk::Call& call, const std::string& fip_id,
                                  const std::string& description);
  // NOT_FOUND counts as done.
  sdk::Status deleteFloatingIp(const sdk::Call& call, const std::string& fip_id);

  sdk::Result<std::set<std::string>> extensionAliases(const sdk::Call& call);

  sdk::Result<Router> getRouter(const sdk::Call& call, const std::string& id);
  sdk::Status setRouterRoutes(const sdk::Call& call, const std::string& router_id,
                         const std::vector<RouterRoute>& routes);
  // PUT routers/{id}/add_extraroutes or remove_extraroutes (extraroute-atomic).
  sdk::Status changeExtraRoutes(const sdk::Call& call, const std::string& router_id, bool add,
                           const std::vector<RouterRoute>& routes);
  sdk::Status addRouterTag(const sdk::Call& call, const std::string& router_id,
                      const std::string& tag);
  // NOT_FOUND counts as done.
  sdk::Status removeRouterTag(const sdk::Call& call, const std::string& router_id,
                         const std::string& tag);

 private:
  OpenStackClient& os_;
};

}  // namespace ccm::openstack
