// The route diff.
#include "host/controllers/route/route_planner.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_set>

namespace ccm::controllers::route {
namespace {

// Hashes a (node, CIDR) pair of views.
struct KeyViewHash {
  size_t operator()(const std::pair<std::string_view, std::string_view>& k) const {
    size_t h = std::hash<std::string_view>()(k.first);
    return h ^
           (std::hash<std::string_view>()(k.second) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  }
};

}  // namespace

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
                     std::span<const ListedRoute> routes, const std::vector<Cidr>& cluster) {
  // What a node's pod CIDR decided for the routes of its (node, CIDR) key: a key no node
  // claims stays Unclaimed (its routes are deleted when they are this cluster's).
  enum class Action { Unclaimed, Keep, Update };
  struct Indexed {
    const plugin::Route* route;  // the first route of this key
    Action action = Action::Unclaimed;
  };
  using KeyView = std::pair<std::string_view, std::string_view>;
  RoutePlan plan;

  // The cloud's routes by (node, CIDR); routes without a target node are not indexed.
  std::unordered_map<KeyView, Indexed, KeyViewHash> by_key;
  by_key.reserve(routes.size());
  for (const ListedRoute& l : routes) {
    if (!l.route->target_node.empty()) {
      by_key.emplace(KeyView{l.route->target_node, l.canonical_cidr}, Indexed{l.route});
    }
  }
  // The nodes routes point at, made only when a node without pod CIDRs needs it.
  std::optional<std::unordered_set<std::string_view>> targeted;

  plan.nodes.reserve(nodes.size());
  for (const auto& node : nodes) {
    std::string_view name = node->name();
    auto cidrs = podCidrsOf(*node);
    if (cidrs.empty()) {
      if (!targeted) {
        targeted.emplace();
        for (const ListedRoute& l : routes) {
          if (!l.route->target_node.empty()) {
            targeted->insert(l.route->target_node);
          }
        }
      }
      if (targeted->contains(name)) {
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
      auto it = by_key.find(KeyView{name, key});
      bool replaces = false;
      if (it != by_key.end()) {
        const plugin::Route& r = *it->second.route;
        bool keep = !r.enable_node_addresses || routeAddressesMatch(*node, r);
        it->second.action = keep ? Action::Keep : Action::Update;
        if (keep) {
          continue;
        }
        replaces = true;
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
      c.replaces = replaces;
      plan.creates.push_back(std::move(c));
    }
  }

  for (const ListedRoute& l : routes) {
    const plugin::Route& r = *l.route;
    if (!r.blackhole && !r.target_node.empty()) {
      auto it = by_key.find(KeyView{r.target_node, l.canonical_cidr});
      if (it != by_key.end() && it->second.action == Action::Keep) {
        continue;  // a node's pod CIDR, routed as it should be
      }
    }
    if (isResponsibleForRoute(cluster, r.destination_cidr)) {
      plan.deletes.push_back(r);
    }
  }
  return plan;
}

RoutePlan planRoutes(const std::vector<std::shared_ptr<const kube::Node>>& nodes,
                     const std::vector<plugin::Route>& routes, const std::vector<Cidr>& cluster) {
  std::vector<std::string> canonical;  // sized first: the views into it must not move
  canonical.reserve(routes.size());
  std::vector<ListedRoute> listed;
  listed.reserve(routes.size());
  for (const auto& r : routes) {
    listed.push_back({canonical.emplace_back(canonicalCidr(r.destination_cidr)), &r});
  }
  return planRoutes(nodes, listed, cluster);
}

}  // namespace ccm::controllers::route
