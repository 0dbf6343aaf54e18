// The health monitors of a load balancer's pools: their request bodies, and creating,
// updating, replacing (on a type change) or deleting a pool's monitor as the Service asks.
#pragma once

#include <string>

#include "plugins/openstack/json.hpp"
#include "plugins/openstack/lb_desired.hpp"
#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

// The body of a health monitor (without the pool id); for_update leaves out what Octavia
// does not let an update change (type, tags).
Json monitorJson(const LbRun& run, const DesiredMonitor& m, bool for_update);

// Gives `pool` the monitor `d` asks for, or none.
sdk::Status reconcileMonitor(const LbRun& run, const std::string& lb_id, const OctaviaPool& pool,
                        const DesiredPort& d);

}  // namespace ccm::openstack
