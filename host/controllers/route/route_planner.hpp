// The route controller's diff as a pure function: given the Nodes and the cloud's routes, which
// routes to delete, which to create, and where each Node stands (reference §4.4, upstream's
// reconcile without the calls).
//
// Routes are matched to pod CIDRs by (target node, destination CIDR), CIDRs compared in
// canonical form. A route is this cluster's business only when its destination lies in a
// cluster CIDR (isResponsibleForRoute); other routes are never deleted.
//
// THREAD: pure function.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host/controllers/common/cidr.hpp"
#include "host/kube/objects/node.hpp"
#include "host/plugin/provider.hpp"

namespace ccm::controllers::route {

// A route's identity: (target node, canonical destination CIDR).
using RouteKey = std::pair<std::string, std::string>;
RouteKey routeKey(const plugin::Route& route);

// The pod CIDRs of a node: spec.podCIDRs, or spec.podCIDR when the list is empty.
std::vector<std::string> podCidrsOf(const kube::Node& node);

// True when a route's destination belongs to this cluster: its first or its last address lies
// inside one of the cluster CIDRs (upstream's rule). Unparsable destinations: false.
bool isResponsibleForRoute(const std::vector<Cidr>& cluster_cidrs, std::string_view destination);

// Upstream's address check for routes that carry node addresses: same length, and every
// address of the node appears (type and address) in the route's list.
bool routeAddressesMatch(const kube::Node& node, const plugin::Route& route);

struct PlannedCreate {
  std::shared_ptr<const kube::Node> node;
  std::string cidr_key;   // canonical destination
  plugin::Route route;    // what to ask for (destination as written on the Node)
  bool replaces = false;  // the node's route exists with stale addresses; it is deleted first
};

struct NodeRouteState {
  std::shared_ptr<const kube::Node> node;
  std::vector<std::string> cidr_keys;  // canonical pod CIDRs (empty: routes but no pod CIDRs)
  std::vector<std::string> missing;    // pod CIDRs without a matching route
};

struct RoutePlan {
  std::vector<plugin::Route> deletes;
  std::vector<PlannedCreate> creates;
  // Nodes with pod CIDRs, and nodes that routes point at (upstream's index), by name (a view
  // of the name of the state's node). Others are left alone (their NetworkUnavailable
  // condition is not touched).
  std::unordered_map<std::string_view, NodeRouteState> nodes;
};

// A route of the cloud's, with its destination in canonical form (the route controller keeps
// both, keyed by routeKey).
struct ListedRoute {
  std::string_view canonical_cidr;
  const plugin::Route* route;
};

// `routes` are read during the call only. Hash maps over views of the nodes and routes: at
// 100,000 nodes a quiet pass is a few hundred ms, and ordered maps of copied strings were
// most of it.
RoutePlan planRoutes(const std::vector<std::shared_ptr<const kube::Node>>& nodes,
                     std::span<const ListedRoute> routes, const std::vector<Cidr>& cluster);
// The same for routes as a provider lists them (their canonical destinations made here).
RoutePlan planRoutes(const std::vector<std::shared_ptr<const kube::Node>>& nodes,
                     const std::vector<plugin::Route>& routes, const std::vector<Cidr>& cluster);

}  // namespace ccm::controllers::route
