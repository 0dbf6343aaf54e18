// Dual-stack planning: which IPv6 subnet, one load balancer or two, and the IPv6 ingress.
#include "plugins/openstack/lb_dual_stack.hpp"

#include <algorithm>

#include "plugins/openstack/instances.hpp"
#include "plugins/openstack/ip_address.hpp"
#include "plugins/openstack/json.hpp"
#include "plugins/openstack/lb_desired.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr size_t kMaxNameBytes = 255;
constexpr const char* kIpv6Suffix = "_ipv6";

// The first IPv6 subnet of a network (by ID, so the choice does not change between calls);
// empty when it has none.
sdk::Result<std::string> ipv6SubnetOfNetwork(const LbRun& run, const std::string& network_id) {
  CCM_SDK_ASSIGN_OR_RETURN(
      std::vector<Subnet> subnets,
      run.neutron().listSubnets(run.call(), "network_id=" + urlEncode(network_id) +
                                                "&ip_version=6"));
  std::vector<std::string> ids;
  for (const Subnet& s : subnets) {
    if (s.ip_version == 6 && s.network_id == network_id) {
      ids.push_back(s.id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids.empty() ? std::string() : ids.front();
}

// The subnet of the first node's IPv6 address (the node with a providerID); empty when no
// node has one.
sdk::Result<std::string> ipv6SubnetOfNodes(const LbRun& run, const std::vector<sdk::Node>& nodes) {
  for (const sdk::Node& node : nodes) {
    std::string addr = memberAddress(node, 6);
    if (node.provider_id.empty() || addr.empty()) {
      continue;
    }
    auto pid = parseProviderId(node.provider_id);
    if (!pid.ok()) {
      continue;
    }
    CCM_SDK_ASSIGN_OR_RETURN(
        std::vector<Port> ports,
        run.neutron().listPorts(run.call(), "device_id=" + urlEncode(pid->server_id)));
    for (const Port& p : ports) {
      for (const FixedIp& ip : p.fixed_ips) {
        if (ip.ip_address == addr) {
          return ip.subnet_id;
        }
      }
    }
    return std::string();
  }
  return std::string();
}

// Where the IPv6 VIP goes: the IPv6 subnet of the configured VIP network (or of the
// configured subnet's network), else the subnet of the nodes' IPv6 addresses.
sdk::Result<std::string> ipv6VipSubnet(const LbRun& run, const std::vector<sdk::Node>& nodes) {
  const LbSettings& s = run.settings();
  std::string network = s.vip_network_id;
  if (network.empty() && !s.vip_subnet_id.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(std::vector<Subnet> subnets,
                            run.neutron().listSubnets(run.call(), "id=" + urlEncode(s.vip_subnet_id)));
    for (const Subnet& sub : subnets) {
      if (sub.id == s.vip_subnet_id) {
        network = sub.network_id;
      }
    }
  }
  if (!network.empty()) {
    return ipv6SubnetOfNetwork(run, network);
  }
  return ipv6SubnetOfNodes(run, nodes);
}

}  // namespace

std::string ipFamilyPolicyOf(std::string_view service_json) {
  if (service_json.empty()) {
    return {};
  }
  auto doc = parseJson(service_json);
  if (!doc.ok() || !doc->IsObject()) {
    return {};
  }
  const JsonValue* spec = jsonObject(*doc, "spec");
  return spec == nullptr ? std::string() : jsonString(*spec, "ipFamilyPolicy");
}

bool wantsDualStack(const sdk::Service& svc) {
  bool v4 = std::find(svc.ip_families.begin(), svc.ip_families.end(), "IPv4") !=
            svc.ip_families.end();
  bool v6 = std::find(svc.ip_families.begin(), svc.ip_families.end(), "IPv6") !=
            svc.ip_families.end();
  return v4 && v6 && ipFamilyPolicyOf(svc.object_json) != "SingleStack";
}

std::string ipv6LoadBalancerName(const std::string& lb_name) {
  return truncateUtf8(lb_name, kMaxNameBytes - std::string_view(kIpv6Suffix).size()) +
         kIpv6Suffix;
}

sdk::Result<DualStackPlan> planDualStack(const LbRun& run, const sdk::Service& svc,
                                         const std::vector<sdk::Node>& nodes,
                                         const std::optional<OctaviaLoadBalancer>& existing) {
  DualStackPlan plan;
  if (!wantsDualStack(svc)) {
    return plan;
  }
  const LbSettings& s = run.settings();
  bool required = ipFamilyPolicyOf(svc.object_json) == "RequireDualStack";
  std::string service = svc.namespace_ + "/" + svc.name;
  auto single = [&](const std::string& why) -> sdk::Result<DualStackPlan> {
    if (required) {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                    "ipFamilyPolicy RequireDualStack cannot be met: " + why);
    }
    run.call().info("Dual-stack Service gets an IPv4 load balancer only (PreferDualStack)",
                    {{"service", service}, {"reason", why}});
    return DualStackPlan();
  };
  if (!s.lb_id.empty()) {
    return single(std::string("annotation ") + kAnnotationPrefix +
                  "load-balancer-id names one load balancer of one family");
  }
  if (!s.vip_port_id.empty()) {
    return single(std::string("annotation ") + kAnnotationPrefix +
                  "port-id places the VIP on one port of one family");
  }
  CCM_SDK_ASSIGN_OR_RETURN(plan.ipv6_subnet_id, ipv6VipSubnet(run, nodes));
  if (plan.ipv6_subnet_id.empty()) {
    return single(
        "no IPv6 subnet found for the VIP (none on the VIP network, and no node with an IPv6 "
        "address on one)");
  }
  plan.ipv6_first = !svc.ip_families.empty() && svc.ip_families.front() == "IPv6";
  if (existing) {
    plan.mode = ipv6AdditionalVip(*existing).empty() ? DualStackMode::SecondLoadBalancer
                                                     : DualStackMode::AdditionalVip;
  } else {
    plan.mode = run.features().additionalVips() ? DualStackMode::AdditionalVip
                                                : DualStackMode::SecondLoadBalancer;
  }
  return plan;
}

LbSettings ipv6Settings(const LbSettings& primary, const std::string& ipv6_subnet_id) {
  LbSettings s = primary;
  s.lb_name = ipv6LoadBalancerName(primary.lb_name);
  s.legacy_name = s.lb_name;
  s.lb_id.clear();
  s.ip_family = 6;
  s.vip_port_id.clear();
  s.vip_network_id.clear();
  s.vip_subnet_id = ipv6_subnet_id;
  s.member_subnet_id.clear();  // a configured member subnet is an IPv4 one
  s.additional_vip_subnet_id.clear();
  return s;
}

sdk::Service ipv6Service(const sdk::Service& svc) {
  sdk::Service out = svc;
  if (ipFamilyOf(out.load_balancer_ip) != 6) {
    out.load_balancer_ip.clear();
  }
  return out;
}

std::string ipv6AdditionalVip(const OctaviaLoadBalancer& lb) {
  for (const OctaviaAdditionalVip& v : lb.additional_vips) {
    if (ipFamilyOf(v.ip_address) == 6) {
      return v.ip_address;
    }
  }
  return {};
}

void addIpv6Ingress(sdk::LoadBalancerStatus& status, const std::string& ipv6_address,
                    bool ipv6_first) {
  if (ipv6_address.empty() || status.ingress.empty() || status.ingress.front().ip.empty()) {
    return;
  }
  sdk::Ingress v6;
  v6.ip = ipv6_address;
  v6.ip_mode = status.ingress.front().ip_mode;
  if (ipv6_first) {
    status.ingress.insert(status.ingress.begin(), std::move(v6));
  } else {
    status.ingress.push_back(std::move(v6));
  }
}

}  // namespace ccm::openstack
