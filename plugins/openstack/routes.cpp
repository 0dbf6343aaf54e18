// Neutron router routes for pod CIDRs.
#include "plugins/openstack/routes.hpp"

#include <algorithm>

#include "plugins/openstack/backoff.hpp"
#include "plugins/openstack/ip_address.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr auto kNodeNameTtl = std::chrono::minutes(10);
// A router write that Neutron answered with a 5xx (a database deadlock when another client
// wrote the router at the same time) is tried this many times in all, with growing jittered
// delays, before the call fails.
constexpr int kRouterWriteTries = 4;
constexpr std::chrono::milliseconds kRouterRetryBase{250};
constexpr std::chrono::milliseconds kRouterRetryCap{4000};

}  // namespace

std::string routeTag(const std::string& cluster, const std::string& cidr) {
  std::string c = cidr;
  std::replace(c.begin(), c.end(), '/', '_');
  return "ccm:" + fnv1aHex(cluster) + ":" + c;
}

std::optional<std::string> Routes::cachedNodeName(const std::string& ip) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = node_by_ip_.find(ip);
  if (it == node_by_ip_.end()) {
    return std::nullopt;
  }
  if (std::chrono::steady_clock::now() - it->second.second > kNodeNameTtl) {
    return std::nullopt;
  }
  return it->second.first;
}

sdk::Status Routes::refreshNodeNames(const sdk::Call& call) {
  std::map<std::string, std::string> found;
  CCM_SDK_RETURN_IF_ERROR(nova_.listServers(call, [&](const Server& s) {
    for (const NovaAddress& a : s.addresses) {
      found[a.addr] = s.name;
    }
    if (!s.access_ipv4.empty()) {
      found[s.access_ipv4] = s.name;
    }
  }));
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [ip, name] : found) {
    node_by_ip_[ip] = {name, now};
  }
  return {};
}

sdk::Result<std::vector<sdk::Route>> Routes::list(const sdk::Call& call, const std::string& cluster) {
  CCM_SDK_ASSIGN_OR_RETURN(Router router, neutron_.getRouter(call, config_.route.router_id));
  std::set<std::string> tags(router.tags.begin(), router.tags.end());
  std::vector<RouterRoute> mine;
  for (const RouterRoute& r : router.routes) {
    if (!features_.tags || tags.count(routeTag(cluster, r.destination)) != 0) {
      mine.push_back(r);
    }
  }
  bool refreshed = false;
  std::vector<sdk::Route> out;
  for (const RouterRoute& r : mine) {
    auto name = cachedNodeName(r.nexthop);
    if (!name && !refreshed) {
      CCM_SDK_RETURN_IF_ERROR(refreshNodeNames(call));
      refreshed = true;
      name = cachedNodeName(r.nexthop);
    }
    sdk::Route k;
    k.name = r.destination;
    k.destination_cidr = r.destination;
    if (name) {
      k.target_node = *name;
    } else {
      // No server has the next hop any more: the route leads nowhere.
      k.target_node = r.nexthop;
      k.blackhole = true;
    }
    out.push_back(std::move(k));
  }
  return out;
}

sdk::Result<std::optional<Port>> Routes::nodePort(const sdk::Call& call, const std::string& ip) {
  std::set<std::string> networks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (router_networks_) {
      networks = *router_networks_;
    }
  }
  if (networks.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(
        std::vector<Port> router_ports,
        neutron_.listPorts(call, "device_id=" + urlEncode(config_.route.router_id)));
    for (const Port& p : router_ports) {
      networks.insert(p.network_id);
    }
    std::lock_guard<std::mutex> lock(mu_);
    router_networks_ = networks;
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<Port> ports,
                          neutron_.listPorts(call, "fixed_ips=" + urlEncode("ip_address=" + ip)));
  std::vector<Port> on_router;
  for (Port& p : ports) {
    if (networks.empty() || networks.count(p.network_id) != 0) {
      on_router.push_back(std::move(p));
    }
  }
  if (on_router.empty()) {
    return std::optional<Port>();
  }
  if (on_router.size() > 1) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "several ports on the router's networks hold address " + ip);
  }
  return std::optional<Port>(std::move(on_router.front()));
}

sdk::Result<std::string> Routes::nexthopFor(const sdk::Call& call, const sdk::Route& route) {
  int family = ipFamilyOf(route.destination_cidr);
  if (family == 0) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  "route destination \"" + route.destination_cidr + "\" is not a CIDR");
  }
  for (const sdk::NodeAddress& a : route.target_node_addresses) {
    if (a.type == "InternalIP" && ipFamilyOf(a.address) == family) {
      return a.address;
    }
  }
  // The host did not pass the node's addresses: ask Nova for the server of that name.
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<Server> servers, nova_.findByName(call, route.target_node));
  if (servers.size() == 1) {
    for (const NovaAddress& a : servers.front().addresses) {
      if (a.type != "floating" && ipFamilyOf(a.addr) == family) {
        return a.addr;
      }
    }
  }
  return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "no IPv" + std::to_string(family) +
                                              " InternalIP found for node " + route.target_node);
}

sdk::Status Routes::routerWrite(const sdk::Call& call, const std::function<sdk::Status()>& write) {
  std::lock_guard<std::mutex> lock(router_mu_);
  for (int attempt = 0;; ++attempt) {
    sdk::Status st = write();
    if (st.code() != CCM_STATUS_UNAVAILABLE || attempt + 1 >= kRouterWriteTries) {
      return st;
    }
    auto delay = st.retryAfter().count() > 0
                     ? st.retryAfter()
                     : backoffDelay(kRouterRetryBase, attempt, kRouterRetryCap);
    call.debug("Retrying a router write that Neutron failed",
               {{"router", config_.route.router_id},
                {"attempt", std::to_string(attempt + 1)},
                {"delay_ms", std::to_string(delay.count())},
                {"error", st.message()}});
    sdk::Status slept = sleepWithin(call, delay);
    if (!slept.ok()) {
      return st;  // out of time: the write's own error says more than the deadline
    }
  }
}

sdk::Status Routes::addRoute(const sdk::Call& call, const RouterRoute& r) {
  return routerWrite(call, [&] { return addRouteOnce(call, r); });
}

sdk::Status Routes::removeRoute(const sdk::Call& call, const RouterRoute& r) {
  return routerWrite(call, [&] { return removeRouteOnce(call, r); });
}

sdk::Status Routes::addRouteOnce(const sdk::Call& call, const RouterRoute& r) {
  if (features_.atomic) {
    return neutron_.changeExtraRoutes(call, config_.route.router_id, true, {r});
  }
  CCM_SDK_ASSIGN_OR_RETURN(Router router, neutron_.getRouter(call, config_.route.router_id));
  if (std::find(router.routes.begin(), router.routes.end(), r) != router.routes.end()) {
    return {};
  }
  router.routes.push_back(r);
  return neutron_.setRouterRoutes(call, config_.route.router_id, router.routes);
}

sdk::Status Routes::removeRouteOnce(const sdk::Call& call, const RouterRoute& r) {
  if (features_.atomic) {
    return neutron_.changeExtraRoutes(call, config_.route.router_id, false, {r});
  }
  CCM_SDK_ASSIGN_OR_RETURN(Router router, neutron_.getRouter(call, config_.route.router_id));
  auto it = std::find(router.routes.begin(), router.routes.end(), r);
  if (it == router.routes.end()) {
    return {};
  }
  router.routes.erase(it);
  return neutron_.setRouterRoutes(call, config_.route.router_id, router.routes);
}

sdk::Status Routes::create(const sdk::Call& call, const std::string& cluster, const sdk::Route& route) {
  CCM_SDK_ASSIGN_OR_RETURN(std::string nexthop, nexthopFor(call, route));
  auto cidr = Cidr::parse(route.destination_cidr);
  std::string dest = cidr->toString();
  RouterRoute r{dest, nexthop};
  CCM_SDK_RETURN_IF_ERROR(addRoute(call, r).withPrefix("adding route " + dest + " via " + nexthop));
  std::string tag = routeTag(cluster, dest);
  if (features_.tags) {
    sdk::Status st = routerWrite(
        call, [&] { return neutron_.addRouterTag(call, config_.route.router_id, tag); });
    if (!st.ok()) {
      (void)removeRoute(call, r);
      return st.withPrefix("tagging route " + dest);
    }
  }
  if (features_.address_pairs) {
    auto port = nodePort(call, nexthop);
    sdk::Status st = port.status();
    if (port.ok() && *port && (*port)->port_security_enabled.value_or(true)) {
      std::vector<AddressPair> pairs = (*port)->allowed_address_pairs;
      bool present = std::any_of(pairs.begin(), pairs.end(),
                                 [&](const AddressPair& p) { return p.ip_address == dest; });
      if (!present) {
        pairs.push_back({dest, ""});
        st = neutron_.setAllowedAddressPairs(call, (*port)->id, pairs);
      }
    } else if (port.ok() && !*port) {
      call.warning(
          "No port holds the route's next hop on the router's networks; the pod CIDR "
          "is not added to allowed_address_pairs",
          {{"node", route.target_node}, {"nexthop", nexthop}});
    }
    if (!st.ok()) {
      if (features_.tags) {
        (void)routerWrite(
            call, [&] { return neutron_.removeRouterTag(call, config_.route.router_id, tag); });
      }
      (void)removeRoute(call, r);
      return st.withPrefix("allowing " + dest + " on the port of node " + route.target_node);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    node_by_ip_[nexthop] = {route.target_node, std::chrono::steady_clock::now()};
  }
  call.info("Created route",
            {{"destination", dest}, {"nexthop", nexthop}, {"node", route.target_node}});
  return {};
}

sdk::Status Routes::remove(const sdk::Call& call, const std::string& cluster, const sdk::Route& route) {
  auto cidr = Cidr::parse(route.destination_cidr);
  if (!cidr) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  "route destination \"" + route.destination_cidr + "\" is not a CIDR");
  }
  std::string dest = cidr->toString();
  CCM_SDK_ASSIGN_OR_RETURN(Router router, neutron_.getRouter(call, config_.route.router_id));
  std::vector<RouterRoute> candidates;
  for (const RouterRoute& r : router.routes) {
    auto c = Cidr::parse(r.destination);
    if (c && *c == *cidr) {
      candidates.push_back(r);
    }
  }
  std::optional<RouterRoute> target;
  for (const RouterRoute& r : candidates) {
    bool match = route.blackhole ? r.nexthop == route.target_node
                                 : (r.nexthop == route.target_node ||
                                    cachedNodeName(r.nexthop) == route.target_node);
    if (match) {
      target = r;
    }
  }
  if (!target && candidates.size() == 1) {
    target = candidates.front();
  }
  if (target) {
    CCM_SDK_RETURN_IF_ERROR(removeRoute(call, *target).withPrefix("removing route " + dest));
  }
  bool still_routed =
      std::count_if(candidates.begin(), candidates.end(),
                    [&](const RouterRoute& r) { return !target || !(r == *target); }) > 0;
  if (features_.tags && !still_routed) {
    std::string tag = routeTag(cluster, dest);
    CCM_SDK_RETURN_IF_ERROR(routerWrite(
        call, [&] { return neutron_.removeRouterTag(call, config_.route.router_id, tag); }));
  }
  if (target && !route.blackhole && features_.address_pairs) {
    CCM_SDK_ASSIGN_OR_RETURN(std::optional<Port> port, nodePort(call, target->nexthop));
    if (port) {
      std::vector<AddressPair> pairs;
      for (const AddressPair& p : port->allowed_address_pairs) {
        if (p.ip_address != dest) {
          pairs.push_back(p);
        }
      }
      if (pairs.size() != port->allowed_address_pairs.size()) {
        CCM_SDK_RETURN_IF_ERROR(neutron_.setAllowedAddressPairs(call, port->id, pairs));
      }
    }
  }
  call.info("Deleted route", {{"destination", dest}, {"node", route.target_node}});
  return {};
}

}  // namespace ccm::openstack
