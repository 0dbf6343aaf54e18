// The pools of a Service's load balancer, one behind each listener: their request bodies,
// finding the pool of a listener, and creating it or bringing it to the settings (algorithm
// and session persistence; a protocol change replaces it).
#pragma once

#include <string>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/json.hpp"
#include "plugins/openstack/lb_desired.hpp"
#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

// The pool serving a listener; nullptr when it has none.
const OctaviaPool* poolOf(const std::vector<OctaviaPool>& pools, const OctaviaListener& l);

// The body of a new pool for `d` (without the listener id, members or monitor).
Json poolJson(const LbRun& run, const DesiredPort& d, const std::string& session_affinity);

// The pool behind `listener` for port `d`: created when missing, else brought to the
// settings. With members_only (UpdateLoadBalancer) nothing changes and a missing pool is an
// error.
sdk::Result<OctaviaPool> ensurePool(const LbRun& run, const std::string& lb_id,
                                    const sdk::Service& svc, const DesiredPort& d,
                                    const OctaviaListener& listener,
                                    const std::vector<OctaviaPool>& pools, bool members_only);

}  // namespace ccm::openstack
