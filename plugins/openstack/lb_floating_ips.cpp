// Floating IPs of Service load balancers: network choice, attach, adopt, create, release,
// delete.
#include "plugins/openstack/lb_floating_ips.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <optional>
#include <regex>

#include "plugins/openstack/config.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

sdk::Result<std::vector<FloatingIp>> floatingIpsOnPort(NeutronClient& neutron, const sdk::Call& call,
                                                    const std::string& port_id) {
  return neutron.listFloatingIps(call, "port_id=" + urlEncode(port_id));
}

// OCCM's floating-subnet name patterns: '!' negates, '~' is a regex, else a shell glob; the
// whole name must match.
bool subnetNameMatches(const std::string& pattern, const std::string& name) {
  std::string_view p = pattern;
  bool negate = false;
  if (!p.empty() && p.front() == '!') {
    negate = true;
    p.remove_prefix(1);
  }
  bool match = false;
  if (!p.empty() && p.front() == '~') {
    try {
      match = std::regex_match(name, std::regex(std::string(p.substr(1))));
    } catch (const std::regex_error&) {
      match = false;
    }
  } else {
    match = fnmatch(std::string(p).c_str(), name.c_str(), 0) == 0;
  }
  return match != negate;
}

// Whether an external network can hand out IPv4 floating IPs: it has an IPv4 subnet, or one
// we cannot see (not shared with us), which may.
sdk::Result<bool> hasIpv4Subnet(const LbRun& run, const Network& n) {
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<Subnet> subs,
                          run.neutron().listSubnets(run.call(), "network_id=" + urlEncode(n.id)));
  bool usable = false;
  for (const std::string& id : n.subnets) {
    auto it = std::find_if(subs.begin(), subs.end(), [&](const Subnet& sn) { return sn.id == id; });
    if (it == subs.end() || it->ip_version == 4) {
      usable = true;
    }
  }
  return usable;
}

// Deletes a floating IP this Service created (unless keep-floatingip), else detaches it.
sdk::Status releaseFloatingIp(const LbRun& run, const FloatingIp& fip) {
  const LbSettings& s = run.settings();
  NeutronClient& neu = run.neutron();
  if (fip.description == s.fip_description && !s.keep_floating_ip) {
    run.call().info("Deleting floating IP", {{"fip", fip.floating_ip_address}});
    return neu.deleteFloatingIp(run.call(), fip.id);
  }
  run.call().info("Detaching floating IP", {{"fip", fip.floating_ip_address}});
  sdk::Status st = neu.setFloatingIpPort(run.call(), fip.id, "");
  return st.code() == CCM_STATUS_NOT_FOUND ? sdk::Status() : st;
}

// The subnets of `network` to try a new floating IP in, in order; empty lets Neutron pick.
sdk::Result<std::vector<std::string>> floatingSubnets(const LbRun& run, const std::string& network,
                                                      const sdk::Service& svc) {
  const LbSettings& s = run.settings();
  NeutronClient& neu = run.neutron();
  std::vector<std::string> subnets;
  if (!s.floating_subnet_id.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(Subnet subnet, neu.getSubnet(run.call(), s.floating_subnet_id));
    if (subnet.network_id != network) {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "floating subnet " + s.floating_subnet_id +
                                               " is not in floating network " + network);
    }
    subnets.push_back(subnet.id);
  } else if ((!s.floating_subnet.empty() || !s.floating_subnet_tags.empty()) &&
             svc.load_balancer_ip.empty()) {
    std::string query = "network_id=" + urlEncode(network);
    auto tags = parseTagFilter(s.floating_subnet_tags);
    if (tags.ok() && !tags->param.empty()) {
      query += "&" + tags->param + "=" + urlEncode(tags->tags);
    }
    CCM_SDK_ASSIGN_OR_RETURN(std::vector<Subnet> found, neu.listSubnets(run.call(), query));
    for (const Subnet& sn : found) {
      if (s.floating_subnet.empty() || subnetNameMatches(s.floating_subnet, sn.name)) {
        subnets.push_back(sn.id);
      }
    }
    if (subnets.empty()) {
      return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                    "no subnet of floating network " + network + " matches floating-subnet \"" +
                        s.floating_subnet + "\" / floating-subnet-tags \"" +
                        s.floating_subnet_tags + "\"");
    }
  }
  return subnets;
}

// A new floating IP on the VIP port, trying the candidate subnets in turn; its address.
sdk::Result<std::string> createFloatingIp(const LbRun& run, const OctaviaLoadBalancer& lb,
                                          const sdk::Service& svc) {
  CCM_SDK_ASSIGN_OR_RETURN(std::string network, floatingNetwork(run));
  Json fip = Json::object();
  fip.set("floating_network_id", network);
  fip.set("port_id", lb.vip_port_id);
  fip.set("description", run.settings().fip_description);
  if (!svc.load_balancer_ip.empty()) {
    fip.set("floating_ip_address", svc.load_balancer_ip);
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<std::string> subnets, floatingSubnets(run, network, svc));
  if (subnets.empty()) {
    subnets.push_back("");
  }
  sdk::Status last;
  for (const std::string& subnet : subnets) {
    Json body = fip;
    if (!subnet.empty()) {
      body.set("subnet_id", subnet);
    }
    auto created =
        run.neutron().createFloatingIp(run.call(), Json::object().set("floatingip", body));
    if (created.ok()) {
      run.call().info("Created floating IP",
                      {{"fip", created->floating_ip_address}, {"lb", lb.id}});
      return created->floating_ip_address;
    }
    last = created.status();
  }
  return last.withPrefix("creating a floating IP for load balancer " + lb.id);
}

// Attaches a floating IP that exists already: the one loadBalancerIP names, else one this
// Service made earlier and that lost its port (its load balancer was re-created, or
// keep-floatingip kept it), taken back rather than leaked. Its address; nullopt when there is
// none to adopt.
sdk::Result<std::optional<std::string>> adoptFloatingIp(const LbRun& run,
                                                     const OctaviaLoadBalancer& lb,
                                                     const std::string& wanted_ip) {
  NeutronClient& neu = run.neutron();
  if (!wanted_ip.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(
        std::vector<FloatingIp> existing,
        neu.listFloatingIps(run.call(), "floating_ip_address=" + urlEncode(wanted_ip)));
    if (existing.empty()) {
      return std::optional<std::string>();
    }
    const FloatingIp& f = existing.front();
    if (!f.port_id.empty() && f.port_id != lb.vip_port_id) {
      return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "floating IP " + wanted_ip +
                                                  " (loadBalancerIP) is attached to port " +
                                                  f.port_id + " already");
    }
    if (f.port_id.empty()) {
      CCM_SDK_RETURN_IF_ERROR(neu.setFloatingIpPort(run.call(), f.id, lb.vip_port_id));
    }
    return std::optional<std::string>(wanted_ip);
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<FloatingIp> mine,
                          unattachedFloatingIps(neu, run.call(), run.settings()));
  if (mine.empty()) {
    return std::optional<std::string>();
  }
  const FloatingIp& f = mine.front();
  CCM_SDK_RETURN_IF_ERROR(neu.setFloatingIpPort(run.call(), f.id, lb.vip_port_id));
  run.call().info("Re-attached floating IP", {{"fip", f.floating_ip_address}, {"lb", lb.id}});
  return std::optional<std::string>(f.floating_ip_address);
}

}  // namespace

sdk::Result<std::vector<FloatingIp>> unattachedFloatingIps(NeutronClient& neutron,
                                                        const sdk::Call& call,
                                                        const LbSettings& s) {
  CCM_SDK_ASSIGN_OR_RETURN(
      std::vector<FloatingIp> fips,
      neutron.listFloatingIps(call, "description=" + urlEncode(s.fip_description)));
  fips.erase(std::remove_if(fips.begin(), fips.end(),
                            [&](const FloatingIp& f) {
                              return f.description != s.fip_description || !f.port_id.empty();
                            }),
             fips.end());
  return fips;
}

sdk::Result<std::string> currentAddress(NeutronClient& neutron, const sdk::Call& call,
                                     const OctaviaLoadBalancer& lb) {
  if (lb.vip_port_id.empty()) {
    return lb.vip_address;
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<FloatingIp> fips,
                          floatingIpsOnPort(neutron, call, lb.vip_port_id));
  return fips.empty() ? lb.vip_address : fips.front().floating_ip_address;
}

sdk::Result<std::string> floatingNetwork(const LbRun& run) {
  const LbSettings& s = run.settings();
  if (!s.floating_network_id.empty()) {
    return s.floating_network_id;
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<Network> nets,
                          run.neutron().listNetworks(run.call(), "router%3Aexternal=true"));
  std::vector<std::string> candidates;
  for (const Network& n : nets) {
    if (!n.external || n.subnets.empty()) {
      continue;
    }
    CCM_SDK_ASSIGN_OR_RETURN(bool usable, hasIpv4Subnet(run, n));
    if (usable) {
      candidates.push_back(n.id);
    }
  }
  if (candidates.empty()) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "no external network with an IPv4 subnet was found for the floating IP: set "
                  "[LoadBalancer] floating-network-id or the annotation " +
                      std::string(kAnnotationPrefix) +
                      "floating-network-id, or make the Service internal");
  }
  if (candidates.size() > 1) {
    std::string list;
    for (const auto& c : candidates) {
      list += (list.empty() ? "" : ", ") + c;
    }
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "several external networks could hold the floating IP (" + list +
                      "): set [LoadBalancer] floating-network-id or the annotation " +
                      std::string(kAnnotationPrefix) + "floating-network-id");
  }
  return candidates.front();
}

sdk::Result<std::string> ensureFloatingIp(const LbRun& run, const OctaviaLoadBalancer& lb,
                                          bool owner, const sdk::Service& svc) {
  const LbSettings& s = run.settings();
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<FloatingIp> on_port,
                          floatingIpsOnPort(run.neutron(), run.call(), lb.vip_port_id));
  std::optional<FloatingIp> attached;
  if (!on_port.empty()) {
    attached = on_port.front();
  }
  if (s.internal || s.ip_family == 6) {
    if (attached && owner) {
      CCM_SDK_RETURN_IF_ERROR(releaseFloatingIp(run, *attached));
    }
    return lb.vip_address;
  }
  const std::string& wanted_ip = svc.load_balancer_ip;
  if (attached) {
    if (wanted_ip.empty() || attached->floating_ip_address == wanted_ip) {
      return attached->floating_ip_address;
    }
    if (!owner) {
      return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "only the Service that created load balancer " +
                                                  lb.id + " can change its floating IP");
    }
    CCM_SDK_RETURN_IF_ERROR(releaseFloatingIp(run, *attached));
  }
  if (!owner) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "load balancer " + lb.id +
                      " has no floating IP and only the Service that "
                      "created it can add one (or make this Service internal)");
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::optional<std::string> adopted, adoptFloatingIp(run, lb, wanted_ip));
  if (adopted) {
    return *adopted;
  }
  return createFloatingIp(run, lb, svc);
}

sdk::Status deleteVipFloatingIps(const LbRun& run, const OctaviaLoadBalancer& lb) {
  const LbSettings& s = run.settings();
  if (lb.vip_port_id.empty()) {
    return {};
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<FloatingIp> on_port,
                          floatingIpsOnPort(run.neutron(), run.call(), lb.vip_port_id));
  for (const FloatingIp& f : on_port) {
    if (f.description == s.fip_description && !s.keep_floating_ip) {
      CCM_SDK_RETURN_IF_ERROR(run.neutron().deleteFloatingIp(run.call(), f.id));
      run.call().info("Deleted floating IP", {{"fip", f.floating_ip_address}});
    }
  }
  return {};
}

sdk::Status deleteOrphanFloatingIps(const LbRun& run) {
  if (run.settings().keep_floating_ip) {
    return {};
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<FloatingIp> fips,
                          unattachedFloatingIps(run.neutron(), run.call(), run.settings()));
  for (const FloatingIp& f : fips) {
    run.call().info("Deleting floating IP left behind", {{"fip", f.floating_ip_address}});
    CCM_SDK_RETURN_IF_ERROR(run.neutron().deleteFloatingIp(run.call(), f.id));
  }
  return {};
}

}  // namespace ccm::openstack
