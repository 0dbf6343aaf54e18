// OpenStackProvider: one provider instance built from cloud.conf. It owns the API clients and
// the instances, load balancer and routes logic, and decides at start which capabilities the
// cloud and the configuration allow.
#pragma once

#include <memory>
#include <string_view>

#include "plugins/openstack/config.hpp"
#include "ccm/provider.hpp"
#include "plugins/openstack/instances.hpp"
#include "plugins/openstack/load_balancers.hpp"
#include "plugins/openstack/neutron_client.hpp"
#include "plugins/openstack/nova_client.hpp"
#include "plugins/openstack/octavia_client.hpp"
#include "plugins/openstack/openstack_client.hpp"
#include "plugins/openstack/routes.hpp"

namespace ccm::openstack {

// THREAD: create on the host's main thread; the accessors' objects from any worker.
class OpenStackProvider {
 public:
  // Parses config_text, registers its secrets, authenticates and resolves endpoints. Refusals
  // name the offending key (INVALID_ARGUMENT) or the failing cloud call.
  static sdk::Result<std::unique_ptr<OpenStackProvider>> create(const sdk::Call& call, const sdk::Host& env,
                                                             std::string_view config_text);

  Instances& instances() { return *instances_; }
  // nullptr when [LoadBalancer] enabled=false.
  LoadBalancers* loadBalancers() { return load_balancers_.get(); }
  // nullptr without [Route] router-id or without Neutron's extraroute extensions.
  Routes* routes() { return routes_.get(); }
  const Config& config() const { return config_; }

  // Applies new cloud.conf text (a reconfigure; reconfigure.cpp), parsed as create parses it.
  // Only the credentials may change while running: any other difference is refused
  // (INVALID_ARGUMENT naming the key) and nothing changes. On OK the new secrets are
  // registered and Keystone is logged into with the new credentials for the next requests.
  // THREAD: one at a time; capability calls may run meanwhile.
  sdk::Status reconfigure(const sdk::Call& call, const sdk::Host& env, std::string_view config_text);
  OpenStackClient& client() { return *client_; }

 private:
  OpenStackProvider(Config config, const sdk::Host& env);

  Config config_;
  std::unique_ptr<OpenStackClient> client_;
  std::unique_ptr<NovaClient> nova_;
  std::unique_ptr<NeutronClient> neutron_;
  std::unique_ptr<OctaviaClient> octavia_;
  std::unique_ptr<Instances> instances_;
  std::unique_ptr<LoadBalancers> load_balancers_;
  std::unique_ptr<Routes> routes_;
};

}  // namespace ccm::openstack
