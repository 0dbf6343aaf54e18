// OctaviaFeatures: what the Octavia deployment supports (its API version and whether the
// provider is ovn), as the load-balancer code asks it ("can listeners carry timeouts here?").
#pragma once

#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

struct OctaviaFeatures {
  OctaviaVersion version;
  bool ovn = false;

  bool tags() const { return version.atLeast(2, 5); }
  bool timeouts() const { return version.atLeast(2, 1) && !ovn; }
  bool flavors() const { return version.atLeast(2, 6) && !ovn; }
  bool allowedCidrs() const { return version.atLeast(2, 12) && !ovn; }
  bool availabilityZones() const { return version.atLeast(2, 14) && !ovn; }
  bool httpMonitorsOnUdp() const { return version.atLeast(2, 16) && !ovn; }
  // VIPs on more subnets of the VIP network (dual-stack with one load balancer); the ovn
  // driver has none (Octavia answers 501), so dual-stack gets a second load balancer there.
  bool additionalVips() const { return version.atLeast(2, 26) && !ovn; }
};

}  // namespace ccm::openstack
