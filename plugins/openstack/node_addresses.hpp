// The node address rules of OCCM (reference §3.4): Neutron fixed IPs of ACTIVE ports first,
// access IPs, the metadata hostname, then Nova's addresses network by network with
// public-network-name / internal-network-name / floating rules, the IPv6 switch and the
// address-sort-order priority sort.
#pragma once

#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/config.hpp"
#include "plugins/openstack/neutron_client.hpp"
#include "plugins/openstack/nova_client.hpp"

namespace ccm::openstack {

// extra: addresses of trunk sub-ports, as type "fixed" under their network's name.
std::vector<sdk::NodeAddress> mapNodeAddresses(const Server& server, const std::vector<Port>& ports,
                                          const std::vector<NovaAddress>& extra,
                                          const NetworkingConfig& networking);

// Stable priority sort by the address-sort-order CIDRs (earlier CIDR = higher priority;
// addresses in no CIDR keep their order at the end).
void sortNodeAddresses(std::vector<sdk::NodeAddress>& addresses, const std::vector<Cidr>& order);

}  // namespace ccm::openstack
