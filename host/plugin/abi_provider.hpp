// AbiProvider: a Provider backed by a plugin loaded through the C ABI.
//
// It creates the provider with the --cloud-config bytes, fetches and checks its capabilities,
// and turns every C call into a typed result: deadlines enforced (CallRunner), the declared
// concurrency limits honoured, output validated, exceptions stopped at the boundary, unknown
// status codes read as INTERNAL, metrics recorded per call.
//
// THREAD: create() and the destructor on the main thread; every other method from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "host/plugin/abi_input.hpp"
#include "host/plugin/call_runner.hpp"
#include "host/plugin/host_services.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "host/plugin/provider.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"

namespace ccm::plugin {

struct ProviderOptions {
  // How long one provider call may take (per capability).
  std::chrono::milliseconds instances_timeout{30000};
  std::chrono::milliseconds batch_timeout{60000};
  std::chrono::milliseconds load_balancer_timeout{120000};
  std::chrono::milliseconds routes_timeout{60000};
  // How long past its deadline a call may still finish before it is abandoned.
  std::chrono::milliseconds grace{1000};
  // Concurrency when the plugin declares no limit.
  uint32_t default_concurrency = 256;
  metrics::Registry* registry = nullptr;
  const Clock* clock = nullptr;  // the real clock when null
};

class AbiProvider final : public Provider {
 public:
  // Creates the provider from config (the bytes of --cloud-config; config_source names the
  // file for messages). Errors name the plugin and, for a refused config, carry its message.
  static StatusOr<std::unique_ptr<AbiProvider>> create(std::shared_ptr<const LoadedPlugin> plugin,
                                                       std::string_view config,
                                                       std::string_view config_source,
                                                       ProviderOptions options);
  ~AbiProvider() override;

  const ProviderInfo& info() const override { return info_; }

  StatusOr<Existence> instanceExists(const NodeRef& node) override;
  StatusOr<Power> instanceShutdown(const NodeRef& node) override;
  StatusOr<std::optional<InstanceMetadata>> instanceMetadata(const NodeRef& node) override;
  StatusOr<std::vector<MetadataResult>> instanceMetadataBatch(
      std::span<const NodeRef> nodes) override;

  StatusOr<std::optional<LoadBalancerStatus>> getLoadBalancer(std::string_view cluster_name,
                                                              const ServiceRef& service) override;
  StatusOr<std::string> getLoadBalancerName(std::string_view cluster_name,
                                            const ServiceRef& service) override;
  StatusOr<LoadBalancerStatus> ensureLoadBalancer(std::string_view cluster_name,
                                                  const ServiceRef& service,
                                                  std::span<const NodeRef> nodes) override;
  Status updateLoadBalancer(std::string_view cluster_name, const ServiceRef& service,
                            std::span<const NodeRef> nodes) override;
  Status ensureLoadBalancerDeleted(std::string_view cluster_name,
                                   const ServiceRef& service) override;

  StatusOr<std::vector<Route>> listRoutes(std::string_view cluster_name) override;
  Status createRoute(std::string_view cluster_name, std::string_view name_hint,
                     const Route& route) override;
  Status deleteRoute(std::string_view cluster_name, const Route& route) override;

  void cancelAll() override;

 private:
  enum class Cap { Instances, Batch, LoadBalancer, Routes };

  struct Invocation {
    Status status;
    std::shared_ptr<CallState> state;  // the call's outputs (read after it returned)
    std::shared_ptr<AbiInput> input;   // the call's inputs and out-parameters
  };

  // Converts a call's inputs into the arena (on the caller's thread) and returns the closure
  // that makes the C call; the closure may only reference arena memory.
  using Prepare = std::function<std::function<ccm_status()>(AbiInput&, const ccm_call*)>;

  AbiProvider(std::shared_ptr<const LoadedPlugin> plugin, ProviderOptions options);

  // Runs one call: builds its ccm_call and inputs, runs it on the capability's runner, maps
  // the outcome to a Status (violations, exceptions, abandonment, unknown codes) and records
  // metrics.
  Invocation invoke(Cap cap, std::string_view call_name, OutputKind output, size_t items,
                    const Prepare& prepare);
  Status unavailable(Cap cap) const;
  // An instances call about one node that answers one enum value (exists, shutdown).
  template <typename Out>
  StatusOr<Out> nodeAnswer(std::string_view call_name, const NodeRef& node,
                           ccm_status (*fn)(ccm_provider*, const ccm_call*, const ccm_node*, Out*));

  std::shared_ptr<const LoadedPlugin> plugin_;
  ProviderOptions options_;
  const Clock& clock_;
  ccm_provider* provider_ = nullptr;
  ProviderInfo info_;
  ccm_instances_v1 instances_{};
  ccm_instances_batch_v1 batch_{};
  ccm_loadbalancer_v1 lb_{};
  ccm_routes_v1 routes_{};
  std::unique_ptr<CallRunner> instances_runner_;
  std::unique_ptr<CallRunner> batch_runner_;
  std::unique_ptr<CallRunner> lb_runner_;
  std::unique_ptr<CallRunner> routes_runner_;
  std::atomic<bool> cancelled_{false};

  metrics::Family<metrics::Counter>* calls_total_ = nullptr;
  metrics::Family<metrics::Histogram>* call_seconds_ = nullptr;
};

}  // namespace ccm::plugin
