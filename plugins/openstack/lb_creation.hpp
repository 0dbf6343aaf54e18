// Creating a Service's load balancer in one request: its name, tags, flavor and availability
// zone, where its VIP goes (detected from the first node's subnet when not configured) and,
// unless the provider needs serial API calls, every listener, pool, member and health monitor
// with it. Fails before creating anything when the VIP subnet or the floating network for the
// public address cannot be found, so that no half-made load balancer is left behind.
#pragma once

#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

sdk::Result<OctaviaLoadBalancer> createLoadBalancer(const LbRun& run, const sdk::Service& svc,
                                                    const std::vector<sdk::Node>& nodes);

}  // namespace ccm::openstack
