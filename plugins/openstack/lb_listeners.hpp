// The listeners of a Service's load balancer: their request bodies, finding or creating the
// one for each Service port, bringing it to the settings, and deleting the ones (with their
// pools) that the Service no longer asks for.
#pragma once

#include <string>
#include <vector>

#include "plugins/openstack/json.hpp"
#include "plugins/openstack/lb_desired.hpp"
#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

// The body of a new listener for `d` (without the load balancer id).
Json listenerJson(const LbRun& run, const DesiredPort& d);

// The listener for port `d`: created when missing, else brought to the settings. With
// members_only (UpdateLoadBalancer) nothing changes and a missing listener is an error. A
// listener on the port that belongs to another Service is an error.
sdk::Result<OctaviaListener> ensureListener(const LbRun& run, const std::string& lb_id, bool owner,
                                         const DesiredPort& d,
                                         const std::vector<OctaviaListener>& listeners,
                                         bool members_only);

// Deletes the Service's listeners that no desired port asks for (a port may change
// protocol), with their pools; true when it deleted any.
sdk::Result<bool> deleteUnwantedListeners(const LbRun& run, const std::string& lb_id, bool owner,
                                       const std::vector<DesiredPort>& desired,
                                       const std::vector<OctaviaListener>& listeners,
                                       const std::vector<OctaviaPool>& pools);

// Deletes a listener and its pool (with members; the health monitor first when asked),
// waiting after each.
sdk::Status deleteListenerAndPool(const LbRun& run, const std::string& lb_id, const OctaviaListener& l,
                             const std::vector<OctaviaPool>& pools, bool delete_monitor_first);

}  // namespace ccm::openstack
