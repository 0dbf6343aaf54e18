// Routes: listing, creating and deleting the fake cloud's routes.
#include "plugins/fake-cloud/routes.hpp"

#include <string>
#include <utility>

namespace ccm::fakecloud {
namespace {

// "route-<hint>-<cidr with / : . as ->", e.g. route-uid-1-10-244-1-0-24.
std::string routeName(std::string_view hint, std::string_view cidr) {
  std::string out = "route-" + std::string(hint) + "-";
  for (char c : cidr) {
    out.push_back(c == '/' || c == ':' || c == '.' ? '-' : c);
  }
  return out;
}

}  // namespace

std::vector<sdk::Route> Routes::list(std::string_view cluster) {
  return store_.transact([&](CloudState& s, bool&) {
    std::vector<sdk::Route> out;
    for (const auto& [cidr, r] : s.routes) {
      if (r.cluster != cluster) {
        continue;
      }
      sdk::Route route;
      route.name = r.name;
      route.target_node = r.target_node;
      route.destination_cidr = r.destination_cidr;
      out.push_back(std::move(route));
    }
    return out;
  });
}

sdk::Status Routes::create(std::string_view cluster, std::string_view name_hint,
                           const sdk::Route& route) {
  return store_.transact([&](CloudState& s, bool& changed) -> sdk::Status {
    auto it = s.routes.find(route.destination_cidr);
    if (it != s.routes.end()) {
      if (it->second.target_node == route.target_node && it->second.cluster == cluster) {
        ++s.duplicate_route_creates;
        changed = true;
        return sdk::Error::alreadyExists("fake-cloud: route to " + route.target_node + " for " +
                                         route.destination_cidr + " already exists");
      }
      return sdk::Error::failedPrecondition("fake-cloud: destination " + route.destination_cidr +
                                            " is already routed to " + it->second.target_node);
    }
    RouteRecord r{routeName(name_hint, route.destination_cidr), std::string(cluster),
                  route.target_node, route.destination_cidr, std::string(name_hint)};
    s.routes.emplace(route.destination_cidr, std::move(r));
    ++s.route_creates;
    changed = true;
    return {};
  });
}

bool Routes::remove(std::string_view cluster, const sdk::Route& route) {
  return store_.transact([&](CloudState& s, bool& changed) {
    auto it = s.routes.find(route.destination_cidr);
    if (it == s.routes.end() || it->second.cluster != cluster) {
      return false;
    }
    s.routes.erase(it);
    ++s.route_deletes;
    changed = true;
    return true;
  });
}

}  // namespace ccm::fakecloud
