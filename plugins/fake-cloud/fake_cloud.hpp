// FakeCloud: the in-memory cloud behind the fake-cloud provider, as one API with an operation
// per provider call. Every operation is first admitted by the FaultInjector (latency, errors
// and throttling, as the current World from WorldSource asks), then answered by the part that
// owns it: instances.hpp from the World; LoadBalancers and Routes from the StateStore.
//
// THREAD: every public method may be called from any thread, concurrently.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/provider.hpp"
#include "plugins/fake-cloud/config.hpp"
#include "plugins/fake-cloud/fault_injector.hpp"
#include "plugins/fake-cloud/ipv4.hpp"
#include "plugins/fake-cloud/load_balancers.hpp"
#include "plugins/fake-cloud/routes.hpp"
#include "plugins/fake-cloud/state_store.hpp"
#include "plugins/fake-cloud/world_source.hpp"

namespace ccm::fakecloud {

class FakeCloud {
 public:
  // Throws ConfigError when the config is unusable (bad address blocks, unreadable files).
  FakeCloud(Config config, const sdk::Host& host);

  sdk::Result<sdk::Existence> exists(const sdk::Call& call, const sdk::NodeView& node);
  sdk::Result<sdk::Power> shutdown(const sdk::Call& call, const sdk::NodeView& node);
  sdk::Result<std::optional<sdk::InstanceMetadata>> metadata(const sdk::Call& call,
                                                             const sdk::NodeView& node);
  sdk::Result<std::vector<sdk::Result<sdk::InstanceMetadata>>> metadataBatch(
      const sdk::Call& call, std::span<const sdk::NodeView> nodes);

  sdk::Result<std::optional<sdk::LoadBalancerStatus>> getLoadBalancer(const sdk::Call& call,
                                                                      std::string_view cluster,
                                                                      const sdk::ServiceView& svc);
  sdk::Result<std::string> loadBalancerName(const sdk::Call& call, std::string_view cluster,
                                            const sdk::ServiceView& svc);
  sdk::Result<sdk::LoadBalancerStatus> ensureLoadBalancer(const sdk::Call& call,
                                                          std::string_view cluster,
                                                          const sdk::ServiceView& svc,
                                                          std::span<const sdk::NodeView> nodes);
  sdk::Status updateLoadBalancer(const sdk::Call& call, std::string_view cluster,
                                 const sdk::ServiceView& svc, std::span<const sdk::NodeView> nodes);
  sdk::Status deleteLoadBalancer(const sdk::Call& call, std::string_view cluster,
                                 const sdk::ServiceView& svc);

  sdk::Result<std::vector<sdk::Route>> listRoutes(const sdk::Call& call, std::string_view cluster);
  sdk::Status createRoute(const sdk::Call& call, std::string_view cluster,
                          std::string_view name_hint, const sdk::Route& route);
  sdk::Status deleteRoute(const sdk::Call& call, std::string_view cluster, const sdk::Route& route);

  // The settings fixed at creation (capabilities, limits, files, address pool); the World
  // may change since (reconfigure, cloudFile).
  const Config& config() const { return config_; }

  // Applies a new config (reconfigure): its World replaces the current one. Throws
  // ConfigError, naming the key, when it changes a setting fixed at creation or has a bad
  // address block; nothing changes then. THREAD: any, one at a time.
  void reconfigure(const Config& next);

 private:
  // Answers one call of operation `op` (about `node`, for operations on one node): the
  // FaultInjector admits it under the current World, then answer(world) answers it.
  template <typename Answer>
  auto serve(const sdk::Call& call, std::string_view op, std::string_view node, Answer&& answer);

  Config config_;
  Ipv4Block pool_;  // loadBalancer.ipPool
  WorldSource world_;
  FaultInjector faults_;
  StateStore store_;
  LoadBalancers load_balancers_;
  Routes routes_;
};

}  // namespace ccm::fakecloud
