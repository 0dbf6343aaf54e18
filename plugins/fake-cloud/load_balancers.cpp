// LoadBalancers: creating, updating and deleting the fake cloud's load balancers.
#include "plugins/fake-cloud/load_balancers.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>
#include <vector>

namespace ccm::fakecloud {
namespace {

sdk::LoadBalancerStatus statusOf(const LoadBalancerRecord& lb) {
  sdk::LoadBalancerStatus s;
  sdk::Ingress in;
  in.ip = lb.ip;
  in.hostname = lb.hostname;
  s.ingress.push_back(std::move(in));
  // Written back on the Service by the host (ABI 1.1), as real clouds' providers do.
  s.annotations.emplace_back(std::string(kAnnotationDomain) + "/load-balancer-id", lb.name);
  return s;
}

bool sameNames(const NodeNames& have, std::span<const sdk::NodeView> nodes) {
  return have != nullptr && have->size() == nodes.size() &&
         std::equal(nodes.begin(), nodes.end(), have->begin(),
                    [](const sdk::NodeView& n, const std::string& s) { return n.name() == s; });
}

}  // namespace

LoadBalancers::LoadBalancers(StateStore& store, Ipv4Block pool, std::string pool_cidr,
                             std::string hostname_suffix)
    : store_(store),
      pool_(pool),
      pool_cidr_(std::move(pool_cidr)),
      hostname_suffix_(std::move(hostname_suffix)) {}

std::string LoadBalancers::defaultName(std::string_view uid) {
  std::string out = "a";
  for (char c : uid) {
    if (c != '-') {
      out.push_back(c);
    }
  }
  if (out.size() > 32) {
    out.resize(32);
  }
  return out;
}

std::optional<sdk::LoadBalancerStatus> LoadBalancers::get(const sdk::ServiceView& svc) {
  std::string name = defaultName(svc.uid());
  return store_.transact([&](CloudState& s, bool&) -> std::optional<sdk::LoadBalancerStatus> {
    auto it = s.load_balancers.find(name);
    if (it == s.load_balancers.end()) {
      return std::nullopt;
    }
    return statusOf(it->second);
  });
}

sdk::Result<sdk::LoadBalancerStatus> LoadBalancers::ensure(std::string_view cluster,
                                                           const sdk::ServiceView& svc,
                                                           std::span<const sdk::NodeView> nodes) {
  if (svc.ports().empty()) {
    return sdk::Error::invalidArgument("fake-cloud: service " + std::string(svc.namespaceName()) +
                                       "/" + std::string(svc.name()) + " has no ports");
  }
  std::string name = defaultName(svc.uid());
  return store_.transact([&](CloudState& s, bool& changed) -> sdk::Result<sdk::LoadBalancerStatus> {
    auto it = s.load_balancers.find(name);
    if (it == s.load_balancers.end()) {
      auto ip = allocateIp(s, svc.loadBalancerIp());
      if (!ip) {
        if (!svc.loadBalancerIp().empty()) {
          return sdk::Error::invalidArgument("fake-cloud: loadBalancerIP " +
                                             std::string(svc.loadBalancerIp()) +
                                             " is not a free address of pool " + pool_cidr_);
        }
        return sdk::Error::throttled(
            "fake-cloud: load balancer address pool " + pool_cidr_ + " is exhausted",
            std::chrono::seconds(30));
      }
      LoadBalancerRecord lb;
      lb.name = name;
      lb.ip = *ip;
      if (!hostname_suffix_.empty()) {
        lb.hostname = name + "." + hostname_suffix_;
      }
      it = s.load_balancers.emplace(name, std::move(lb)).first;
      ++s.lb_creates;
    }
    LoadBalancerRecord& lb = it->second;
    lb.cluster = std::string(cluster);
    lb.namespace_name = std::string(svc.namespaceName());
    lb.service = std::string(svc.name());
    lb.uid = std::string(svc.uid());
    lb.ports.clear();
    for (const auto& p : svc.ports()) {
      lb.ports.push_back({std::string(p.name), std::string(p.protocol), p.port, p.node_port});
    }
    lb.nodes = namesOf(lb, nodes);
    lb.source_ranges.clear();
    for (auto r : svc.sourceRanges()) {
      lb.source_ranges.emplace_back(r);
    }
    ++lb.ensures;
    changed = true;
    return statusOf(lb);
  });
}

sdk::Status LoadBalancers::updateNodes(const sdk::ServiceView& svc,
                                       std::span<const sdk::NodeView> nodes) {
  std::string name = defaultName(svc.uid());
  return store_.transact([&](CloudState& s, bool& changed) -> sdk::Status {
    auto it = s.load_balancers.find(name);
    if (it == s.load_balancers.end()) {
      return sdk::Error::notFound("fake-cloud: load balancer " + name + " does not exist");
    }
    it->second.nodes = namesOf(it->second, nodes);
    ++it->second.host_updates;
    changed = true;
    return {};
  });
}

bool LoadBalancers::remove(const sdk::ServiceView& svc) {
  std::string name = defaultName(svc.uid());
  return store_.transact([&](CloudState& s, bool& changed) {
    bool deleted = s.load_balancers.erase(name) > 0;
    if (deleted) {
      ++s.lb_deletes;
      changed = true;
    }
    return deleted;
  });
}

// The names of `nodes`: the load balancer's own list, or the last list made, when they are
// the same (a node set change reaches every balancer with the same nodes), else a new list.
NodeNames LoadBalancers::namesOf(const LoadBalancerRecord& lb,
                                 std::span<const sdk::NodeView> nodes) {
  if (sameNames(lb.nodes, nodes)) {
    return lb.nodes;
  }
  if (!sameNames(last_nodes_, nodes)) {
    auto names = std::make_shared<std::vector<std::string>>();
    names->reserve(nodes.size());
    for (const auto& n : nodes) {
      names->emplace_back(n.name());
    }
    last_nodes_ = std::move(names);
  }
  return last_nodes_;
}

// The address for a new load balancer: `wanted` when it is a free host address of the pool
// (nothing when it is not), else the lowest free one (nothing when the pool is full).
std::optional<std::string> LoadBalancers::allocateIp(const CloudState& state,
                                                     std::string_view wanted) const {
  std::set<std::string> used;
  for (const auto& [name, lb] : state.load_balancers) {
    used.insert(lb.ip);
  }
  if (!wanted.empty()) {
    auto w = parseIpv4(wanted);
    if (!w || *w <= pool_.base || *w >= pool_.base + pool_.size - 1 ||
        used.count(std::string(wanted)) > 0) {
      return std::nullopt;
    }
    return std::string(wanted);
  }
  for (uint32_t i = 1; i + 1 < pool_.size; ++i) {
    std::string ip = formatIpv4(pool_.base + i);
    if (used.count(ip) == 0) {
      return ip;
    }
  }
  return std::nullopt;
}

}  // namespace ccm::fakecloud
