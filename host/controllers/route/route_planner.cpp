// The route diff.
#include "host/controllers/route/route_planner.hpp"

#include <algorithm>
#include <set>

namespace ccm::controllers::route {

RouteKey routeKey(const plugin::Route& route) {
  return {route.target_node, canonicalCidr(route.destination_cidr)};
}

bool isResponsibleForRoute(const std::vector<Cidr>& cluster_cidrs, std::string_view destination) {
  auto c = Cidr::parse(destination);
  if (!c.ok()) {
    return false;
  }
  for (const auto& cluster : cluster_cidrs) {
    if (cluster.contains(c->first()) || cluster.contains(c->last())) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> podCidrsOf(const kube::Node& node) {
  std::vector<std::string> out;
  for (auto c : node.podCidrs()) {
    if (!c.empty()) {
      out.emplace_back(c);
    }
  }
  if (out.empty() && !node.podCidr().empty()) {
    out.emplace_back(node.podCidr());
  }
  return out;
}

bool routeAddressesMatch(const kube::Node& node, const plugin::Route& route) {
  if (node.addresses().size() != route.target_node_addresses.size()) {
    return false;
  }
  return std::all_of(node.addresses().begin(), node.addresses().end(), [&](const auto& a) {
    return std::any_of(route.target_node_addresses.begin(), route.target_node_addresses.end(),
                       [&](const auto& r) { return r.type == a.type && r.address == a.address; });
  });
}

RoutePlan planRoutes(const std::vector<std::shared_ptr<const kube::Node>>& nodes,
                     const std::vector<plugin::Route>& routes, const std::vector<Cidr>& cluster) {
  enum class Action { Keep, Add, Update };
  RoutePlan plan;

  // The cloud's routes by (node, CIDR); routes without a target node are not indexed.
  std::map<RouteKey, const plugin::Route*> by_key;
  std::set<std::string> targeted;
  for (const auto& r : routes) {
    if (r.target_node.empty()) {
      continue;
    }
    by_key.emplace(routeKey(r), &r);
    targeted.insert(r.target_node);
  }

  std::map<RouteKey, Action> actions;
  for (const auto& node : nodes) {
    std::string name(node->name());
    auto cidrs = podCidrsOf(*node);
    if (cidrs.empty()) {
      if (targeted.count(name) > 0) {
        plan.nodes[name] = NodeRouteState{node, {}, {}};
      }
      continue;
    }
    NodeRouteState& state = plan.nodes[name];
    state.node = node;
    for (const auto& cidr : cidrs) {
      std::string key = canonicalCidr(cidr);
      if (std::find(state.cidr_keys.begin(), state.cidr_keys.end(), key) != state.cidr_keys.end()) {
        continue;
      }
      state.cidr_keys.push_back(key);
      auto it = by_key.find({name, key});
      Action action = Action::Add;
      if (it != by_key.end()) {
        const plugin::Route& r = *it->second;
        action = (!r.enable_node_addresses || routeAddressesMatch(*node, r)) ? Action::Keep
                                                                             : Action::Update;
      }
      actions[{name, key}] = action;
      if (action == Action::Keep) {
        continue;
      }
      state.missing.push_back(key);
      PlannedCreate c;
      c.node = node;
      c.cidr_key = key;
      c.route.target_node = name;
      c.route.destination_cidr = cidr;
      for (const auto& a : node->addresses()) {
        c.route.target_node_addresses.push_back({std::string(a.type), std::string(a.address)});
      }
      c.replaces = action == Action::Update;
      plan.creates.push_back(std::move(c));
    }
  }

  for (const auto& r : routes) {
    if (!isResponsibleForRoute(cluster, r.destination_cidr)) {
      continue;
    }
    auto it = actions.find(routeKey(r));
    if (r.blackhole || it == actions.end() || it->second == Action::Update) {
      plan.deletes.push_back(r);
    }
  }
  return plan;
}

}  // namespace ccm::controllers::route
