// LoadBalancers: the fake cloud's load balancers, one per Service, named as upstream names
// them, each with an ingress address from the pool (the Service's loadBalancerIP when it asks
// for a free one, else the lowest free), kept in the StateStore.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ccm/provider.hpp"
#include "plugins/fake-cloud/cloud_state.hpp"
#include "plugins/fake-cloud/config.hpp"
#include "plugins/fake-cloud/ipv4.hpp"
#include "plugins/fake-cloud/state_store.hpp"

namespace ccm::fakecloud {

class LoadBalancers {
 public:
  // pool is the block pool_cidr (loadBalancer.ipPool) names; ingresses also get the hostname
  // <name>.<hostname_suffix> when the suffix is set.
  LoadBalancers(StateStore& store, Ipv4Block pool, std::string pool_cidr,
                std::string hostname_suffix);

  // Upstream's default load balancer name: "a" + UID without dashes, at most 32 bytes.
  static std::string defaultName(std::string_view uid);

  // THREAD (every method): any.
  std::optional<sdk::LoadBalancerStatus> get(const sdk::ServiceView& svc);
  // Creates the Service's load balancer or brings it up to date with the Service and nodes.
  sdk::Result<sdk::LoadBalancerStatus> ensure(std::string_view cluster, const sdk::ServiceView& svc,
                                              std::span<const sdk::NodeView> nodes);
  // Replaces the backends; NOT_FOUND when the load balancer does not exist.
  sdk::Status updateNodes(const sdk::ServiceView& svc, std::span<const sdk::NodeView> nodes);
  // Deletes the load balancer if it exists; true when it did.
  bool remove(const sdk::ServiceView& svc);

 private:
  std::optional<std::string> allocateIp(const CloudState& state, std::string_view wanted) const;
  // Called inside a store transaction (which serialises it).
  NodeNames namesOf(const LoadBalancerRecord& lb, std::span<const sdk::NodeView> nodes);

  StateStore& store_;
  const Ipv4Block pool_;
  const std::string pool_cidr_;
  const std::string hostname_suffix_;
  NodeNames last_nodes_;  // the last list namesOf made or found; guarded by the store's lock
};

}  // namespace ccm::fakecloud
