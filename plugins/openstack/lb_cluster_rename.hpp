// A Service's load balancer made under another --cluster-name, found through the
// load-balancer-id annotation written back for it: renamed to this cluster's names, as OCCM
// does, but only when it is safely this cluster's own. It must carry OCCM's description of
// this Service under the old cluster name, be shared with no other Service, and have a member
// that is one of this cluster's nodes (its name and address); anything else is left alone
// with FAILED_PRECONDITION, so a load balancer of another cluster whose Service has the same
// namespace and name (its annotation copied over) is never taken. The children (monitors,
// pools, listeners with their tags) are renamed first and the load balancer (name,
// description, tags) last, so an interrupted rename is finished by the next call; floating IPs
// with the old description on its VIP port get the new one.
#pragma once

#include <string>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

// The cluster part of `lb_name` when it is kube_service_<cluster>_<namespace>_<name> for this
// Service (the settings' names) under another cluster than this one; empty otherwise.
std::string formerClusterOf(const std::string& lb_name, const LbSettings& s);

// Renames `lb` (named for this Service under `former_cluster`) and its children to the
// settings' names after the checks above; the load balancer as renamed.
sdk::Result<OctaviaLoadBalancer> renameForClusterChange(const LbRun& run,
                                                        const OctaviaLoadBalancer& lb,
                                                        const std::string& former_cluster,
                                                        const std::vector<sdk::Node>& nodes);

}  // namespace ccm::openstack
