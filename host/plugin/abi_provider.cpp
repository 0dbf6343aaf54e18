// AbiProvider implementation: creating the provider, binding its capabilities, and one line
// per Provider method naming the ABI function it calls.
#include "host/plugin/abi_provider.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <iterator>

#include "ccm/negotiation.hpp"
#include "host/log/log.hpp"
#include "host/plugin/abi_functions.hpp"
#include "host/plugin/crash_report.hpp"
#include "host/plugin/host_services.hpp"
#include "host/plugin/lifecycle_call.hpp"

namespace ccm::plugin {
namespace {

// Fetches capability Table from the plugin into cap.table; present=false when the plugin has
// none. A table too short for its header, or for or NULL in a required slot, is refused.
template <typename Table>
Status fetchCapability(const LoadedPlugin& plugin, ccm_provider* provider,
                       BoundCapability<Table>& cap, bool& present) {
  std::string_view id = abi::CapabilitySpec<Table>::kId;
  const void* raw = nullptr;
  try {
    PluginCallScope scope(plugin.name, id, "get_capability");
    raw = plugin.table.get_capability(provider, sdk::str(id));
  } catch (...) {
    return Status(
        Code::FailedPrecondition,
        fmt::format("provider {}: get_capability(\"{}\") threw an exception", plugin.name, id));
  }
  if (raw == nullptr) {
    present = false;
    return okStatus();
  }
  // The header's length and the required slots: the SDK's check, shared with the fake host.
  if (std::string problem =
          sdk::checkCapabilityTable(id, static_cast<const Table*>(raw), &cap.table);
      !problem.empty()) {
    return Status(Code::FailedPrecondition, fmt::format("provider {}: {}", plugin.name, problem));
  }
  present = true;
  return okStatus();
}

// Records what the plugin declared for capability Table and gives it its runner.
template <typename Table>
void bindCapability(BoundCapability<Table>& cap, CapabilityInfo& declared,
                    const ProviderOptions& options, std::string_view provider) {
  using Spec = abi::CapabilitySpec<Table>;
  declared.max_concurrency = cap.table.max_concurrency;
  declared.wants_object_json = (cap.table.flags & CCM_CAP_WANTS_OBJECT_JSON) != 0;
  cap.id = Spec::kId;
  cap.declared = declared;
  cap.timeout = options.*Spec::kTimeout;
  uint32_t slots =
      declared.max_concurrency > 0 ? declared.max_concurrency : options.default_concurrency;
  cap.runner = std::make_unique<CallRunner>(std::string(Spec::kRunner), slots, options.grace,
                                            options.registry, provider);
}

}  // namespace

std::string ProviderInfo::capabilityList() const {
  std::string out;
  auto add = [&](const CapabilityInfo& c, const char* id, const std::string& extra) {
    if (!c.present) {
      return;
    }
    out += out.empty() ? "" : ", ";
    out += id;
    std::string details = extra;
    if (c.max_concurrency > 0) {
      details +=
          (details.empty() ? "" : ", ") + fmt::format("max {} concurrent", c.max_concurrency);
    }
    if (!details.empty()) {
      out += " (" + details + ")";
    }
  };
  add(instances, CCM_CAP_INSTANCES, "");
  add(instances_batch, CCM_CAP_INSTANCES_BATCH,
      max_batch_size > 0 ? fmt::format("max batch {}", max_batch_size) : "");
  add(load_balancer, CCM_CAP_LOADBALANCER, "");
  add(routes, CCM_CAP_ROUTES, "");
  return out.empty() ? "none" : out;
}

AbiProvider::AbiProvider(std::shared_ptr<const LoadedPlugin> plugin, const ProviderOptions& options)
    : plugin_(std::move(plugin)), options_(options), caller_(plugin_, options) {}

StatusOr<std::unique_ptr<AbiProvider>> AbiProvider::create(
    std::shared_ptr<const LoadedPlugin> plugin, std::string_view config,
    std::string_view config_source, ProviderOptions options) {
  std::unique_ptr<AbiProvider> p(new AbiProvider(plugin, options));
  HostServices& services = HostServices::instance();
  const bool has_deadline = options.start_timeout.count() > 0;
  int64_t deadline_ns = lifecycleDeadlineNs(options.clock, options.start_timeout);
  auto state = services.beginCall(plugin->handle, deadline_ns, OutputKind::None, 0);
  // What create works on, owned by its call: a hung create is abandoned, not stopped.
  struct CreateCall {
    ccm_call call{};
    std::string config;
    ccm_provider* out = nullptr;
  };
  auto create_call = std::make_shared<CreateCall>();
  create_call->call = ccm_call{sizeof(ccm_call), state->id, deadline_ns};
  create_call->config = std::string(config);
  LifecycleOutcome outcome = runLifecycleCall(
      [create_call, plugin] {
        PluginCallScope scope(plugin->name, "", "create");
        return plugin->table.create(&create_call->call, sdk::str(create_call->config),
                                    &create_call->out);
      },
      has_deadline ? std::chrono::steady_clock::now() + options.start_timeout
                   : std::chrono::steady_clock::time_point::max(),
      options.stop);
  if (outcome.end == LifecycleOutcome::End::TimedOut ||
      outcome.end == LifecycleOutcome::End::Interrupted) {
    state->cancelled = true;
    services.endCall(state->id);
    if (outcome.end == LifecycleOutcome::End::TimedOut) {
      return Status(Code::DeadlineExceeded,
                    fmt::format("provider {}: create did not return within the start-up "
                                "deadline of {} (--provider-start-timeout)",
                                plugin->name, describeTimeout(options.start_timeout)));
    }
    return Status(Code::Cancelled,
                  fmt::format("provider {}: interrupted by a signal while in create (after {})",
                              plugin->name, describeTimeout(outcome.elapsed)));
  }
  ccm_status st = outcome.status;
  ccm_provider* out = create_call->out;
  std::string thrown = outcome.end == LifecycleOutcome::End::Threw ? outcome.exception : "";
  services.endCall(state->id);
  std::string source = config_source.empty() ? std::string("no --cloud-config")
                                             : fmt::format("--cloud-config={}", config_source);
  if (!thrown.empty()) {
    return Status(Code::FailedPrecondition,
                  fmt::format("provider {} threw an exception from create ({}): {}", plugin->name,
                              source, thrown));
  }
  if (st != CCM_STATUS_OK) {
    std::string message;
    {
      std::lock_guard lock(state->mu);
      message = state->error_message;
    }
    return Status(Code::InvalidArgument,
                  fmt::format("provider {} refused its configuration ({}): {}", plugin->name,
                              source, message.empty() ? codeName(codeFromInt(st)) : message));
  }
  if (out == nullptr) {
    return Status(Code::FailedPrecondition,
                  fmt::format("provider {}: create returned OK without a provider", plugin->name));
  }
  p->provider_ = out;
  // From now on the plugin's metrics and clock are this provider's.
  PluginContext ctx = PluginContext::make(plugin->name, options.registry, options.clock);
  ctx.abi_minor = plugin->table.abi_minor;
  ctx.provider_id_prefix = plugin->provider_id_prefix;
  ctx.annotation_domain = plugin->annotation_domain;
  ctx.metric_namespace = plugin->metric_namespace;
  services.updatePlugin(plugin->handle, std::move(ctx));

  ProviderInfo& info = p->info_;
  info.name = plugin->name;
  info.version = std::string(sdk::view(plugin->table.version));
  info.abi_major = plugin->table.abi_major;
  info.abi_minor = plugin->table.abi_minor;
  info.path = plugin->path;
  info.provider_id_prefix = plugin->provider_id_prefix;
  info.annotation_domain = plugin->annotation_domain;
  info.metric_namespace = plugin->metric_namespace;
  // Every capability is fetched and checked before any is bound.
  Status s = okStatus();
  std::apply(
      [&](auto&... cap) {
        ((s = s.ok()
                  ? fetchCapability(*plugin, out, cap,
                                    (info.*abi::CapabilitySpec<decltype(cap.table)>::kInfo).present)
                  : s),
         ...);
      },
      p->capabilities_);
  if (!s.ok()) {
    return s;
  }
  bool any = std::apply(
      [&](auto&... cap) {
        return ((info.*abi::CapabilitySpec<decltype(cap.table)>::kInfo).present || ...);
      },
      p->capabilities_);
  if (!any) {
    return Status(Code::FailedPrecondition,
                  fmt::format("provider {} provides no capability: get_capability returned NULL "
                              "for each of {}",
                              plugin->name, sdk::catalog::capabilityIdList()));
  }
  std::apply(
      [&](auto&... cap) {
        (bindCapability(cap, info.*abi::CapabilitySpec<decltype(cap.table)>::kInfo, options,
                        info.name),
         ...);
      },
      p->capabilities_);
  info.max_batch_size = p->capability<ccm_instances_batch_v1>().table.max_batch_size;
  if (options.registry != nullptr) {
    if (auto* f =
            options.registry->gauge("ccm_provider_info", "The loaded provider plugin (value 1).",
                                    {"provider", "name", "version", "abi", "capabilities",
                                     "provider_id_prefix", "annotation_domain",
                                     "metric_namespace"})) {
      f->labels({info.name, info.name, info.version, fmt::format("{}.{}", info.abi_major, info.abi_minor),
                 info.capabilityList(), info.provider_id_prefix, info.annotation_domain,
                 info.metric_namespace})
          .set(1);
    }
  }
  return p;
}

AbiProvider::~AbiProvider() {
  cancelAll();
  HostServices::instance().detachRegistry(plugin_->handle, options_.registry);
  int stuck = 0;
  std::apply(
      [&](auto&... cap) {
        ((stuck += cap.runner != nullptr ? cap.runner->abandonedInFlight() : 0), ...);
      },
      capabilities_);
  {
    std::lock_guard lock(reconfigure_mu_);
    stuck += reconfigure_runner_ != nullptr ? reconfigure_runner_->abandonedInFlight() : 0;
    reconfigure_runner_.reset();
  }
  // Runners first: they hold no provider state, and destroying them parks their threads.
  std::apply([](auto&... cap) { (cap.runner.reset(), ...); }, capabilities_);
  if (provider_ == nullptr) {
    return;
  }
  if (stuck > 0) {
    log::warning("Not destroying the provider: some of its calls never returned",
                 {{"provider", info_.name}, {"abandonedCalls", stuck}});
    return;
  }
  try {
    PluginCallScope scope(plugin_->name, "", "destroy");
    plugin_->table.destroy(provider_);
  } catch (...) {
    log::error("Provider destroy threw an exception", {{"provider", info_.name}});
  }
}

void AbiProvider::cancelAll() {
  caller_.cancelAll();
}

Status AbiProvider::health() const {
  if (caller_.cancelled()) {
    return Status(Code::Unavailable, fmt::format("provider {} takes no more calls: the host is "
                                                 "shutting down or lost leadership",
                                                 info_.name));
  }
  Status st = okStatus();
  std::apply(
      [&](const auto&... cap) {
        auto check = [&](const CallChannel& c) {
          if (st.ok() && c.runner != nullptr && c.runner->abandonedInFlight() > 0 &&
              static_cast<uint32_t>(c.runner->abandonedInFlight()) >= c.runner->slots()) {
            st = Status(Code::Unavailable,
                        fmt::format("provider {}: every one of the {} call slots of {} is held "
                                    "by a call that overstayed its deadline",
                                    info_.name, c.runner->slots(), c.id));
          }
        };
        (check(cap), ...);
      },
      capabilities_);
  return st;
}

// ---- instances -------------------------------------------------------------------------------

StatusOr<Existence> AbiProvider::instanceExists(const NodeRef& node) {
  return call<abi::InstanceExists>(node);
}

StatusOr<Power> AbiProvider::instanceShutdown(const NodeRef& node) {
  return call<abi::InstanceShutdown>(node);
}

StatusOr<std::optional<InstanceMetadata>> AbiProvider::instanceMetadata(const NodeRef& node) {
  return call<abi::InstanceMetadata>(node);
}

StatusOr<std::vector<MetadataResult>> AbiProvider::instanceMetadataBatch(
    std::span<const NodeRef> nodes) {
  const auto& batch = capability<ccm_instances_batch_v1>();
  if (!batch.declared.present) {
    return caller_.unimplemented(batch);
  }
  std::vector<MetadataResult> results;
  results.reserve(nodes.size());
  size_t chunk = info_.max_batch_size > 0 ? info_.max_batch_size : nodes.size();
  for (size_t start = 0; start < nodes.size(); start += chunk) {
    auto part = call<abi::InstanceMetadataBatch>(
        nodes.subspan(start, std::min(chunk, nodes.size() - start)));
    if (!part.ok()) {
      return part.status();
    }
    std::move(part->begin(), part->end(), std::back_inserter(results));
  }
  return results;
}

// ---- load balancers ----------------------------------------------------------------------------

StatusOr<std::optional<LoadBalancerStatus>> AbiProvider::getLoadBalancer(
    std::string_view cluster_name, const ServiceRef& service) {
  return call<abi::GetLoadBalancer>(cluster_name, service);
}

StatusOr<std::string> AbiProvider::getLoadBalancerName(std::string_view cluster_name,
                                                       const ServiceRef& service) {
  return call<abi::GetLoadBalancerName>(cluster_name, service);
}

StatusOr<LoadBalancerStatus> AbiProvider::ensureLoadBalancer(std::string_view cluster_name,
                                                             const ServiceRef& service,
                                                             std::span<const NodeRef> nodes) {
  return call<abi::EnsureLoadBalancer>(cluster_name, service, nodes);
}

Status AbiProvider::updateLoadBalancer(std::string_view cluster_name, const ServiceRef& service,
                                       std::span<const NodeRef> nodes) {
  return call<abi::UpdateLoadBalancer>(cluster_name, service, nodes);
}

StatusOr<LoadBalancerStatus> AbiProvider::ensureLoadBalancerShared(std::string_view cluster_name,
                                                                   const ServiceRef& service,
                                                                   const SharedHosts& hosts) {
  return call<abi::EnsureLoadBalancer>(cluster_name, service, hosts);
}

Status AbiProvider::updateLoadBalancerShared(std::string_view cluster_name,
                                             const ServiceRef& service,
                                             const SharedHosts& hosts) {
  return call<abi::UpdateLoadBalancer>(cluster_name, service, hosts);
}

Status AbiProvider::ensureLoadBalancerDeleted(std::string_view cluster_name,
                                              const ServiceRef& service) {
  return call<abi::EnsureLoadBalancerDeleted>(cluster_name, service);
}

// ---- routes ------------------------------------------------------------------------------------

StatusOr<std::vector<Route>> AbiProvider::listRoutes(std::string_view cluster_name) {
  return call<abi::ListRoutes>(cluster_name);
}

Status AbiProvider::createRoute(std::string_view cluster_name, std::string_view name_hint,
                                const Route& route) {
  return call<abi::CreateRoute>(cluster_name, name_hint, route);
}

Status AbiProvider::deleteRoute(std::string_view cluster_name, const Route& route) {
  return call<abi::DeleteRoute>(cluster_name, route);
}

}  // namespace ccm::plugin
