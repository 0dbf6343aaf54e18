// Existence checks of the objects cloud.conf names.
#include "plugins/openstack/cloud_objects_check.hpp"

#include <string>
#include <vector>

namespace ccm::openstack {
namespace {

enum class Kind { Router, Network, Subnet };

struct Wanted {
  std::string option;  // "[Route] router-id"
  Kind kind;
  std::string id;
};

const char* kindName(Kind k) {
  switch (k) {
    case Kind::Router:
      return "router";
    case Kind::Network:
      return "network";
    case Kind::Subnet:
      return "subnet";
  }
  return "object";
}

sdk::Status lookUp(const sdk::Call& call, NeutronClient& neutron, const Wanted& w) {
  switch (w.kind) {
    case Kind::Router:
      return neutron.getRouter(call, w.id).status();
    case Kind::Network:
      return neutron.getNetwork(call, w.id).status();
    case Kind::Subnet:
      return neutron.getSubnet(call, w.id).status();
  }
  return {};
}

void addLoadBalancerIds(std::vector<Wanted>& out, const std::string& section,
                        const std::string& subnet_id, const std::string& member_subnet_id,
                        const std::string& network_id, const std::string& floating_network_id,
                        const std::string& floating_subnet_id) {
  auto add = [&](const char* key, Kind kind, const std::string& id) {
    if (!id.empty()) {
      out.push_back({section + " " + key, kind, id});
    }
  };
  add("subnet-id", Kind::Subnet, subnet_id);
  add("member-subnet-id", Kind::Subnet, member_subnet_id);
  add("network-id", Kind::Network, network_id);
  add("floating-network-id", Kind::Network, floating_network_id);
  add("floating-subnet-id", Kind::Subnet, floating_subnet_id);
}

}  // namespace

sdk::Status checkCloudObjects(const sdk::Call& call, const Config& config, NeutronClient& neutron) {
  std::vector<Wanted> wanted;
  if (!config.route.router_id.empty()) {
    wanted.push_back({"[Route] router-id", Kind::Router, config.route.router_id});
  }
  if (config.load_balancer.enabled) {
    const LoadBalancerConfig& lb = config.load_balancer;
    addLoadBalancerIds(wanted, "[LoadBalancer]", lb.subnet_id, lb.member_subnet_id, lb.network_id,
                       lb.floating_network_id, lb.floating_subnet_id);
    for (const auto& [name, c] : lb.classes) {
      addLoadBalancerIds(wanted, "[LoadBalancerClass \"" + name + "\"]", c.subnet_id,
                         c.member_subnet_id, c.network_id, c.floating_network_id,
                         c.floating_subnet_id);
    }
  }
  std::string problems;
  for (const Wanted& w : wanted) {
    sdk::Status st = lookUp(call, neutron, w);
    if (st.ok()) {
      continue;
    }
    if (st.code() == CCM_STATUS_NOT_FOUND) {
      problems += (problems.empty() ? "" : "; ") + w.option + " = \"" + w.id + "\": no " +
                  kindName(w.kind) + " with this ID is visible to the project";
      continue;
    }
    call.warning("Could not check an ID of the configuration",
                 {{"option", w.option}, {"id", w.id}, {"error", st.message()}});
  }
  if (!problems.empty()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "cloud config: " + problems);
  }
  return {};
}

}  // namespace ccm::openstack
