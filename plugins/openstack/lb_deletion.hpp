// Deleting a Service's load balancer: the whole load balancer (its floating IP and, without
// cascade delete, its children one by one) when the Service owns it alone, else only what the
// Service added to a shared or adopted one (its listeners and its tag).
#pragma once

#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

// Deletes the Service's part of `lb` (found for it; `owner` when the Service made it), first
// waiting out a provisioning Octavia is busy with.
sdk::Status deleteServiceLoadBalancer(const LbRun& run, const OctaviaLoadBalancer& lb, bool owner);

}  // namespace ccm::openstack
