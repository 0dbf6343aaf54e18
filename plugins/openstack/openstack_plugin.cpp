// The ABI face of the openstack provider, through the plugin SDK (ccm/provider.hpp): one
// sdk::Provider whose capabilities are thin adapters from the SDK's views to the core, which
// takes owning copies (sdk::Node, sdk::Service) and answers in the SDK's result types. The
// SDK owns the C tables, the entry point and the exception barrier.
#include <curl/curl.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/provider.hpp"
#include "plugins/openstack/openstack_provider.hpp"

namespace ccm::openstack {
namespace {

constexpr uint32_t kInstancesConcurrency = 16;
constexpr uint32_t kBatchConcurrency = 4;
constexpr uint32_t kMaxBatchSize = 500;
constexpr uint32_t kLoadBalancerConcurrency = 8;
constexpr uint32_t kRoutesConcurrency = 8;

// Owning copies: the core keeps the nodes across the sub-steps of a call.
std::vector<sdk::Node> nodesOf(std::span<const sdk::NodeView> nodes) {
  std::vector<sdk::Node> out;
  out.reserve(nodes.size());
  for (const auto& n : nodes) {
    out.push_back(n.toNode());
  }
  return out;
}

class InstancesCapability final : public sdk::Instances {
 public:
  explicit InstancesCapability(ccm::openstack::Instances& core) : core_(core) {}

  sdk::Result<sdk::Existence> instanceExists(const sdk::Call& call,
                                             const sdk::NodeView& node) override {
    auto r = core_.exists(call, node.toNode());
    if (!r.ok()) {
      return r.error();
    }
    return *r == Existence::Exists ? sdk::Existence::Exists : sdk::Existence::NotFound;
  }
  sdk::Result<sdk::Power> instanceShutdown(const sdk::Call& call,
                                           const sdk::NodeView& node) override {
    auto r = core_.shutdown(call, node.toNode());
    if (!r.ok()) {
      return r.error();
    }
    return *r == Power::Shutdown ? sdk::Power::Shutdown : sdk::Power::Running;
  }
  sdk::Result<std::optional<sdk::InstanceMetadata>> instanceMetadata(
      const sdk::Call& call, const sdk::NodeView& node) override {
    auto r = core_.metadata(call, node.toNode());
    if (!r.ok()) {
      return r.error();
    }
    return std::optional<sdk::InstanceMetadata>(*r);
  }
  uint32_t maxConcurrency() const override { return kInstancesConcurrency; }

 private:
  ccm::openstack::Instances& core_;
};

class BatchCapability final : public sdk::InstancesBatch {
 public:
  explicit BatchCapability(ccm::openstack::Instances& core) : core_(core) {}

  sdk::Result<std::vector<sdk::Result<sdk::InstanceMetadata>>> instanceMetadataBatch(
      const sdk::Call& call, std::span<const sdk::NodeView> nodes) override {
    auto results = core_.metadataBatch(call, nodesOf(nodes));
    std::vector<sdk::Result<sdk::InstanceMetadata>> out;
    for (auto& r : results) {
      if (r.ok()) {
        out.emplace_back(*r);
      } else {
        out.emplace_back(r.error());
      }
    }
    return out;
  }
  uint32_t maxBatchSize() const override { return kMaxBatchSize; }
  uint32_t maxConcurrency() const override { return kBatchConcurrency; }

 private:
  ccm::openstack::Instances& core_;
};

class LoadBalancerCapability final : public sdk::LoadBalancer {
 public:
  explicit LoadBalancerCapability(LoadBalancers& core) : core_(core) {}

  sdk::Result<std::optional<sdk::LoadBalancerStatus>> getLoadBalancer(
      const sdk::Call& call, std::string_view cluster, const sdk::ServiceView& svc) override {
    auto r = core_.get(call, std::string(cluster), svc.toService());
    if (!r.ok()) {
      return r.error();
    }
    if (!r->has_value()) {
      return std::optional<sdk::LoadBalancerStatus>();
    }
    return std::optional<sdk::LoadBalancerStatus>(**r);
  }
  sdk::Result<std::string> getLoadBalancerName(const sdk::Call&, std::string_view cluster,
                                               const sdk::ServiceView& svc) override {
    return core_.name(std::string(cluster), svc.toService());
  }
  sdk::Result<sdk::LoadBalancerStatus> ensureLoadBalancer(
      const sdk::Call& call, std::string_view cluster, const sdk::ServiceView& svc,
      std::span<const sdk::NodeView> nodes) override {
    auto r = core_.ensure(call, std::string(cluster), svc.toService(), nodesOf(nodes));
    if (!r.ok()) {
      return r.error();
    }
    return *r;
  }
  sdk::Status updateLoadBalancer(const sdk::Call& call, std::string_view cluster,
                                 const sdk::ServiceView& svc,
                                 std::span<const sdk::NodeView> nodes) override {
    return core_.update(call, std::string(cluster), svc.toService(), nodesOf(nodes));
  }
  sdk::Status ensureLoadBalancerDeleted(const sdk::Call& call, std::string_view cluster,
                                        const sdk::ServiceView& svc) override {
    return core_.remove(call, std::string(cluster), svc.toService());
  }
  uint32_t maxConcurrency() const override { return kLoadBalancerConcurrency; }

 private:
  LoadBalancers& core_;
};

class RoutesCapability final : public sdk::Routes {
 public:
  explicit RoutesCapability(ccm::openstack::Routes& core) : core_(core) {}

  sdk::Result<std::vector<sdk::Route>> listRoutes(const sdk::Call& call,
                                                  std::string_view cluster) override {
    return core_.list(call, std::string(cluster));
  }
  // The name hint (the node's UID) is not used: routes are named after their destination,
  // as OCCM names them.
  sdk::Status createRoute(const sdk::Call& call, std::string_view cluster, std::string_view,
                          const sdk::Route& route) override {
    return core_.create(call, std::string(cluster), route);
  }
  sdk::Status deleteRoute(const sdk::Call& call, std::string_view cluster,
                          const sdk::Route& route) override {
    return core_.remove(call, std::string(cluster), route);
  }
  uint32_t maxConcurrency() const override { return kRoutesConcurrency; }

 private:
  ccm::openstack::Routes& core_;
};

}  // namespace

// The provider the SDK's tables point at.
class OpenStackPlugin final : public sdk::Provider, public sdk::Reconfigurable {
 public:
  // The call carries the start-up deadline (--provider-start-timeout): authenticating to an
  // unreachable cloud ends with DEADLINE_EXCEEDED, and a shutdown while starting cancels it.
  static sdk::Result<std::unique_ptr<OpenStackPlugin>> create(const sdk::Call& call,
                                                              const sdk::Host& host,
                                                              std::string_view config) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    auto core = OpenStackProvider::create(call, host, config);
    if (!core.ok()) {
      return core.error();
    }
    return std::unique_ptr<OpenStackPlugin>(new OpenStackPlugin(std::move(core).value()));
  }

  // A changed cloud.conf: new credentials take effect for the next requests; anything else
  // that changed is refused and the running settings stay.
  sdk::Status reconfigure(const sdk::Call& call, std::string_view config) override {
    return core_->reconfigure(call, sdk::Host::instance(), config);
  }

  sdk::Instances* instances() override { return &instances_; }
  sdk::InstancesBatch* instancesBatch() override { return &batch_; }
  sdk::LoadBalancer* loadBalancer() override { return lb_ ? lb_.get() : nullptr; }
  sdk::Routes* routes() override { return routes_ ? routes_.get() : nullptr; }

 private:
  explicit OpenStackPlugin(std::unique_ptr<OpenStackProvider> core)
      : core_(std::move(core)), instances_(core_->instances()), batch_(core_->instances()) {
    if (core_->loadBalancers() != nullptr) {
      lb_ = std::make_unique<LoadBalancerCapability>(*core_->loadBalancers());
    }
    if (core_->routes() != nullptr) {
      routes_ = std::make_unique<RoutesCapability>(*core_->routes());
    }
  }

  std::unique_ptr<OpenStackProvider> core_;
  InstancesCapability instances_;
  BatchCapability batch_;
  std::unique_ptr<LoadBalancerCapability> lb_;
  std::unique_ptr<RoutesCapability> routes_;
};

}  // namespace ccm::openstack

// ABI 1.1 declarations: OCCM's providerID scheme, annotation domain and metric namespace (so
// its openstack_api_* metrics keep OCCM's names).
CCM_SDK_PROVIDER_DESCRIBED(ccm::openstack::OpenStackPlugin,
                           (ccm::sdk::PluginDescription{
                               .name = "openstack",
                               .version = "0.1.0",
                               .provider_id_prefix = "openstack://",
                               .annotation_domain = "loadbalancer.openstack.org",
                               .metric_namespace = "openstack"}))
