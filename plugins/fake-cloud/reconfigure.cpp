// FakeCloud::reconfigure: which settings a new config may change while the provider runs (the
// World: instances, region, faults, ...) and which it may not (what the host was told at
// creation, and where the cloud keeps its objects).
#include <string>

#include "plugins/fake-cloud/fake_cloud.hpp"

namespace ccm::fakecloud {
namespace {

std::string shown(bool v) {
  return v ? "true" : "false";
}
std::string shown(uint32_t v) {
  return std::to_string(v);
}
std::string shown(const std::string& v) {
  return "\"" + v + "\"";
}

template <typename T>
void mustKeep(const char* key, const T& was, const T& now) {
  if (was != now) {
    throw ConfigError(std::string(key) + ": cannot change while the provider runs (was " +
                      shown(was) + ", now " + shown(now) + "); restart to change it");
  }
}

}  // namespace

void FakeCloud::reconfigure(const Config& next) {
  // The host fetched the capability tables and their limits at creation.
  mustKeep("capabilities.instances", config_.capabilities.instances, next.capabilities.instances);
  mustKeep("capabilities.instancesBatch", config_.capabilities.batch, next.capabilities.batch);
  mustKeep("capabilities.loadBalancer", config_.capabilities.load_balancer,
           next.capabilities.load_balancer);
  mustKeep("capabilities.routes", config_.capabilities.routes, next.capabilities.routes);
  mustKeep("maxConcurrency", config_.max_concurrency, next.max_concurrency);
  mustKeep("maxBatchSize", config_.max_batch_size, next.max_batch_size);
  // Where the cloud's objects live and how they are named: changing these would lose or
  // rename existing load balancers and routes.
  mustKeep("stateFile", config_.state_file, next.state_file);
  mustKeep("cloudFile", config_.cloud_file, next.cloud_file);
  mustKeep("loadBalancer.ipPool", config_.lb_ip_pool, next.lb_ip_pool);
  mustKeep("loadBalancer.hostnameSuffix", config_.lb_hostname_suffix, next.lb_hostname_suffix);
  const AutoInstances& a = next.world.auto_instances;
  for (const auto& cidr : {a.internal_cidr, a.external_cidr}) {
    if (!cidr.empty() && !parseIpv4Block(cidr)) {
      throw ConfigError("autoInstances: \"" + cidr + "\" is not an IPv4 CIDR between /8 and /30");
    }
  }
  world_.rebase(next.world);
}

}  // namespace ccm::fakecloud
