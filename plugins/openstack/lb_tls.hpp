// TLS termination (OCCM's default-tls-container-ref): with a certificate reference every port
// of the Service gets a TERMINATED_HTTPS listener carrying it (and the SNI references), in
// front of an HTTP pool (PROXY/PROXYV2 with proxy-protocol). With [LoadBalancer]
// container-store = barbican each reference is read in Barbican before anything is created
// or changed; with external nothing is checked here and Octavia has the last word.
#pragma once

#include <string>

#include "ccm/types.hpp"
#include "plugins/openstack/barbican_client.hpp"
#include "plugins/openstack/config.hpp"
#include "plugins/openstack/json.hpp"
#include "plugins/openstack/lb_settings.hpp"
#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

inline constexpr const char* kTerminatedHttps = "TERMINATED_HTTPS";

// Whether the settings ask for TLS termination.
inline bool tlsTerminated(const LbSettings& s) {
  return !s.tls_container_ref.empty();
}

// TLS terminates TCP only: a UDP or SCTP port of a TLS Service is INVALID_ARGUMENT, naming it.
sdk::Status checkTlsPorts(const LbSettings& s, const sdk::Service& svc);

// With container-store = barbican: the default and SNI references each exist in Barbican and
// the project may read them. A missing, unreadable or malformed one is INVALID_ARGUMENT
// naming the setting; no key-manager endpoint is FAILED_PRECONDITION.
sdk::Status checkTlsContainers(const sdk::Call& call, BarbicanClient& barbican,
                          const LoadBalancerConfig& cfg, const LbSettings& s);

// --check-config: the [LoadBalancer] default-tls-container-ref, when container-store is
// barbican (OK when there is none to check).
sdk::Status checkConfiguredTlsContainer(const sdk::Call& call, BarbicanClient& barbican,
                                   const LoadBalancerConfig& cfg);

// The certificate fields of a new TERMINATED_HTTPS listener's body.
void addListenerTls(Json& listener, const LbSettings& s);

// The certificate fields `l` (a TERMINATED_HTTPS listener) needs changed to match the
// settings, added to `upd`; whether there were any.
bool addListenerTlsChanges(Json& upd, const OctaviaListener& l, const LbSettings& s);

}  // namespace ccm::openstack
