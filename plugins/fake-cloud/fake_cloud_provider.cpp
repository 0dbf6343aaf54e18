// The fake-cloud provider plugin: the ABI face (through the C++ SDK) of FakeCloud.
#include <memory>

#include "ccm/provider.hpp"
#include "plugins/fake-cloud/config.hpp"
#include "plugins/fake-cloud/fake_cloud.hpp"

namespace ccm::fakecloud {
namespace {

class FakeCloudProvider final : public sdk::Provider,
                                public sdk::Instances,
                                public sdk::InstancesBatch,
                                public sdk::LoadBalancer,
                                public sdk::Routes,
                                public sdk::Reconfigurable {
 public:
  FakeCloudProvider(std::unique_ptr<FakeCloud> cloud, const sdk::Host& host)
      : cloud_(std::move(cloud)), host_(host) {}

  static sdk::Result<std::unique_ptr<FakeCloudProvider>> create(const sdk::Host& host,
                                                                std::string_view config) {
    try {
      auto cloud = std::make_unique<FakeCloud>(parseConfig(config), host);
      const Config& c = cloud->config();
      host.info("fake-cloud: ready (region " + c.world.region + ", " +
                std::to_string(c.world.instances.size()) + " listed instances" +
                (c.world.auto_instances.enabled ? ", automatic instances" : "") +
                (c.state_file.empty() ? "" : ", state file " + c.state_file) + ")");
      return std::make_unique<FakeCloudProvider>(std::move(cloud), host);
    } catch (const ConfigError& e) {
      return sdk::Error::invalidArgument(std::string("fake-cloud config: ") + e.what());
    }
  }

  // A changed --cloud-config: the World (instances, region, faults, ...) takes effect for
  // the next calls; a config that does not parse, or changes a setting fixed at creation, is
  // refused and the current one stays.
  sdk::Status reconfigure(const sdk::Call& /*call*/, std::string_view config) override {
    try {
      Config next = parseConfig(config);
      cloud_->reconfigure(next);
      host_.info("fake-cloud: reconfigured (region " + next.world.region + ", " +
                 std::to_string(next.world.instances.size()) + " listed instances)");
      return {};
    } catch (const ConfigError& e) {
      return sdk::Error::invalidArgument(std::string("fake-cloud config: ") + e.what());
    }
  }

  sdk::Instances* instances() override {
    return cloud_->config().capabilities.instances ? this : nullptr;
  }
  sdk::InstancesBatch* instancesBatch() override {
    return cloud_->config().capabilities.batch ? this : nullptr;
  }
  sdk::LoadBalancer* loadBalancer() override {
    return cloud_->config().capabilities.load_balancer ? this : nullptr;
  }
  sdk::Routes* routes() override { return cloud_->config().capabilities.routes ? this : nullptr; }

  // Instances and InstancesBatch both declare these; one answer serves both.
  uint32_t maxConcurrency() const override { return cloud_->config().max_concurrency; }
  bool wantsObjectJson() const override { return false; }

  sdk::Result<sdk::Existence> instanceExists(const sdk::Call& call,
                                             const sdk::NodeView& node) override {
    return cloud_->exists(call, node);
  }
  sdk::Result<sdk::Power> instanceShutdown(const sdk::Call& call,
                                           const sdk::NodeView& node) override {
    return cloud_->shutdown(call, node);
  }
  sdk::Result<std::optional<sdk::InstanceMetadata>> instanceMetadata(
      const sdk::Call& call, const sdk::NodeView& node) override {
    return cloud_->metadata(call, node);
  }

  sdk::Result<std::vector<sdk::Result<sdk::InstanceMetadata>>> instanceMetadataBatch(
      const sdk::Call& call, std::span<const sdk::NodeView> nodes) override {
    return cloud_->metadataBatch(call, nodes);
  }
  uint32_t maxBatchSize() const override { return cloud_->config().max_batch_size; }

  sdk::Result<std::optional<sdk::LoadBalancerStatus>> getLoadBalancer(
      const sdk::Call& call, std::string_view cluster, const sdk::ServiceView& svc) override {
    return cloud_->getLoadBalancer(call, cluster, svc);
  }
  sdk::Result<std::string> getLoadBalancerName(const sdk::Call& call, std::string_view cluster,
                                               const sdk::ServiceView& svc) override {
    return cloud_->loadBalancerName(call, cluster, svc);
  }
  sdk::Result<sdk::LoadBalancerStatus> ensureLoadBalancer(
      const sdk::Call& call, std::string_view cluster, const sdk::ServiceView& svc,
      std::span<const sdk::NodeView> nodes) override {
    return cloud_->ensureLoadBalancer(call, cluster, svc, nodes);
  }
  sdk::Status updateLoadBalancer(const sdk::Call& call, std::string_view cluster,
                                 const sdk::ServiceView& svc,
                                 std::span<const sdk::NodeView> nodes) override {
    return cloud_->updateLoadBalancer(call, cluster, svc, nodes);
  }
  sdk::Status ensureLoadBalancerDeleted(const sdk::Call& call, std::string_view cluster,
                                        const sdk::ServiceView& svc) override {
    return cloud_->deleteLoadBalancer(call, cluster, svc);
  }

  sdk::Result<std::vector<sdk::Route>> listRoutes(const sdk::Call& call,
                                                  std::string_view cluster) override {
    return cloud_->listRoutes(call, cluster);
  }
  sdk::Status createRoute(const sdk::Call& call, std::string_view cluster,
                          std::string_view name_hint, const sdk::Route& route) override {
    return cloud_->createRoute(call, cluster, name_hint, route);
  }
  sdk::Status deleteRoute(const sdk::Call& call, std::string_view cluster,
                          const sdk::Route& route) override {
    return cloud_->deleteRoute(call, cluster, route);
  }

 private:
  std::unique_ptr<FakeCloud> cloud_;
  const sdk::Host& host_;
};

}  // namespace
}  // namespace ccm::fakecloud

CCM_SDK_PROVIDER(ccm::fakecloud::FakeCloudProvider, "fake-cloud", "0.1.0")
