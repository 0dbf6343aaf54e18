// The cloud objects cloud.conf names by ID ([Route] router-id; [LoadBalancer] and each
// [LoadBalancerClass] subnet, member subnet, network, floating network and floating subnet)
// checked at creation, so that --check-config and start-up say which option names an
// object the project cannot see.
#pragma once

#include "plugins/openstack/config.hpp"
#include "plugins/openstack/neutron_client.hpp"

namespace ccm::openstack {

// INVALID_ARGUMENT naming every option whose object Neutron does not show to the project
// (404). Other errors (Neutron down) only warn: they say nothing about the configuration.
sdk::Status checkCloudObjects(const sdk::Call& call, const Config& config, NeutronClient& neutron);

}  // namespace ccm::openstack
