// The members of a load balancer's pools: the nodes behind each Service port. Brings a pool's
// member set to the desired one, in one call or (for providers that need serial API calls)
// member by member.
#pragma once

#include <string>

#include "plugins/openstack/json.hpp"
#include "plugins/openstack/lb_desired.hpp"
#include "plugins/openstack/lb_run.hpp"

namespace ccm::openstack {

// The body of a member.
Json memberJson(const DesiredMember& m);

// Makes the members of pool `pool_id` the ones `d` asks for.
sdk::Status reconcileMembers(const LbRun& run, const std::string& lb_id, const std::string& pool_id,
                        const DesiredPort& d);

}  // namespace ccm::openstack
