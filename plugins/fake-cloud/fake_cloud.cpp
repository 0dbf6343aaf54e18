// FakeCloud: each provider operation, admitted by the FaultInjector and answered by the part of
// the cloud that owns it.
#include "plugins/fake-cloud/fake_cloud.hpp"

#include <type_traits>
#include <utility>

#include "plugins/fake-cloud/instances.hpp"

namespace ccm::fakecloud {
namespace {

// The address pool, after checking every address block of the config (the cloud file's
// automatic instances are not checked: a bad block there derives no addresses).
Ipv4Block checkedAddressPool(const Config& config) {
  auto pool = parseIpv4Block(config.lb_ip_pool);
  if (!pool) {
    throw ConfigError("loadBalancer.ipPool: \"" + config.lb_ip_pool +
                      "\" is not an IPv4 CIDR between /8 and /30");
  }
  const AutoInstances& a = config.world.auto_instances;
  for (const auto& cidr : {a.internal_cidr, a.external_cidr}) {
    if (!cidr.empty() && !parseIpv4Block(cidr)) {
      throw ConfigError("autoInstances: \"" + cidr + "\" is not an IPv4 CIDR between /8 and /30");
    }
  }
  return *pool;
}

// The World's extra annotations (lbAnnotations, lbRemovedAnnotations) on a status.
void addWorldAnnotations(sdk::LoadBalancerStatus& status, const World& world) {
  for (const auto& kv : world.lb_annotations) {
    status.annotations.push_back(kv);
  }
  for (const auto& key : world.lb_removed_annotations) {
    status.removed_annotations.push_back(key);
  }
}

}  // namespace

// The members are built in the order the config is checked in: address blocks, cloud file,
// state file.
FakeCloud::FakeCloud(Config config, const sdk::Host& host)
    : config_(std::move(config)),
      pool_(checkedAddressPool(config_)),
      world_(config_, host),
      faults_(host, world_.lastRead()),
      store_(config_.state_file, host),
      load_balancers_(store_, pool_, config_.lb_ip_pool, config_.lb_hostname_suffix),
      routes_(store_) {}

template <typename Answer>
auto FakeCloud::serve(const sdk::Call& call, std::string_view op, std::string_view node,
                      Answer&& answer) {
  using Reply = std::invoke_result_t<Answer, const World&>;
  std::shared_ptr<const World> world = world_.current();
  if (auto refused = faults_.admit(call, op, node, world)) {
    return Reply(*std::move(refused));
  }
  return Reply(std::forward<Answer>(answer)(*world));
}

// ---- instances -------------------------------------------------------------------------------

sdk::Result<sdk::Existence> FakeCloud::exists(const sdk::Call& call, const sdk::NodeView& node) {
  return serve(call, "exists", node.name(),
               [&](const World& w) { return instanceExists(w, node); });
}

sdk::Result<sdk::Power> FakeCloud::shutdown(const sdk::Call& call, const sdk::NodeView& node) {
  return serve(call, "shutdown", node.name(),
               [&](const World& w) { return instancePower(w, node); });
}

sdk::Result<std::optional<sdk::InstanceMetadata>> FakeCloud::metadata(const sdk::Call& call,
                                                                      const sdk::NodeView& node) {
  return serve(call, "metadata", node.name(),
               [&](const World& w) -> sdk::Result<std::optional<sdk::InstanceMetadata>> {
                 auto m = instanceMetadata(w, node);
                 if (!m.ok()) {
                   return m.error();
                 }
                 return std::optional<sdk::InstanceMetadata>(std::move(m).value());
               });
}

sdk::Result<std::vector<sdk::Result<sdk::InstanceMetadata>>> FakeCloud::metadataBatch(
    const sdk::Call& call, std::span<const sdk::NodeView> nodes) {
  return serve(call, "batch", "", [&](const World& w) {
    std::vector<sdk::Result<sdk::InstanceMetadata>> out;
    out.reserve(nodes.size());
    for (const auto& node : nodes) {
      // Per-node faults of the "metadata" operation apply inside a batch too.
      if (auto fault = batchNodeFault(w, node.name())) {
        out.emplace_back(*std::move(fault));
      } else {
        out.push_back(instanceMetadata(w, node));
      }
    }
    return sdk::Result(std::move(out));
  });
}

// ---- load balancers --------------------------------------------------------------------------

sdk::Result<std::optional<sdk::LoadBalancerStatus>> FakeCloud::getLoadBalancer(
    const sdk::Call& call, std::string_view, const sdk::ServiceView& svc) {
  return serve(call, "getLoadBalancer", "", [&](const World& w) {
    auto status = load_balancers_.get(svc);
    if (status) {
      addWorldAnnotations(*status, w);
    }
    return sdk::Result(std::move(status));
  });
}

sdk::Result<std::string> FakeCloud::loadBalancerName(const sdk::Call& call, std::string_view,
                                                     const sdk::ServiceView& svc) {
  return serve(call, "loadBalancerName", "",
               [&](const World&) { return sdk::Result(LoadBalancers::defaultName(svc.uid())); });
}

sdk::Result<sdk::LoadBalancerStatus> FakeCloud::ensureLoadBalancer(
    const sdk::Call& call, std::string_view cluster, const sdk::ServiceView& svc,
    std::span<const sdk::NodeView> nodes) {
  return serve(call, "ensureLoadBalancer", "", [&](const World& w) {
    auto status = load_balancers_.ensure(cluster, svc, nodes);
    if (status.ok()) {
      addWorldAnnotations(status.value(), w);
    }
    return status;
  });
}

sdk::Status FakeCloud::updateLoadBalancer(const sdk::Call& call, std::string_view,
                                          const sdk::ServiceView& svc,
                                          std::span<const sdk::NodeView> nodes) {
  return serve(call, "updateLoadBalancer", "",
               [&](const World&) { return load_balancers_.updateNodes(svc, nodes); });
}

sdk::Status FakeCloud::deleteLoadBalancer(const sdk::Call& call, std::string_view,
                                          const sdk::ServiceView& svc) {
  return serve(call, "deleteLoadBalancer", "", [&](const World&) {
    load_balancers_.remove(svc);
    return sdk::Status();  // deleting what is gone already succeeds
  });
}

// ---- routes ----------------------------------------------------------------------------------

sdk::Result<std::vector<sdk::Route>> FakeCloud::listRoutes(const sdk::Call& call,
                                                           std::string_view cluster) {
  return serve(call, "listRoutes", "",
               [&](const World&) { return sdk::Result(routes_.list(cluster)); });
}

sdk::Status FakeCloud::createRoute(const sdk::Call& call, std::string_view cluster,
                                   std::string_view name_hint, const sdk::Route& route) {
  return serve(call, "createRoute", route.target_node,
               [&](const World&) { return routes_.create(cluster, name_hint, route); });
}

sdk::Status FakeCloud::deleteRoute(const sdk::Call& call, std::string_view cluster,
                                   const sdk::Route& route) {
  return serve(call, "deleteRoute", route.target_node, [&](const World&) {
    routes_.remove(cluster, route);
    return sdk::Status();  // deleting what is gone already succeeds
  });
}

}  // namespace ccm::fakecloud
