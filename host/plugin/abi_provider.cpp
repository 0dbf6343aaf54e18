// AbiProvider implementation: the C calls, their deadlines and the typed results.
#include "host/plugin/abi_provider.hpp"

#include <fmt/format.h>

#include <cstring>

#include "host/log/log.hpp"

namespace ccm::plugin {
namespace {

const char* capName(int cap) {
  static const char* kNames[] = {CCM_CAP_INSTANCES, CCM_CAP_INSTANCES_BATCH, CCM_CAP_LOADBALANCER,
                                 CCM_CAP_ROUTES};
  return kNames[cap];
}

// A required function slot of a capability table, by offset.
struct Slot {
  const char* name;
  size_t offset;
};

// Fetches capability `id` into out; present=false when the plugin has none. A table that is
// too short for, or NULL in, a required slot is refused.
template <typename T>
Status fetchCapability(const LoadedPlugin& plugin, ccm_provider* provider, const char* id, T& out,
                       bool& present, std::initializer_list<Slot> required) {
  const void* raw = nullptr;
  try {
    raw = plugin.table.get_capability(provider, sdk::str(id));
  } catch (...) {
    return Status(Code::FailedPrecondition,
                  fmt::format("provider {}: get_capability(\"{}\") threw an exception",
                              plugin.name, id));
  }
  if (raw == nullptr) {
    present = false;
    return okStatus();
  }
  const T* table = static_cast<const T*>(raw);
  if (table->struct_size < sizeof(uint32_t) * 3) {
    return Status(Code::FailedPrecondition,
                  fmt::format("provider {}: capability {} has struct_size {}, too short",
                              plugin.name, id, table->struct_size));
  }
  out = sdk::copyStruct(table);
  for (const Slot& slot : required) {
    if (slot.offset + sizeof(void*) > table->struct_size) {
      return Status(Code::FailedPrecondition,
                    fmt::format("provider {}: capability {} struct_size {} ends before its "
                                "required slot {}",
                                plugin.name, id, table->struct_size, slot.name));
    }
    void* fp = nullptr;
    std::memcpy(&fp, reinterpret_cast<const char*>(&out) + slot.offset, sizeof fp);
    if (fp == nullptr) {
      return Status(Code::FailedPrecondition,
                    fmt::format("provider {}: capability {} has its required slot {} set to "
                                "NULL",
                                plugin.name, id, slot.name));
    }
  }
  present = true;
  return okStatus();
}

#define CCM_SLOT(T, field) \
  Slot { #field, offsetof(T, field) }

std::chrono::milliseconds toMs(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
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
      details += (details.empty() ? "" : ", ") + fmt::format("max {} concurrent", c.max_concurrency);
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

AbiProvider::AbiProvider(std::shared_ptr<const LoadedPlugin> plugin, ProviderOptions options)
    : plugin_(std::move(plugin)),
      options_(options),
      clock_(options.clock != nullptr ? *options.clock : Clock::real()) {
  if (options_.registry != nullptr) {
    calls_total_ = options_.registry->counter(
        "ccm_provider_calls_total", "Calls into the provider plugin, by capability, call and result.",
        {"capability", "call", "code"});
    call_seconds_ = options_.registry->histogram(
        "ccm_provider_call_duration_seconds", "Latency of calls into the provider plugin.",
        metrics::exponentialBuckets(0.001, 2, 16), {"capability", "call"});
  }
}

StatusOr<std::unique_ptr<AbiProvider>> AbiProvider::create(
    std::shared_ptr<const LoadedPlugin> plugin, std::string_view config,
    std::string_view config_source, ProviderOptions options) {
  std::unique_ptr<AbiProvider> p(new AbiProvider(plugin, options));
  HostServices& services = HostServices::instance();
  auto state = services.beginCall(plugin->handle, 0, OutputKind::None, 0);
  ccm_call call{sizeof(ccm_call), state->id, 0};
  ccm_provider* out = nullptr;
  ccm_status st = CCM_STATUS_INTERNAL;
  std::string thrown;
  try {
    st = plugin->table.create(&call, sdk::str(config), &out);
  } catch (const std::exception& e) {
    thrown = e.what();
  } catch (...) {
    thrown = "a non-standard exception";
  }
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
                  fmt::format("provider {}: create returned OK without a provider",
                              plugin->name));
  }
  p->provider_ = out;
  // From now on the plugin's metrics and clock are this provider's.
  PluginContext ctx;
  ctx.name = plugin->name;
  ctx.registry = options.registry;
  ctx.clock = options.clock;
  if (options.registry != nullptr) {
    ctx.violations = options.registry->counter(
        "ccm_provider_contract_violations_total",
        "Times the provider plugin broke the ABI contract, by kind.", {"kind"});
  }
  services.updatePlugin(plugin->handle, ctx);

  ProviderInfo& info = p->info_;
  info.name = plugin->name;
  info.version = std::string(sdk::view(plugin->table.version));
  info.abi_major = plugin->table.abi_major;
  info.abi_minor = plugin->table.abi_minor;
  info.path = plugin->path;
  Status s = fetchCapability(*plugin, out, CCM_CAP_INSTANCES, p->instances_,
                             info.instances.present,
                             {CCM_SLOT(ccm_instances_v1, instance_exists),
                              CCM_SLOT(ccm_instances_v1, instance_shutdown),
                              CCM_SLOT(ccm_instances_v1, instance_metadata)});
  if (s.ok()) {
    s = fetchCapability(*plugin, out, CCM_CAP_INSTANCES_BATCH, p->batch_,
                        info.instances_batch.present,
                        {CCM_SLOT(ccm_instances_batch_v1, instance_metadata_batch)});
  }
  if (s.ok()) {
    s = fetchCapability(*plugin, out, CCM_CAP_LOADBALANCER, p->lb_, info.load_balancer.present,
                        {CCM_SLOT(ccm_loadbalancer_v1, get_load_balancer),
                         CCM_SLOT(ccm_loadbalancer_v1, get_load_balancer_name),
                         CCM_SLOT(ccm_loadbalancer_v1, ensure_load_balancer),
                         CCM_SLOT(ccm_loadbalancer_v1, update_load_balancer),
                         CCM_SLOT(ccm_loadbalancer_v1, ensure_load_balancer_deleted)});
  }
  if (s.ok()) {
    s = fetchCapability(*plugin, out, CCM_CAP_ROUTES, p->routes_, info.routes.present,
                        {CCM_SLOT(ccm_routes_v1, list_routes), CCM_SLOT(ccm_routes_v1, create_route),
                         CCM_SLOT(ccm_routes_v1, delete_route)});
  }
  if (!s.ok()) {
    return s;
  }
  auto cap = [&](CapabilityInfo& ci, uint32_t max, uint32_t flags) {
    ci.max_concurrency = max;
    ci.wants_object_json = (flags & CCM_CAP_WANTS_OBJECT_JSON) != 0;
  };
  cap(info.instances, p->instances_.max_concurrency, p->instances_.flags);
  cap(info.instances_batch, p->batch_.max_concurrency, p->batch_.flags);
  info.max_batch_size = p->batch_.max_batch_size;
  cap(info.load_balancer, p->lb_.max_concurrency, p->lb_.flags);
  cap(info.routes, p->routes_.max_concurrency, p->routes_.flags);

  auto slots = [&](const CapabilityInfo& ci) {
    return ci.max_concurrency > 0 ? ci.max_concurrency : options.default_concurrency;
  };
  p->instances_runner_ = std::make_unique<CallRunner>("instances", slots(info.instances),
                                                      options.grace, options.registry);
  p->batch_runner_ = std::make_unique<CallRunner>("instances.batch", slots(info.instances_batch),
                                                  options.grace, options.registry);
  p->lb_runner_ = std::make_unique<CallRunner>("loadbalancer", slots(info.load_balancer),
                                               options.grace, options.registry);
  p->routes_runner_ = std::make_unique<CallRunner>("routes", slots(info.routes), options.grace,
                                                   options.registry);
  if (options.registry != nullptr) {
    if (auto* f = options.registry->gauge(
            "ccm_provider_info", "The loaded provider plugin (value 1).",
            {"name", "version", "abi", "capabilities"})) {
      f->labels({info.name, info.version, fmt::format("{}.{}", info.abi_major, info.abi_minor),
                 info.capabilityList()})
          .set(1);
    }
  }
  return p;
}

AbiProvider::~AbiProvider() {
  cancelAll();
  HostServices::instance().detachRegistry(plugin_->handle, options_.registry);
  int stuck = 0;
  for (auto* r : {instances_runner_.get(), batch_runner_.get(), lb_runner_.get(),
                  routes_runner_.get()}) {
    if (r != nullptr) {
      stuck += r->abandonedInFlight();
    }
  }
  // Runners first: they hold no provider state, and destroying them parks their threads.
  instances_runner_.reset();
  batch_runner_.reset();
  lb_runner_.reset();
  routes_runner_.reset();
  if (provider_ == nullptr) {
    return;
  }
  if (stuck > 0) {
    log::warning("Not destroying the provider: some of its calls never returned",
                 {{"provider", info_.name}, {"abandonedCalls", stuck}});
    return;
  }
  try {
    plugin_->table.destroy(provider_);
  } catch (...) {
    log::error("Provider destroy threw an exception", {{"provider", info_.name}});
  }
}

void AbiProvider::cancelAll() {
  cancelled_ = true;
  HostServices::instance().cancelAll(plugin_->handle);
}

Status AbiProvider::unavailable(Cap cap) const {
  return Status(Code::Unimplemented, fmt::format("provider {} does not implement {}", info_.name,
                                                 capName(static_cast<int>(cap))));
}

AbiProvider::Invocation AbiProvider::invoke(Cap cap, std::string_view call_name,
                                            OutputKind output, size_t items,
                                            const Prepare& prepare) {
  Invocation inv;
  if (cancelled_) {
    inv.status = Status(Code::Cancelled, "the host is shutting down or lost leadership");
    return inv;
  }
  CallRunner* runner = nullptr;
  std::chrono::milliseconds timeout{};
  switch (cap) {
    case Cap::Instances:
      runner = instances_runner_.get();
      timeout = options_.instances_timeout;
      break;
    case Cap::Batch:
      runner = batch_runner_.get();
      timeout = options_.batch_timeout;
      break;
    case Cap::LoadBalancer:
      runner = lb_runner_.get();
      timeout = options_.load_balancer_timeout;
      break;
    case Cap::Routes:
      runner = routes_runner_.get();
      timeout = options_.routes_timeout;
      break;
  }
  HostServices& services = HostServices::instance();
  int64_t deadline_ns = clock_.nowMonotonicNs() +
                        std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  inv.input = std::make_shared<AbiInput>();
  inv.state = services.beginCall(plugin_->handle, deadline_ns, output, items);
  auto* call = inv.input->array<ccm_call>(1);
  *call = ccm_call{sizeof(ccm_call), inv.state->id, deadline_ns};
  // Inputs are converted here, on the caller's thread, into memory the task owns.
  std::function<ccm_status()> fn = prepare(*inv.input, call);
  auto started = std::chrono::steady_clock::now();
  std::shared_ptr<CallState> state = inv.state;
  uint64_t call_id = state->id;
  CallOutcome outcome = runner->run(
      started + timeout, [input = inv.input, fn = std::move(fn)] { return fn(); },
      [&services, state, call_id] {
        state->cancelled = true;
        services.endCall(call_id);
      });
  if (!outcome.abandoned) {
    services.endCall(call_id);
  }
  std::string label = fmt::format("{}.{}", capName(static_cast<int>(cap)), call_name);
  if (outcome.abandoned) {
    services.violation(plugin_->handle, "ignored_deadline",
                       fmt::format("{} did not return within {}ms plus {}ms grace", label,
                                   timeout.count(), options_.grace.count()));
    inv.status = Status(Code::DeadlineExceeded,
                        fmt::format("provider call {} did not return within its {}s deadline; "
                                    "abandoned",
                                    label, timeout.count() / 1000.0));
  } else if (outcome.threw) {
    services.violation(plugin_->handle, "exception",
                       fmt::format("{} threw across the ABI: {}", label, outcome.exception));
    inv.status = Status(Code::Internal,
                        fmt::format("provider call {} threw an exception across the plugin ABI: "
                                    "{}",
                                    label, outcome.exception));
  } else if (outcome.status == CCM_STATUS_DEADLINE_EXCEEDED && !outcome.exception.empty()) {
    inv.status = Status(Code::DeadlineExceeded,
                        fmt::format("provider call {} not started: {}", label, outcome.exception));
  } else {
    std::lock_guard lock(state->mu);
    if (!state->violation.empty()) {
      services.violation(plugin_->handle, "invalid_output",
                         fmt::format("{}: {}", label, state->violation));
      inv.status = Status(Code::Internal, fmt::format("provider call {} returned invalid output: "
                                                      "{}",
                                                      label, state->violation));
    } else if (outcome.status != CCM_STATUS_OK) {
      Code code = codeFromInt(outcome.status);
      std::string message = state->error_message;
      if (code == Code::Internal && outcome.status != CCM_STATUS_INTERNAL) {
        services.violation(plugin_->handle, "unknown_status",
                           fmt::format("{} returned status code {}", label, outcome.status));
        message = fmt::format("unknown status code {}{}{}", outcome.status,
                              message.empty() ? "" : ": ", message);
      }
      if (message.empty()) {
        message = fmt::format("{} failed", label);
      }
      inv.status = Status(code, message, std::chrono::milliseconds(state->retry_after_ms));
    }
  }
  auto elapsed = std::chrono::steady_clock::now() - started;
  if (calls_total_ != nullptr) {
    calls_total_->labels({capName(static_cast<int>(cap)), std::string(call_name),
                          std::string(codeName(inv.status.code()))})
        .inc();
  }
  if (call_seconds_ != nullptr) {
    call_seconds_->labels({capName(static_cast<int>(cap)), std::string(call_name)})
        .observe(std::chrono::duration<double>(elapsed).count());
  }
  if (!inv.status.ok()) {
    log::infoV(4, "Provider call failed",
               {{"call", label}, {"error", inv.status.toString()}, {"elapsed", toMs(elapsed)}});
  }
  return inv;
}

// ---- instances -------------------------------------------------------------------------------

template <typename Out>
StatusOr<Out> AbiProvider::nodeAnswer(
    std::string_view call_name, const NodeRef& node,
    ccm_status (*fn)(ccm_provider*, const ccm_call*, const ccm_node*, Out*)) {
  if (!info_.instances.present) {
    return unavailable(Cap::Instances);
  }
  Out* out = nullptr;
  auto inv = invoke(Cap::Instances, call_name, OutputKind::None, 0,
                    [&](AbiInput& in, const ccm_call* call) {
                      const ccm_node* n = in.node(node, info_.instances.wants_object_json);
                      out = in.array<Out>(1);
                      auto* p = provider_;
                      auto* o = out;
                      return std::function<ccm_status()>([=] { return fn(p, call, n, o); });
                    });
  if (!inv.status.ok()) {
    return inv.status;
  }
  return *out;
}

StatusOr<Existence> AbiProvider::instanceExists(const NodeRef& node) {
  auto answer = nodeAnswer("instance_exists", node, instances_.instance_exists);
  if (!answer.ok()) {
    return answer.status();
  }
  switch (*answer) {
    case CCM_EXISTENCE_EXISTS: return Existence::Exists;
    case CCM_EXISTENCE_NOT_FOUND: return Existence::NotFound;
    default: return Existence::Unknown;
  }
}

StatusOr<Power> AbiProvider::instanceShutdown(const NodeRef& node) {
  auto answer = nodeAnswer("instance_shutdown", node, instances_.instance_shutdown);
  if (!answer.ok()) {
    return answer.status();
  }
  switch (*answer) {
    case CCM_POWER_RUNNING: return Power::Running;
    case CCM_POWER_SHUTDOWN: return Power::Shutdown;
    default: return Power::Unknown;
  }
}

StatusOr<std::optional<InstanceMetadata>> AbiProvider::instanceMetadata(const NodeRef& node) {
  if (!info_.instances.present) {
    return unavailable(Cap::Instances);
  }
  auto inv = invoke(Cap::Instances, "instance_metadata", OutputKind::Metadata, 1,
                    [&](AbiInput& in, const ccm_call* call) {
                      const ccm_node* n = in.node(node, info_.instances.wants_object_json);
                      auto fn = instances_.instance_metadata;
                      auto* p = provider_;
                      return std::function<ccm_status()>([=] { return fn(p, call, n); });
                    });
  if (!inv.status.ok()) {
    return inv.status;
  }
  std::lock_guard lock(inv.state->mu);
  return std::move(inv.state->metadata[0]);
}

StatusOr<std::vector<MetadataResult>> AbiProvider::instanceMetadataBatch(
    std::span<const NodeRef> nodes) {
  if (!info_.instances_batch.present) {
    return unavailable(Cap::Batch);
  }
  std::vector<MetadataResult> results;
  results.reserve(nodes.size());
  size_t chunk = info_.max_batch_size > 0 ? info_.max_batch_size : nodes.size();
  for (size_t start = 0; start < nodes.size(); start += chunk) {
    std::span<const NodeRef> part = nodes.subspan(start, std::min(chunk, nodes.size() - start));
    auto inv = invoke(Cap::Batch, "instance_metadata_batch", OutputKind::Metadata, part.size(),
                      [&](AbiInput& in, const ccm_call* call) {
                        const ccm_node* const* ns =
                            in.nodes(part, info_.instances_batch.wants_object_json);
                        auto fn = batch_.instance_metadata_batch;
                        auto* p = provider_;
                        size_t n = part.size();
                        return std::function<ccm_status()>([=] { return fn(p, call, ns, n); });
                      });
    if (!inv.state) {
      // Refused before it started (cancelled): every node of the chunk gets that answer.
      for (size_t i = 0; i < part.size(); ++i) {
        results.emplace_back(inv.status);
      }
      continue;
    }
    std::lock_guard lock(inv.state->mu);
    for (size_t i = 0; i < part.size(); ++i) {
      bool void_call = inv.status.code() == Code::DeadlineExceeded ||
                       (inv.status.code() == Code::Internal && !inv.state->violation.empty());
      if (!void_call && inv.state->metadata[i].has_value()) {
        results.emplace_back(std::move(*inv.state->metadata[i]));
      } else if (!void_call && inv.state->item_errors[i].has_value()) {
        results.emplace_back(*inv.state->item_errors[i]);
      } else if (!inv.status.ok()) {
        results.emplace_back(inv.status);
      } else {
        results.emplace_back(Status(Code::Unavailable,
                                    fmt::format("provider {} returned no result for node {}",
                                                info_.name, part[i].name)));
      }
    }
  }
  return results;
}

// ---- load balancers ----------------------------------------------------------------------------

StatusOr<std::optional<LoadBalancerStatus>> AbiProvider::getLoadBalancer(
    std::string_view cluster_name, const ServiceRef& service) {
  if (!info_.load_balancer.present) {
    return unavailable(Cap::LoadBalancer);
  }
  bool* exists = nullptr;
  auto inv = invoke(Cap::LoadBalancer, "get_load_balancer", OutputKind::LbStatus, 0,
                    [&](AbiInput& in, const ccm_call* call) {
                      ccm_str cluster = in.str(cluster_name);
                      const ccm_service* s = in.service(service);
                      exists = in.array<bool>(1);
                      auto fn = lb_.get_load_balancer;
                      auto* p = provider_;
                      auto* e = exists;
                      return std::function<ccm_status()>(
                          [=] { return fn(p, call, cluster, s, e); });
                    });
  if (!inv.status.ok()) {
    return inv.status;
  }
  if (!*exists) {
    return std::optional<LoadBalancerStatus>();
  }
  std::lock_guard lock(inv.state->mu);
  return std::optional<LoadBalancerStatus>(inv.state->lb_status.value_or(LoadBalancerStatus{}));
}

StatusOr<std::string> AbiProvider::getLoadBalancerName(std::string_view cluster_name,
                                                       const ServiceRef& service) {
  if (!info_.load_balancer.present) {
    return unavailable(Cap::LoadBalancer);
  }
  auto inv = invoke(Cap::LoadBalancer, "get_load_balancer_name", OutputKind::String, 0,
                    [&](AbiInput& in, const ccm_call* call) {
                      ccm_str cluster = in.str(cluster_name);
                      const ccm_service* s = in.service(service);
                      auto fn = lb_.get_load_balancer_name;
                      auto* p = provider_;
                      return std::function<ccm_status()>([=] { return fn(p, call, cluster, s); });
                    });
  if (!inv.status.ok()) {
    return inv.status;
  }
  std::lock_guard lock(inv.state->mu);
  if (!inv.state->string_value) {
    return Status(Code::Internal, "provider returned OK from get_load_balancer_name without a "
                                  "name");
  }
  return *inv.state->string_value;
}

StatusOr<LoadBalancerStatus> AbiProvider::ensureLoadBalancer(std::string_view cluster_name,
                                                             const ServiceRef& service,
                                                             std::span<const NodeRef> nodes) {
  if (!info_.load_balancer.present) {
    return unavailable(Cap::LoadBalancer);
  }
  auto inv = invoke(Cap::LoadBalancer, "ensure_load_balancer", OutputKind::LbStatus, 0,
                    [&](AbiInput& in, const ccm_call* call) {
                      ccm_str cluster = in.str(cluster_name);
                      const ccm_service* s = in.service(service);
                      const ccm_node* const* ns =
                          in.nodes(nodes, info_.load_balancer.wants_object_json);
                      size_t n = nodes.size();
                      auto fn = lb_.ensure_load_balancer;
                      auto* p = provider_;
                      return std::function<ccm_status()>(
                          [=] { return fn(p, call, cluster, s, ns, n); });
                    });
  if (!inv.status.ok()) {
    return inv.status;
  }
  std::lock_guard lock(inv.state->mu);
  if (!inv.state->lb_status) {
    HostServices::instance().violation(plugin_->handle, "missing_output",
                                       "ensure_load_balancer returned OK without a status");
    return Status(Code::Internal, "provider returned OK from ensure_load_balancer without a "
                                  "load balancer status");
  }
  return std::move(*inv.state->lb_status);
}

Status AbiProvider::updateLoadBalancer(std::string_view cluster_name, const ServiceRef& service,
                                       std::span<const NodeRef> nodes) {
  if (!info_.load_balancer.present) {
    return unavailable(Cap::LoadBalancer);
  }
  return invoke(Cap::LoadBalancer, "update_load_balancer", OutputKind::None, 0,
                [&](AbiInput& in, const ccm_call* call) {
                  ccm_str cluster = in.str(cluster_name);
                  const ccm_service* s = in.service(service);
                  const ccm_node* const* ns =
                      in.nodes(nodes, info_.load_balancer.wants_object_json);
                  size_t n = nodes.size();
                  auto fn = lb_.update_load_balancer;
                  auto* p = provider_;
                  return std::function<ccm_status()>(
                      [=] { return fn(p, call, cluster, s, ns, n); });
                })
      .status;
}

Status AbiProvider::ensureLoadBalancerDeleted(std::string_view cluster_name,
                                              const ServiceRef& service) {
  if (!info_.load_balancer.present) {
    return unavailable(Cap::LoadBalancer);
  }
  return invoke(Cap::LoadBalancer, "ensure_load_balancer_deleted", OutputKind::None, 0,
                [&](AbiInput& in, const ccm_call* call) {
                  ccm_str cluster = in.str(cluster_name);
                  const ccm_service* s = in.service(service);
                  auto fn = lb_.ensure_load_balancer_deleted;
                  auto* p = provider_;
                  return std::function<ccm_status()>([=] { return fn(p, call, cluster, s); });
                })
      .status;
}

// ---- routes ------------------------------------------------------------------------------------

StatusOr<std::vector<Route>> AbiProvider::listRoutes(std::string_view cluster_name) {
  if (!info_.routes.present) {
    return unavailable(Cap::Routes);
  }
  auto inv = invoke(Cap::Routes, "list_routes", OutputKind::Routes, 0,
                    [&](AbiInput& in, const ccm_call* call) {
                      ccm_str cluster = in.str(cluster_name);
                      auto fn = routes_.list_routes;
                      auto* p = provider_;
                      return std::function<ccm_status()>([=] { return fn(p, call, cluster); });
                    });
  if (!inv.status.ok()) {
    return inv.status;
  }
  std::lock_guard lock(inv.state->mu);
  return std::move(inv.state->routes);
}

Status AbiProvider::createRoute(std::string_view cluster_name, std::string_view name_hint,
                                const Route& route) {
  if (!info_.routes.present) {
    return unavailable(Cap::Routes);
  }
  Status s = invoke(Cap::Routes, "create_route", OutputKind::None, 0,
                    [&](AbiInput& in, const ccm_call* call) {
                      ccm_str cluster = in.str(cluster_name);
                      ccm_str hint = in.str(name_hint);
                      const ccm_route* r = in.route(route);
                      auto fn = routes_.create_route;
                      auto* p = provider_;
                      return std::function<ccm_status()>(
                          [=] { return fn(p, call, cluster, hint, r); });
                    })
                 .status;
  // ALREADY_EXISTS for a create is success (the ABI says so: creates are idempotent).
  return s.code() == Code::AlreadyExists ? okStatus() : s;
}

Status AbiProvider::deleteRoute(std::string_view cluster_name, const Route& route) {
  if (!info_.routes.present) {
    return unavailable(Cap::Routes);
  }
  Status s = invoke(Cap::Routes, "delete_route", OutputKind::None, 0,
                    [&](AbiInput& in, const ccm_call* call) {
                      ccm_str cluster = in.str(cluster_name);
                      const ccm_route* r = in.route(route);
                      auto fn = routes_.delete_route;
                      auto* p = provider_;
                      return std::function<ccm_status()>([=] { return fn(p, call, cluster, r); });
                    })
                 .status;
  return s.code() == Code::NotFound ? okStatus() : s;
}

}  // namespace ccm::plugin
