// Dual-stack LoadBalancer Services (spec.ipFamilies lists IPv4 and IPv6): the IPv4 load
// balancer is the Service's usual one (floating IP and all); the IPv6 VIP is published as it
// is, as for IPv6 Services. Where Octavia has additional VIPs (API 2.26) the IPv6 VIP is an
// additional VIP of that load balancer, asked for when it is created; elsewhere (older
// Octavia, or a load balancer made before the Service became dual-stack: additional VIPs
// cannot be added later) a second load balancer, named "<name>_ipv6", serves IPv6 with IPv6
// members. The IPv6 VIP subnet is the IPv6 subnet of the VIP network ([LoadBalancer]
// network-id or the network of subnet-id), else the subnet of the first node's IPv6 address.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/lb_settings.hpp"

namespace ccm::openstack {

enum class DualStackMode {
  Off,                 // one family: the Service's first
  AdditionalVip,       // one load balancer with an IPv6 additional VIP
  SecondLoadBalancer,  // a second load balancer for IPv6
};

struct DualStackPlan {
  DualStackMode mode = DualStackMode::Off;
  std::string ipv6_subnet_id;
  bool ipv6_first = false;  // the Service lists IPv6 first: its ingress comes first
};

// spec.ipFamilyPolicy from a Service's JSON; empty when absent or unreadable.
std::string ipFamilyPolicyOf(std::string_view service_json);

// Whether the Service asks for both families (spec.ipFamilies, and spec.ipFamilyPolicy from
// its object JSON).
bool wantsDualStack(const sdk::Service& svc);

// The name of the IPv6 load balancer of a Service whose load balancer is `lb_name`.
std::string ipv6LoadBalancerName(const std::string& lb_name);

// What to build for the Service. `existing` is its (IPv4) load balancer when there is one.
// RequireDualStack without an IPv6 subnet (or with settings that pin one load balancer:
// load-balancer-id, port-id) is INVALID_ARGUMENT before anything is made; PreferDualStack
// then gets IPv4 only, with a log line.
sdk::Result<DualStackPlan> planDualStack(const LbRun& run, const sdk::Service& svc,
                                         const std::vector<sdk::Node>& nodes,
                                         const std::optional<OctaviaLoadBalancer>& existing);

// The settings of the IPv6 load balancer (SecondLoadBalancer) from the Service's settings.
LbSettings ipv6Settings(const LbSettings& primary, const std::string& ipv6_subnet_id);

// The Service as the IPv6 load balancer sees it: loadBalancerIP only when it is IPv6.
sdk::Service ipv6Service(const sdk::Service& svc);

// The load balancer's IPv6 additional VIP; empty when it has none.
std::string ipv6AdditionalVip(const OctaviaLoadBalancer& lb);

// Adds the IPv6 address to a status built for the IPv4 one (nothing when the status
// publishes a hostname), in the Service's family order.
void addIpv6Ingress(sdk::LoadBalancerStatus& status, const std::string& ipv6_address,
                    bool ipv6_first);

}  // namespace ccm::openstack
