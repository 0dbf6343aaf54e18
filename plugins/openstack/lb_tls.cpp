// TLS termination: checks of the certificate references and the listener fields.
#include "plugins/openstack/lb_tls.hpp"

#include <set>

namespace ccm::openstack {
namespace {

// One reference read in Barbican, with the error naming the setting it came from.
sdk::Status checkRef(const sdk::Call& call, BarbicanClient& barbican, const std::string& source,
                const std::string& ref) {
  std::string where = source + " \"" + ref + "\"";
  auto parsed = parseBarbicanRef(ref);
  if (!parsed.ok()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, where + ": " + parsed.status().message());
  }
  if (!barbican.available()) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  where + ": the Keystone catalog has no key-manager (Barbican) endpoint to check "
                          "it in; set [LoadBalancer] container-store = external when Octavia "
                          "reads certificates from elsewhere");
  }
  const char* what = parsed->kind == "containers" ? "container" : "secret";
  sdk::Status st = barbican.read(call, *parsed);
  if (st.ok()) {
    return st;
  }
  if (st.code() == CCM_STATUS_NOT_FOUND) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  where + ": Barbican has no " + what + " " + parsed->id + " (404)");
  }
  if (st.code() == CCM_STATUS_PERMISSION_DENIED) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  where + ": the " + what + " " + parsed->id +
                      " is not readable by this project in Barbican (403); use one of the "
                      "project's or give the project read access with a Barbican ACL");
  }
  return st.withPrefix("checking " + where + " in Barbican");
}

}  // namespace

sdk::Status checkTlsPorts(const LbSettings& s, const sdk::Service& svc) {
  if (!tlsTerminated(s)) {
    return {};
  }
  for (const sdk::ServicePort& p : svc.ports) {
    if (!p.protocol.empty() && p.protocol != "TCP") {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                    s.tls_container_source + " asks for TLS termination, which needs TCP ports; "
                                             "port " +
                        std::to_string(p.port) + " is " + p.protocol);
    }
  }
  return {};
}

sdk::Status checkTlsContainers(const sdk::Call& call, BarbicanClient& barbican,
                          const LoadBalancerConfig& cfg, const LbSettings& s) {
  if (!tlsTerminated(s) || cfg.container_store != "barbican") {
    return {};
  }
  CCM_SDK_RETURN_IF_ERROR(checkRef(call, barbican, s.tls_container_source, s.tls_container_ref));
  for (const std::string& ref : s.sni_container_refs) {
    CCM_SDK_RETURN_IF_ERROR(checkRef(
        call, barbican, std::string("annotation ") + kAnnotationPrefix + "sni-container-refs",
        ref));
  }
  return {};
}

sdk::Status checkConfiguredTlsContainer(const sdk::Call& call, BarbicanClient& barbican,
                                   const LoadBalancerConfig& cfg) {
  if (cfg.default_tls_container_ref.empty() || cfg.container_store != "barbican") {
    return {};
  }
  sdk::Status st = checkRef(call, barbican, "[LoadBalancer] default-tls-container-ref",
                       cfg.default_tls_container_ref);
  if (st.ok() || st.code() == CCM_STATUS_INVALID_ARGUMENT || st.code() == CCM_STATUS_FAILED_PRECONDITION) {
    return st.ok() ? st : st.withPrefix("cloud config");
  }
  // Barbican unreachable or failing: not the configuration's fault.
  call.warning("Could not check the configured TLS container",
               {{"option", "[LoadBalancer] default-tls-container-ref"},
                {"ref", cfg.default_tls_container_ref},
                {"error", st.message()}});
  return {};
}

void addListenerTls(Json& listener, const LbSettings& s) {
  listener.set("default_tls_container_ref", s.tls_container_ref);
  if (!s.sni_container_refs.empty()) {
    listener.set("sni_container_refs", Json::stringArray(s.sni_container_refs));
  }
}

bool addListenerTlsChanges(Json& upd, const OctaviaListener& l, const LbSettings& s) {
  bool changed = false;
  if (l.default_tls_container_ref != s.tls_container_ref) {
    upd.set("default_tls_container_ref", s.tls_container_ref);
    changed = true;
  }
  std::set<std::string> have(l.sni_container_refs.begin(), l.sni_container_refs.end());
  std::set<std::string> want(s.sni_container_refs.begin(), s.sni_container_refs.end());
  if (have != want) {
    upd.set("sni_container_refs", Json::stringArray(s.sni_container_refs));
    changed = true;
  }
  return changed;
}

}  // namespace ccm::openstack
