// Octavia provider limits (ovn): refusals with the setting to change.
#include "plugins/openstack/lb_provider_limits.hpp"

#include "plugins/openstack/lb_tls.hpp"

namespace ccm::openstack {
namespace {

constexpr const char* kOvnAlgorithm = "SOURCE_IP_PORT";

sdk::Status ovnRefusal(const sdk::Service& svc, const std::string& what) {
  return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                "Service " + svc.namespace_ + "/" + svc.name + ": " + what +
                    ", which Octavia's ovn provider ([LoadBalancer] lb-provider = ovn) does not "
                    "support; nothing was created");
}

}  // namespace

sdk::Status checkProviderLimits(const LbRun& run, const sdk::Service& svc) {
  if (!run.features().ovn) {
    return {};
  }
  const LbSettings& s = run.settings();
  if (tlsTerminated(s)) {
    return ovnRefusal(
        svc, s.tls_container_source + " asks for TLS termination (TERMINATED_HTTPS listeners)");
  }
  if (s.x_forwarded_for) {
    return ovnRefusal(svc, std::string("annotation ") + kAnnotationPrefix +
                               "x-forwarded-for asks for HTTP listeners");
  }
  if (!s.proxy_protocol.empty()) {
    return ovnRefusal(svc, std::string("annotation ") + kAnnotationPrefix +
                               "proxy-protocol asks for " + s.proxy_protocol + " pools");
  }
  if (s.lb_method != kOvnAlgorithm) {
    return ovnRefusal(svc, "[LoadBalancer] lb-method = " + s.lb_method +
                               " (ovn balances with SOURCE_IP_PORT only)");
  }
  return {};
}

bool providerHasMonitorType(const OctaviaFeatures& features, const std::string& type) {
  return !features.ovn || type == "TCP" || type == "UDP-CONNECT";
}

}  // namespace ccm::openstack
