// The floating IPs of Service load balancers: picking the external network, attaching,
// adopting (loadBalancerIP, or one this Service left behind), creating and releasing the
// floating IP on a load balancer's VIP port, and finding and deleting the ones this Service
// created (they carry its marker as description).
#pragma once

#include <string>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/lb_settings.hpp"
#include "plugins/openstack/neutron_client.hpp"
#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

// The floating IPs this Service created that are attached to nothing (their load balancer
// was deleted or re-created, or keep-floatingip kept them).
sdk::Result<std::vector<FloatingIp>> unattachedFloatingIps(NeutronClient& neutron,
                                                        const sdk::Call& call,
                                                        const LbSettings& s);

// The load balancer's public address as it stands: the floating IP on its VIP port, else the
// VIP.
sdk::Result<std::string> currentAddress(NeutronClient& neutron, const sdk::Call& call,
                                     const OctaviaLoadBalancer& lb);

// The external network for a new floating IP: the configured one, else the only external
// network with an IPv4 subnet.
sdk::Result<std::string> floatingNetwork(const LbRun& run);

// The public address of the load balancer: reuses, adopts, creates or releases its floating
// IP as the settings want; the VIP for internal and IPv6 load balancers.
sdk::Result<std::string> ensureFloatingIp(const LbRun& run, const OctaviaLoadBalancer& lb,
                                          bool owner, const sdk::Service& svc);

// Deletes the floating IPs on the load balancer's VIP port that this Service created, unless
// keep-floatingip.
sdk::Status deleteVipFloatingIps(const LbRun& run, const OctaviaLoadBalancer& lb);

// Deletes the floating IPs this Service created that are attached to nothing, unless
// keep-floatingip.
sdk::Status deleteOrphanFloatingIps(const LbRun& run);

}  // namespace ccm::openstack
