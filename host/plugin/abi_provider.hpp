// AbiProvider: a Provider backed by a plugin loaded through the C ABI.
//
// It creates the provider with the --cloud-config bytes, fetches and checks its capabilities,
// and turns every C call into a typed result. Each method names its ABI function's descriptor
// (abi_functions.hpp) and hands its inputs to the one call path (AbiCaller, abi_call.hpp),
// which enforces deadlines and the declared concurrency limits, validates output, stops
// exceptions at the boundary, reads unknown status codes as INTERNAL and records metrics.
//
// THREAD: create() and the destructor on the main thread; every other method from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "ccm/catalog.hpp"
#include "host/plugin/abi_call.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "host/plugin/provider.hpp"
#include "host/plugin/provider_options.hpp"

namespace ccm::plugin {

class AbiProvider final : public Provider {
 public:
  // Creates the provider from config (the bytes of --cloud-config; config_source names the
  // file for messages). Errors name the plugin and, for a refused config, carry its message.
  static StatusOr<std::unique_ptr<AbiProvider>> create(std::shared_ptr<const LoadedPlugin> plugin,
                                                       std::string_view config,
                                                       std::string_view config_source,
                                                       ProviderOptions options);
  ~AbiProvider() override;
  AbiProvider(const AbiProvider&) = delete;
  AbiProvider& operator=(const AbiProvider&) = delete;

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
  StatusOr<LoadBalancerStatus> ensureLoadBalancerShared(std::string_view cluster_name,
                                                        const ServiceRef& service,
                                                        const SharedHosts& hosts) override;
  Status updateLoadBalancerShared(std::string_view cluster_name, const ServiceRef& service,
                                  const SharedHosts& hosts) override;
  Status ensureLoadBalancerDeleted(std::string_view cluster_name,
                                   const ServiceRef& service) override;

  StatusOr<std::vector<Route>> listRoutes(std::string_view cluster_name) override;
  Status createRoute(std::string_view cluster_name, std::string_view name_hint,
                     const Route& route) override;
  Status deleteRoute(std::string_view cluster_name, const Route& route) override;

  void cancelAll() override;
  // Fails once calls are cancelled (shutdown, lost leadership) and while every call slot of a
  // capability is held by a call that overstayed its deadline (the plugin hangs).
  Status health() const override;

  // Calls the plugin's reconfigure slot (abi_reconfigure.cpp) on its own runner, with the
  // reconfigure deadline. Unimplemented when the plugin has no slot (ABI 1.0, or NULL);
  // FailedPrecondition while an earlier reconfigure that was given up on has not returned.
  Status reconfigure(std::string_view config) override;

 private:
  AbiProvider(std::shared_ptr<const LoadedPlugin> plugin, const ProviderOptions& options);

  template <typename Table>
  BoundCapability<Table>& capability() {
    return std::get<BoundCapability<Table>>(capabilities_);
  }

  // Calls the ABI function described by F with the typed inputs.
  template <typename F, typename... In>
  typename F::Result call(const In&... in) {
    return caller_.call<F>(capability<typename F::Table>(), provider_, in...);
  }

  std::shared_ptr<const LoadedPlugin> plugin_;
  ProviderOptions options_;
  ccm_provider* provider_ = nullptr;
  ProviderInfo info_;
  // One per capability of the SDK's catalog (ccm/catalog.hpp).
  sdk::catalog::EachTable<BoundCapability>::type capabilities_;
  AbiCaller caller_;
  std::mutex reconfigure_mu_;  // held for the whole of a reconfigure: never two at once
  std::unique_ptr<CallRunner> reconfigure_runner_;  // one slot; created on first use
};

}  // namespace ccm::plugin
