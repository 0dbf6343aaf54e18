// Routes: pod-CIDR routes on the configured Neutron router, added and removed with the atomic
// extraroute calls when Neutron has them (a read-modify-write of the route list under a lock
// otherwise), the pod CIDR allowed on the node's port (allowed_address_pairs), and a router tag
// per route that records which cluster made it, so that list and delete never touch another
// cluster's routes on a shared router.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/config.hpp"
#include "plugins/openstack/neutron_client.hpp"
#include "plugins/openstack/nova_client.hpp"

namespace ccm::openstack {

struct RouteFeatures {
  bool atomic = false;         // extraroute-atomic
  bool address_pairs = false;  // allowed-address-pairs
  bool tags = false;           // standard-attr-tag: ownership tags on the router
};

// The router tag recording that `cluster` owns the route to `cidr` ("ccm:<hash>:<cidr>" with
// '/' as '_'; at most 56 characters, inside Neutron's 60).
std::string routeTag(const std::string& cluster, const std::string& cidr);

// THREAD: any worker; create/delete for the same destination never overlap (host contract);
// writes to the router are serialised here (routerWrite).
class Routes {
 public:
  Routes(const Config& config, NeutronClient& neutron, NovaClient& nova, RouteFeatures features)
      : config_(config), neutron_(neutron), nova_(nova), features_(features) {}

  sdk::Result<std::vector<sdk::Route>> list(const sdk::Call& call, const std::string& cluster);
  sdk::Status create(const sdk::Call& call, const std::string& cluster, const sdk::Route& route);
  sdk::Status remove(const sdk::Call& call, const std::string& cluster, const sdk::Route& route);

  const RouteFeatures& features() const { return features_; }

 private:
  // node name per node address, from the project's servers (cached a few minutes).
  sdk::Status refreshNodeNames(const sdk::Call& call);
  std::optional<std::string> cachedNodeName(const std::string& ip);
  // The node port holding ip on one of the router's networks; nullopt when there is none.
  sdk::Result<std::optional<Port>> nodePort(const sdk::Call& call, const std::string& ip);
  sdk::Result<std::string> nexthopFor(const sdk::Call& call, const sdk::Route& route);
  // One write to the router (a route or a tag) at a time from this provider: Neutron fails
  // concurrent writes to one router with a 500 (a database deadlock). A 5xx is retried a few
  // times with growing jittered delays before the caller sees it (and rolls anything back).
  sdk::Status routerWrite(const sdk::Call& call, const std::function<sdk::Status()>& write);
  sdk::Status addRoute(const sdk::Call& call, const RouterRoute& r);
  sdk::Status removeRoute(const sdk::Call& call, const RouterRoute& r);
  sdk::Status addRouteOnce(const sdk::Call& call, const RouterRoute& r);
  sdk::Status removeRouteOnce(const sdk::Call& call, const RouterRoute& r);

  const Config& config_;
  NeutronClient& neutron_;
  NovaClient& nova_;
  RouteFeatures features_;

  std::mutex router_mu_;  // serialises every write to the router (routerWrite)
  std::mutex mu_;
  std::map<std::string, std::pair<std::string, std::chrono::steady_clock::time_point>>
      node_by_ip_;                                        // guarded by mu_
  std::optional<std::set<std::string>> router_networks_;  // guarded by mu_
};

}  // namespace ccm::openstack
