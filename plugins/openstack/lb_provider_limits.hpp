// What the Octavia provider driver in use cannot build, found before anything is made. Octavia's
// ovn provider is an L4 load balancer: TCP, UDP and SCTP listeners and pools, the
// SOURCE_IP_PORT algorithm only, TCP and UDP-CONNECT health monitors, no additional VIPs (the
// features say so: dual-stack then gets a second load balancer). A Service asking for more is
// refused with INVALID_ARGUMENT naming the setting, instead of a half-made load balancer and
// Octavia's 501.
#pragma once

#include "ccm/types.hpp"
#include "plugins/openstack/lb_run.hpp"

namespace ccm::openstack {

// OK unless the provider is ovn and the Service's settings need what ovn does not have: TLS
// termination (TERMINATED_HTTPS), x-forwarded-for (HTTP listeners), proxy-protocol (PROXY
// pools) or an lb-method other than SOURCE_IP_PORT.
sdk::Status checkProviderLimits(const LbRun& run, const sdk::Service& svc);

// Whether the provider runs health monitors of this type.
bool providerHasMonitorType(const OctaviaFeatures& features, const std::string& type);

}  // namespace ccm::openstack
