// OpenStackProvider::reconfigure and the rule behind it: what a changed cloud.conf may change
// while the provider runs (the credentials) and what it may not (everything else: another
// auth URL, project, region or endpoint would be another cloud, and the other sections are
// wired into the clients at creation).
#include <string>
#include <utility>

#include "plugins/openstack/barbican_client.hpp"
#include "plugins/openstack/config.hpp"
#include "plugins/openstack/lb_tls.hpp"
#include "plugins/openstack/openstack_provider.hpp"

namespace ccm::openstack {

std::string fixedSettingChanged(const Config& running, const Config& next) {
  const GlobalConfig& a = running.global;
  const GlobalConfig& b = next.global;
  const std::pair<const char*, std::string GlobalConfig::*> fixed[] = {
      {"auth-url", &GlobalConfig::auth_url},
      {"tenant-id", &GlobalConfig::tenant_id},
      {"tenant-name", &GlobalConfig::tenant_name},
      {"domain-id", &GlobalConfig::domain_id},
      {"domain-name", &GlobalConfig::domain_name},
      {"tenant-domain-id", &GlobalConfig::tenant_domain_id},
      {"tenant-domain-name", &GlobalConfig::tenant_domain_name},
      {"region", &GlobalConfig::region},
      {"os-endpoint-type", &GlobalConfig::endpoint_type},
      {"ca-file", &GlobalConfig::ca_file},
      {"cert-file", &GlobalConfig::cert_file},
      {"key-file", &GlobalConfig::key_file},
      {"clouds-file", &GlobalConfig::clouds_file},
      {"cloud", &GlobalConfig::cloud},
  };
  for (const auto& [key, member] : fixed) {
    if (a.*member != b.*member) {
      return std::string("[Global] ") + key;
    }
  }
  if (a.tls_insecure != b.tls_insecure) {
    return "[Global] tls-insecure";
  }
  if (a.use_clouds != b.use_clouds) {
    return "[Global] use-clouds";
  }
  if (!(running.networking == next.networking)) {
    return "[Networking]";
  }
  if (!(running.load_balancer == next.load_balancer)) {
    return "[LoadBalancer] (or a [LoadBalancerClass])";
  }
  if (!(running.route == next.route)) {
    return "[Route] router-id";
  }
  if (!(running.metadata == next.metadata)) {
    return "[Metadata]";
  }
  return "";
}

sdk::Status OpenStackProvider::reconfigure(const sdk::Call& call, const sdk::Host& env,
                                      std::string_view config_text) {
  if (config_text.empty()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  "the new cloud config is empty; the openstack provider keeps the running one");
  }
  auto parsed = parseConfig(config_text);
  if (!parsed.ok()) {
    return parsed.status();
  }
  Config next = std::move(parsed->config);
  next.regional_provider_id = config_.regional_provider_id;  // from the environment
  std::string fixed = fixedSettingChanged(config_, next);
  if (!fixed.empty()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  fixed +
                      ": cannot change while the provider runs (restart to change it); "
                      "nothing was applied, the credentials neither");
  }
  for (const std::string& secret : configSecrets(next)) {
    env.registerSecret(secret);
  }
  for (const std::string& w : parsed->warnings) {
    call.warning(w);
  }
  // config_ keeps the credentials it was created with: only KeystoneAuth reads them after
  // creation, and it holds its own copy, replaced here.
  KeystoneAuth& keystone = client_->keystone();
  GlobalConfig previous = keystone.credentials();
  CCM_SDK_RETURN_IF_ERROR(keystone.rotateCredentials(call, next.global));
  // As at start-up: the configured TLS container must be readable, now with the new
  // credentials (another user may lack its ACL) and as it is now (it may be gone). A refusal
  // puts the running credentials back.
  if (load_balancers_ != nullptr) {
    BarbicanClient barbican(*client_);
    sdk::Status tls = checkConfiguredTlsContainer(call, barbican, next.load_balancer);
    if (!tls.ok()) {
      sdk::Status back = keystone.rotateCredentials(call, previous);
      if (!back.ok()) {
        return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                      "the new config is refused (" + tls.message() +
                          "), but logging in again with the running credentials failed too (" +
                          back.message() + ")");
      }
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                    tls.message() + "; the new config is refused and the running credentials stay");
    }
  }
  call.info("OpenStack provider reconfigured: new credentials in use");
  return {};
}

}  // namespace ccm::openstack
