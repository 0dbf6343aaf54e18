// The desired listeners, pools, members and monitors of a Service's load balancer.
#include "plugins/openstack/lb_desired.hpp"

#include "plugins/openstack/ip_address.hpp"
#include "plugins/openstack/lb_provider_limits.hpp"
#include "plugins/openstack/lb_tls.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr size_t kMaxNameBytes = 255;

// OCCM's name for a child of the load balancer: "<kind>_<port index>_<lb name>".
std::string childName(const char* kind, const std::string& index, const LbSettings& s) {
  return truncateUtf8(std::string(kind) + "_" + index + "_" + s.lb_name, kMaxNameBytes);
}

std::optional<DesiredMonitor> desiredMonitor(const LbRun& run, const sdk::Service& svc,
                                             const DesiredPort& d, const std::string& index) {
  const LbSettings& s = run.settings();
  if (!s.health_monitor) {
    return std::nullopt;
  }
  const OctaviaFeatures& f = run.features();
  bool local = svc.external_traffic_policy == "Local" && svc.health_check_node_port > 0;
  DesiredMonitor m;
  m.name = childName("monitor", index, s);
  bool udp = d.k8s_protocol == "UDP";
  m.http = local && !f.ovn && (!udp || f.httpMonitorsOnUdp());
  m.type = m.http ? "HTTP" : (udp ? "UDP-CONNECT" : d.k8s_protocol);
  if (!providerHasMonitorType(f, m.type)) {
    run.call().warning(
        "Octavia's provider has no health monitor of this type; the port "
        "gets none",
        {{"port", std::to_string(d.port)}, {"type", m.type}});
    return std::nullopt;
  }
  return m;
}

std::vector<DesiredMember> desiredMembers(const LbRun& run, const sdk::Service& svc,
                                          const std::vector<sdk::Node>& nodes,
                                          const std::string& member_subnet, const DesiredPort& d) {
  const LbSettings& s = run.settings();
  std::vector<DesiredMember> out;
  for (const sdk::Node& node : nodes) {
    if (!matchesSelector(node, s.node_selector)) {
      continue;
    }
    std::string addr = memberAddress(node, s.ip_family);
    if (addr.empty()) {
      if (d.index == 0) {
        run.call().warning("Node has no address of the Service's IP family; not a member",
                           {{"node", node.name}});
      }
      continue;
    }
    DesiredMember m;
    m.name = node.name;
    m.address = addr;
    m.port = d.node_port;
    m.subnet_id = member_subnet;
    if (d.monitor && d.monitor->http) {
      m.monitor_port = svc.health_check_node_port;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

std::vector<DesiredPort> desiredPorts(const LbRun& run, const sdk::Service& svc,
                                      const std::vector<sdk::Node>& nodes,
                                      const std::string& member_subnet) {
  const LbSettings& s = run.settings();
  std::vector<DesiredPort> out;
  for (size_t i = 0; i < svc.ports.size(); ++i) {
    const sdk::ServicePort& p = svc.ports[i];
    DesiredPort d;
    d.index = i;
    d.k8s_protocol = p.protocol.empty() ? "TCP" : p.protocol;
    d.port = p.port;
    d.node_port = p.node_port;
    // OCCM's precedence: TLS, then x-forwarded-for, then the port's own protocol; the pool
    // behind a TLS listener speaks HTTP unless proxy-protocol asks for PROXY.
    d.listener_protocol =
        tlsTerminated(s) ? kTerminatedHttps : (s.x_forwarded_for ? "HTTP" : d.k8s_protocol);
    d.pool_protocol = !s.proxy_protocol.empty() ? s.proxy_protocol
                      : tlsTerminated(s)        ? "HTTP"
                                                : d.listener_protocol;
    std::string index = std::to_string(i);
    d.listener_name = childName("listener", index, s);
    d.pool_name = childName("pool", index, s);
    d.monitor = desiredMonitor(run, svc, d, index);
    if (p.node_port > 0) {
      d.members = desiredMembers(run, svc, nodes, member_subnet, d);
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::string memberAddress(const sdk::Node& node, int family) {
  for (const char* type : {"InternalIP", "ExternalIP"}) {
    for (const sdk::NodeAddress& a : node.addresses) {
      if (a.type == type && ipFamilyOf(a.address) == family) {
        return a.address;
      }
    }
  }
  return {};
}

std::string memberSubnet(const LbSettings& s, const std::string& fallback) {
  return !s.member_subnet_id.empty() ? s.member_subnet_id : fallback;
}

}  // namespace ccm::openstack
