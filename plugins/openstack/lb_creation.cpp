// The create request of a Service's load balancer and the checks that come before it.
#include "plugins/openstack/lb_creation.hpp"

#include <string>

#include "plugins/openstack/instances.hpp"
#include "plugins/openstack/lb_desired.hpp"
#include "plugins/openstack/lb_floating_ips.hpp"
#include "plugins/openstack/lb_health_monitors.hpp"
#include "plugins/openstack/lb_listeners.hpp"
#include "plugins/openstack/lb_members.hpp"
#include "plugins/openstack/lb_pools.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

// Name, description, provider, tags, flavor and availability zone (the last two only where
// Octavia supports them; a warning otherwise).
Json loadBalancerBody(const LbRun& run) {
  const LbSettings& s = run.settings();
  const OctaviaFeatures& f = run.features();
  Json lb = Json::object();
  lb.set("name", s.lb_name);
  lb.set("description", s.description);
  lb.set("provider", run.config().lb_provider);
  if (f.tags()) {
    lb.set("tags", Json::stringArray({s.lb_name}));
  }
  if (!s.additional_vip_subnet_id.empty()) {
    lb.set("additional_vips",
           Json::array().push(Json::object().set("subnet_id", s.additional_vip_subnet_id)));
  }
  if (!s.flavor_id.empty()) {
    if (f.flavors()) {
      lb.set("flavor_id", s.flavor_id);
    } else {
      run.call().warning("Octavia flavors need API 2.6 and a provider other than ovn; ignored");
    }
  }
  if (!s.availability_zone.empty()) {
    if (f.availabilityZones()) {
      lb.set("availability_zone", s.availability_zone);
    } else {
      run.call().warning("Octavia availability zones need API 2.14 and not ovn; ignored");
    }
  }
  return lb;
}

// The subnet of the first node's address, for a VIP nothing else places.
sdk::Result<std::string> detectVipSubnet(const LbRun& run, const std::vector<sdk::Node>& nodes) {
  if (nodes.empty() || nodes.front().provider_id.empty()) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "cannot find a VIP subnet: set [LoadBalancer] subnet-id or network-id "
                  "(no node with a providerID to detect it from)");
  }
  const sdk::Node& node = nodes.front();
  std::string addr = memberAddress(node, run.settings().ip_family);
  auto pid = parseProviderId(node.provider_id);
  if (!pid.ok()) {
    return pid.status();
  }
  CCM_SDK_ASSIGN_OR_RETURN(
      std::vector<Port> ports,
      run.neutron().listPorts(run.call(), "device_id=" + urlEncode(pid->server_id)));
  std::string subnet;
  for (const Port& p : ports) {
    for (const FixedIp& ip : p.fixed_ips) {
      if (ip.ip_address == addr && subnet.empty()) {
        subnet = ip.subnet_id;
      }
    }
  }
  if (subnet.empty()) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "cannot find the subnet of node " + node.name + " (" +
                                                addr + "); set [LoadBalancer] subnet-id");
  }
  return subnet;
}

// Sets where the VIP goes: the configured port, else the subnet (configured or detected)
// and network, with loadBalancerIP as the address of a VIP that is the public address. The
// VIP subnet (empty when not known).
sdk::Result<std::string> placeVip(const LbRun& run, const sdk::Service& svc,
                                  const std::vector<sdk::Node>& nodes, Json& lb) {
  const LbSettings& s = run.settings();
  if (!s.vip_port_id.empty()) {
    lb.set("vip_port_id", s.vip_port_id);
    return s.vip_subnet_id;
  }
  std::string vip_subnet = s.vip_subnet_id;
  if (vip_subnet.empty() && s.vip_network_id.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(vip_subnet, detectVipSubnet(run, nodes));
  }
  if (!vip_subnet.empty()) {
    lb.set("vip_subnet_id", vip_subnet);
  }
  if (!s.vip_network_id.empty()) {
    lb.set("vip_network_id", s.vip_network_id);
  }
  if (!svc.load_balancer_ip.empty() && (s.internal || s.ip_family == 6)) {
    lb.set("vip_address", svc.load_balancer_ip);
  }
  return vip_subnet;
}

// Every listener with its pool, members and health monitor, for a fully populated create.
Json populatedListeners(const LbRun& run, const sdk::Service& svc,
                        const std::vector<sdk::Node>& nodes, const std::string& member_subnet) {
  Json listeners = Json::array();
  for (const DesiredPort& d : desiredPorts(run, svc, nodes, member_subnet)) {
    Json l = listenerJson(run, d);
    Json pool = poolJson(run, d, svc.session_affinity);
    Json members = Json::array();
    for (const DesiredMember& m : d.members) {
      members.push(memberJson(m));
    }
    pool.set("members", std::move(members));
    if (d.monitor) {
      pool.set("healthmonitor", monitorJson(run, *d.monitor, false));
    }
    l.set("default_pool", std::move(pool));
    listeners.push(std::move(l));
  }
  return listeners;
}

}  // namespace

sdk::Result<OctaviaLoadBalancer> createLoadBalancer(const LbRun& run, const sdk::Service& svc,
                                                    const std::vector<sdk::Node>& nodes) {
  const LbSettings& s = run.settings();
  Json lb = loadBalancerBody(run);
  CCM_SDK_ASSIGN_OR_RETURN(std::string vip_subnet, placeVip(run, svc, nodes, lb));
  bool wants_fip = !s.internal && s.ip_family == 4;
  if (wants_fip && svc.load_balancer_ip.empty()) {
    // Fail early when no public network can be found (nothing is created yet).
    auto net = floatingNetwork(run);
    if (!net.ok()) {
      return net.status();
    }
  }
  if (!run.config().provider_requires_serial_api_calls) {
    lb.set("listeners", populatedListeners(run, svc, nodes, memberSubnet(s, vip_subnet)));
  }
  Json body = Json::object().set("loadbalancer", std::move(lb));
  auto created = run.octavia().createLoadBalancer(run.call(), body);
  if (!created.ok()) {
    return busyAware(created.status(), "creating load balancer " + s.lb_name);
  }
  run.call().info(
      "Created load balancer",
      {{"lb", created->id}, {"name", s.lb_name}, {"service", svc.namespace_ + "/" + svc.name}});
  return created;
}

}  // namespace ccm::openstack
