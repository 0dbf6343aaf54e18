// Builds an OpenStackProvider from cloud.conf.
#include "plugins/openstack/openstack_provider.hpp"

#include <cstdlib>

#include "plugins/openstack/barbican_client.hpp"
#include "plugins/openstack/cloud_objects_check.hpp"
#include "plugins/openstack/lb_tls.hpp"

namespace ccm::openstack {

OpenStackProvider::OpenStackProvider(Config config, const sdk::Host& env) : config_(std::move(config)) {
  client_ = std::make_unique<OpenStackClient>(config_, env);
  nova_ = std::make_unique<NovaClient>(*client_);
  neutron_ = std::make_unique<NeutronClient>(*client_);
  octavia_ = std::make_unique<OctaviaClient>(*client_);
  instances_ = std::make_unique<Instances>(config_, *nova_, *neutron_);
}

sdk::Result<std::unique_ptr<OpenStackProvider>> OpenStackProvider::create(
    const sdk::Call& call, const sdk::Host& env, std::string_view config_text) {
  if (config_text.empty()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  "the openstack provider needs a cloud config (--cloud-config) with [Global] "
                  "auth-url and credentials");
  }
  auto parsed = parseConfig(config_text);
  if (!parsed.ok()) {
    return parsed.status();
  }
  for (const std::string& secret : configSecrets(parsed->config)) {
    env.registerSecret(secret);
  }
  for (const std::string& w : parsed->warnings) {
    call.warning(w);
  }
  Config config = std::move(parsed->config);
  const char* regional = std::getenv("OS_CCM_REGIONAL");
  config.regional_provider_id = regional != nullptr && std::string_view(regional) == "true";

  std::unique_ptr<OpenStackProvider> p(new OpenStackProvider(std::move(config), env));
  const Config& cfg = p->config_;
  CCM_SDK_RETURN_IF_ERROR(p->client_->start(call, cfg.load_balancer.enabled));
  CCM_SDK_RETURN_IF_ERROR(checkCloudObjects(call, cfg, *p->neutron_));
  if (cfg.load_balancer.enabled) {
    BarbicanClient barbican(*p->client_);
    CCM_SDK_RETURN_IF_ERROR(checkConfiguredTlsContainer(call, barbican, cfg.load_balancer));
  }
  if (cfg.load_balancer.enabled) {
    p->load_balancers_ = std::make_unique<LoadBalancers>(cfg, *p->octavia_, *p->neutron_);
  }
  if (!cfg.route.router_id.empty()) {
    auto ext = p->neutron_->extensionAliases(call);
    if (!ext.ok()) {
      return ext.status().withPrefix("reading Neutron's extensions");
    }
    bool extraroute = ext->count("extraroute") != 0;
    RouteFeatures f;
    f.atomic = ext->count("extraroute-atomic") != 0;
    f.address_pairs = ext->count("allowed-address-pairs") != 0;
    f.tags = ext->count("standard-attr-tag") != 0 || ext->count("tag") != 0;
    if (!extraroute && !f.atomic) {
      call.warning(
          "[Route] router-id is set but Neutron has neither extraroute nor "
          "extraroute-atomic: routes are disabled");
    } else {
      if (!f.tags) {
        call.warning(
            "Neutron has no tag extension: every route on the router counts as this "
            "cluster's (as OCCM does)");
      }
      p->routes_ = std::make_unique<Routes>(cfg, *p->neutron_, *p->nova_, f);
    }
  }
  call.info("OpenStack provider ready",
            {{"region", cfg.global.region},
             {"load_balancers", p->load_balancers_ ? "enabled" : "disabled"},
             {"routes", p->routes_ ? "enabled" : "disabled"}});
  return p;
}

}  // namespace ccm::openstack
