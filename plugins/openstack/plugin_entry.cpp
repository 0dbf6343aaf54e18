// The C ABI edge of the openstack plugin: ccm_provider_entry_v1, the ccm_plugin table and the
// capability tables. It converts ABI structs to the core's types and results back through the
// host's emit_* services, and no exception crosses it. This is the only file that sees the
// ABI's host services; the core sees them as HostEnv.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <curl/curl.h>

#include "ccm/provider_abi.h"
#include "plugins/openstack/host_env.hpp"
#include "plugins/openstack/openstack_provider.hpp"

namespace ccm::openstack {
namespace {

constexpr const char* kPluginName = "openstack";
constexpr const char* kPluginVersion = "0.1.0";

ccm_str view(const std::string& s) { return ccm_str{s.data(), s.size()}; }
std::string str(ccm_str s) { return s.data == nullptr ? std::string() : std::string(s.data, s.size); }

// Copies a host struct the ABI way: min(sender size, own size) bytes into a zeroed struct.
template <typename T>
T readStruct(const T* p) {
  T out{};
  if (p == nullptr) return out;
  std::memcpy(&out, p, std::min<size_t>(p->struct_size, sizeof(T)));
  return out;
}

// Is a slot of the host services table inside what the host sent, and set?
#define CCM_OS_HAS_SLOT(table, slot)                                                 \
  ((table).struct_size >= offsetof(ccm_host_services, slot) + sizeof((table).slot) && \
   (table).slot != nullptr)

// HostEnv over the ccm_host_services table.
class AbiHostEnv final : public HostEnv {
 public:
  AbiHostEnv(ccm_host_handle handle, const ccm_host_services& services)
      : handle_(handle), s_(services) {}

  void log(LogLevel level, std::string_view message) override {
    if (!CCM_OS_HAS_SLOT(s_, log)) return;
    ccm_log_level l = CCM_LOG_INFO;
    switch (level) {
      case LogLevel::kError: l = CCM_LOG_ERROR; break;
      case LogLevel::kWarning: l = CCM_LOG_WARNING; break;
      case LogLevel::kInfo: l = CCM_LOG_INFO; break;
      case LogLevel::kDebug: l = CCM_LOG_DEBUG; break;
    }
    s_.log(handle_, l, ccm_str{message.data(), message.size()});
  }
  bool isCancelled(uint64_t call_id) override {
    return CCM_OS_HAS_SLOT(s_, is_cancelled) && s_.is_cancelled(handle_, call_id);
  }
  int64_t monotonicNs() override {
    if (CCM_OS_HAS_SLOT(s_, now_monotonic_ns)) return s_.now_monotonic_ns(handle_);
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t unixNs() override {
    if (CCM_OS_HAS_SLOT(s_, now_unix_ns)) return s_.now_unix_ns(handle_);
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  void registerSecret(std::string_view value) override {
    if (CCM_OS_HAS_SLOT(s_, register_secret)) {
      s_.register_secret(handle_, ccm_str{value.data(), value.size()});
    }
  }
  void metric(MetricKind kind, std::string_view name, std::string_view help, const Fields& labels,
              double value) override {
    if (!CCM_OS_HAS_SLOT(s_, metric)) return;
    std::vector<ccm_kv> kv;
    for (const auto& [k, v] : labels) kv.push_back({view(k), view(v)});
    ccm_metric_kind k = kind == MetricKind::kCounter   ? CCM_METRIC_COUNTER
                        : kind == MetricKind::kGauge   ? CCM_METRIC_GAUGE
                                                       : CCM_METRIC_HISTOGRAM;
    s_.metric(handle_, k, ccm_str{name.data(), name.size()}, ccm_str{help.data(), help.size()},
              kv.data(), kv.size(), value);
  }

  void setError(uint64_t call_id, const Status& st) {
    if (!CCM_OS_HAS_SLOT(s_, set_error)) return;
    s_.set_error(handle_, call_id, view(st.message()), st.retryAfter().count());
  }
  const ccm_host_services& services() const { return s_; }
  ccm_host_handle handle() const { return handle_; }

 private:
  ccm_host_handle handle_;
  ccm_host_services s_;  // a zero-padded copy of the host's table
};

// The host side as given at negotiation. Set once by the entry point (main thread, before
// anything else), read afterwards.
std::optional<AbiHostEnv>& hostEnv() {
  static std::optional<AbiHostEnv> env;
  return env;
}

CallContext contextOf(const ccm_call* call) {
  ccm_call c = readStruct(call);
  return CallContext(*hostEnv(), c.call_id, c.deadline_monotonic_ns);
}

ccm_status finish(const CallContext& ctx, const Status& st) {
  if (!st.ok()) hostEnv()->setError(ctx.id(), st);
  return static_cast<ccm_status>(st.code());
}

// Runs fn (returning Status) with every exception turned into INTERNAL.
template <typename Fn>
ccm_status guarded(const ccm_call* call, Fn&& fn) {
  if (call == nullptr || !hostEnv()) return CCM_STATUS_INVALID_ARGUMENT;
  CallContext ctx = contextOf(call);
  try {
    return finish(ctx, fn(ctx));
  } catch (const std::exception& e) {
    return finish(ctx, Status(Code::kInternal, std::string("openstack plugin: ") + e.what()));
  } catch (...) {
    return finish(ctx, Status(Code::kInternal, "openstack plugin: unknown exception"));
  }
}

std::vector<NodeAddress> addressesOf(const ccm_node_address* a, size_t n) {
  std::vector<NodeAddress> out;
  for (size_t i = 0; a != nullptr && i < n; ++i) out.push_back({str(a[i].type), str(a[i].address)});
  return out;
}

std::map<std::string, std::string> mapOf(const ccm_kv* kv, size_t n) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; kv != nullptr && i < n; ++i) out[str(kv[i].key)] = str(kv[i].value);
  return out;
}

KubeNode nodeOf(const ccm_node* p) {
  ccm_node n = readStruct(p);
  KubeNode k;
  k.name = str(n.name);
  k.uid = str(n.uid);
  k.provider_id = str(n.provider_id);
  k.labels = mapOf(n.labels, n.label_count);
  k.annotations = mapOf(n.annotations, n.annotation_count);
  k.addresses = addressesOf(n.addresses, n.address_count);
  return k;
}

std::vector<KubeNode> nodesOf(const ccm_node* const* nodes, size_t count) {
  std::vector<KubeNode> out;
  for (size_t i = 0; nodes != nullptr && i < count; ++i) out.push_back(nodeOf(nodes[i]));
  return out;
}

KubeService serviceOf(const ccm_service* p) {
  ccm_service s = readStruct(p);
  KubeService k;
  k.namespace_ = str(s.namespace_);
  k.name = str(s.name);
  k.uid = str(s.uid);
  k.labels = mapOf(s.labels, s.label_count);
  k.annotations = mapOf(s.annotations, s.annotation_count);
  k.type = str(s.type);
  for (size_t i = 0; s.ports != nullptr && i < s.port_count; ++i) {
    ccm_service_port sp = readStruct(s.ports[i]);
    k.ports.push_back({str(sp.name), str(sp.protocol), sp.port, sp.node_port});
  }
  k.load_balancer_ip = str(s.load_balancer_ip);
  for (size_t i = 0; s.source_ranges != nullptr && i < s.source_range_count; ++i) {
    k.source_ranges.push_back(str(s.source_ranges[i]));
  }
  k.external_traffic_policy = str(s.external_traffic_policy);
  k.health_check_node_port = s.health_check_node_port;
  for (size_t i = 0; s.ip_families != nullptr && i < s.ip_family_count; ++i) {
    k.ip_families.push_back(str(s.ip_families[i]));
  }
  k.load_balancer_class = str(s.load_balancer_class);
  k.session_affinity = str(s.session_affinity);
  return k;
}

KubeRoute routeOf(const ccm_route* p) {
  ccm_route r = readStruct(p);
  KubeRoute k;
  k.name = str(r.name);
  k.target_node = str(r.target_node);
  k.destination_cidr = str(r.destination_cidr);
  k.blackhole = r.blackhole;
  k.enable_node_addresses = r.enable_node_addresses;
  k.target_node_addresses = addressesOf(r.target_node_addresses, r.target_node_address_count);
  return k;
}

bool emitMetadata(const CallContext& ctx, size_t index, const InstanceMetadata& md) {
  const ccm_host_services& s = hostEnv()->services();
  if (!CCM_OS_HAS_SLOT(s, emit_instance_metadata)) return false;
  std::vector<ccm_node_address> addrs;
  for (const NodeAddress& a : md.addresses) addrs.push_back({view(a.type), view(a.address)});
  std::vector<ccm_kv> labels;
  for (const auto& [k, v] : md.additional_labels) labels.push_back({view(k), view(v)});
  ccm_instance_metadata m{};
  m.struct_size = sizeof m;
  m.provider_id = view(md.provider_id);
  m.instance_type = view(md.instance_type);
  m.zone = view(md.zone);
  m.region = view(md.region);
  m.addresses = addrs.data();
  m.address_count = addrs.size();
  m.additional_labels = labels.data();
  m.additional_label_count = labels.size();
  return s.emit_instance_metadata(hostEnv()->handle(), ctx.id(), index, &m);
}

bool emitLbStatus(const CallContext& ctx, const LbStatus& status) {
  const ccm_host_services& s = hostEnv()->services();
  if (!CCM_OS_HAS_SLOT(s, emit_lb_status)) return false;
  std::vector<std::vector<ccm_port_status>> port_storage;
  std::vector<std::vector<const ccm_port_status*>> port_ptrs;
  std::vector<ccm_lb_ingress> ingress;
  port_storage.reserve(status.ingress.size());
  port_ptrs.reserve(status.ingress.size());
  ingress.reserve(status.ingress.size());
  for (const LbIngress& in : status.ingress) {
    auto& ports = port_storage.emplace_back();
    for (const PortStatus& p : in.ports) {
      ccm_port_status ps{};
      ps.struct_size = sizeof ps;
      ps.port = p.port;
      ps.protocol = view(p.protocol);
      ps.error = view(p.error);
      ports.push_back(ps);
    }
    auto& ptrs = port_ptrs.emplace_back();
    for (const ccm_port_status& ps : ports) ptrs.push_back(&ps);
    ccm_lb_ingress i{};
    i.struct_size = sizeof i;
    i.ip = view(in.ip);
    i.hostname = view(in.hostname);
    i.ip_mode = view(in.ip_mode);
    i.ports = ptrs.data();
    i.port_count = ptrs.size();
    ingress.push_back(i);
  }
  std::vector<const ccm_lb_ingress*> ingress_ptrs;
  for (const ccm_lb_ingress& i : ingress) ingress_ptrs.push_back(&i);
  ccm_lb_status st{};
  st.struct_size = sizeof st;
  st.ingress = ingress_ptrs.data();
  st.ingress_count = ingress_ptrs.size();
  return s.emit_lb_status(hostEnv()->handle(), ctx.id(), &st);
}

}  // namespace
}  // namespace ccm::openstack

using namespace ccm::openstack;  // NOLINT(google-build-using-namespace): the glue's own file

// The provider handle the host holds: the core object plus its capability tables.
struct ccm_provider {
  std::unique_ptr<OpenStackProvider> impl;
  ccm_instances_v1 instances{};
  ccm_instances_batch_v1 batch{};
  ccm_loadbalancer_v1 lb{};
  ccm_routes_v1 routes{};
};

namespace {

ccm_status instanceExists(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                          ccm_existence* out) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || node == nullptr || out == nullptr) {
      return Status(Code::kInvalidArgument, "instance_exists: NULL argument");
    }
    *out = CCM_EXISTENCE_UNKNOWN;
    auto r = p->impl->instances().exists(ctx, nodeOf(node));
    if (!r.ok()) return r.status();
    *out = *r == Existence::kExists ? CCM_EXISTENCE_EXISTS : CCM_EXISTENCE_NOT_FOUND;
    return {};
  });
}

ccm_status instanceShutdown(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                            ccm_power* out) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || node == nullptr || out == nullptr) {
      return Status(Code::kInvalidArgument, "instance_shutdown: NULL argument");
    }
    *out = CCM_POWER_UNKNOWN;
    auto r = p->impl->instances().shutdown(ctx, nodeOf(node));
    if (!r.ok()) return r.status();
    *out = *r == Power::kShutdown ? CCM_POWER_SHUTDOWN : CCM_POWER_RUNNING;
    return {};
  });
}

ccm_status instanceMetadata(ccm_provider* p, const ccm_call* call, const ccm_node* node) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || node == nullptr) {
      return Status(Code::kInvalidArgument, "instance_metadata: NULL argument");
    }
    auto r = p->impl->instances().metadata(ctx, nodeOf(node));
    if (!r.ok()) return r.status();
    emitMetadata(ctx, 0, *r);
    return {};
  });
}

ccm_status instanceMetadataBatch(ccm_provider* p, const ccm_call* call,
                                 const ccm_node* const* nodes, size_t count) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || (nodes == nullptr && count != 0)) {
      return Status(Code::kInvalidArgument, "instance_metadata_batch: NULL argument");
    }
    auto results = p->impl->instances().metadataBatch(ctx, nodesOf(nodes, count));
    const ccm_host_services& s = hostEnv()->services();
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].ok()) {
        emitMetadata(ctx, i, *results[i]);
      } else if (CCM_OS_HAS_SLOT(s, emit_item_error)) {
        const Status& st = results[i].status();
        s.emit_item_error(hostEnv()->handle(), ctx.id(), i, static_cast<ccm_status>(st.code()),
                          view(st.message()));
      }
    }
    return {};
  });
}

ccm_status getLoadBalancer(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                           const ccm_service* svc, bool* out_exists) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || svc == nullptr || out_exists == nullptr) {
      return Status(Code::kInvalidArgument, "get_load_balancer: NULL argument");
    }
    *out_exists = false;
    auto r = p->impl->loadBalancers()->get(ctx, str(cluster), serviceOf(svc));
    if (!r.ok()) return r.status();
    if (*r) {
      *out_exists = true;
      emitLbStatus(ctx, **r);
    }
    return {};
  });
}

ccm_status getLoadBalancerName(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                               const ccm_service* svc) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || svc == nullptr) {
      return Status(Code::kInvalidArgument, "get_load_balancer_name: NULL argument");
    }
    std::string name = p->impl->loadBalancers()->name(str(cluster), serviceOf(svc));
    const ccm_host_services& s = hostEnv()->services();
    if (CCM_OS_HAS_SLOT(s, emit_string)) s.emit_string(hostEnv()->handle(), ctx.id(), view(name));
    return {};
  });
}

ccm_status ensureLoadBalancer(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                              const ccm_service* svc, const ccm_node* const* nodes, size_t count) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || svc == nullptr || (nodes == nullptr && count != 0)) {
      return Status(Code::kInvalidArgument, "ensure_load_balancer: NULL argument");
    }
    auto r = p->impl->loadBalancers()->ensure(ctx, str(cluster), serviceOf(svc),
                                              nodesOf(nodes, count));
    if (!r.ok()) return r.status();
    emitLbStatus(ctx, *r);
    return {};
  });
}

ccm_status updateLoadBalancer(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                              const ccm_service* svc, const ccm_node* const* nodes, size_t count) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || svc == nullptr || (nodes == nullptr && count != 0)) {
      return Status(Code::kInvalidArgument, "update_load_balancer: NULL argument");
    }
    return p->impl->loadBalancers()->update(ctx, str(cluster), serviceOf(svc),
                                            nodesOf(nodes, count));
  });
}

ccm_status ensureLoadBalancerDeleted(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                                     const ccm_service* svc) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || svc == nullptr) {
      return Status(Code::kInvalidArgument, "ensure_load_balancer_deleted: NULL argument");
    }
    return p->impl->loadBalancers()->remove(ctx, str(cluster), serviceOf(svc));
  });
}

ccm_status listRoutes(ccm_provider* p, const ccm_call* call, ccm_str cluster) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr) return Status(Code::kInvalidArgument, "list_routes: NULL argument");
    auto r = p->impl->routes()->list(ctx, str(cluster));
    if (!r.ok()) return r.status();
    const ccm_host_services& s = hostEnv()->services();
    if (!CCM_OS_HAS_SLOT(s, emit_route)) return {};
    for (const KubeRoute& k : *r) {
      ccm_route route{};
      route.struct_size = sizeof route;
      route.name = view(k.name);
      route.target_node = view(k.target_node);
      route.destination_cidr = view(k.destination_cidr);
      route.blackhole = k.blackhole;
      route.enable_node_addresses = false;
      s.emit_route(hostEnv()->handle(), ctx.id(), &route);
    }
    return {};
  });
}

ccm_status createRoute(ccm_provider* p, const ccm_call* call, ccm_str cluster, ccm_str name_hint,
                       const ccm_route* route) {
  (void)name_hint;  // routes are named after their destination, as OCCM does
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || route == nullptr) {
      return Status(Code::kInvalidArgument, "create_route: NULL argument");
    }
    return p->impl->routes()->create(ctx, str(cluster), routeOf(route));
  });
}

ccm_status deleteRoute(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                       const ccm_route* route) {
  return guarded(call, [&](const CallContext& ctx) -> Status {
    if (p == nullptr || route == nullptr) {
      return Status(Code::kInvalidArgument, "delete_route: NULL argument");
    }
    return p->impl->routes()->remove(ctx, str(cluster), routeOf(route));
  });
}

ccm_status createProvider(const ccm_call* call, ccm_str config, ccm_provider** out) {
  if (out == nullptr) return CCM_STATUS_INVALID_ARGUMENT;
  *out = nullptr;
  return guarded(call, [&](const CallContext& ctx) -> Status {
    std::string text = str(config);
    auto provider = OpenStackProvider::create(ctx, *hostEnv(), text);
    if (!provider.ok()) return provider.status();
    auto handle = std::make_unique<ccm_provider>();
    handle->impl = std::move(provider).value();
    handle->instances.struct_size = sizeof(ccm_instances_v1);
    handle->instances.max_concurrency = 16;
    handle->instances.instance_exists = instanceExists;
    handle->instances.instance_shutdown = instanceShutdown;
    handle->instances.instance_metadata = instanceMetadata;
    handle->batch.struct_size = sizeof(ccm_instances_batch_v1);
    handle->batch.max_concurrency = 4;
    handle->batch.max_batch_size = 500;
    handle->batch.instance_metadata_batch = instanceMetadataBatch;
    handle->lb.struct_size = sizeof(ccm_loadbalancer_v1);
    handle->lb.max_concurrency = 8;
    handle->lb.get_load_balancer = getLoadBalancer;
    handle->lb.get_load_balancer_name = getLoadBalancerName;
    handle->lb.ensure_load_balancer = ensureLoadBalancer;
    handle->lb.update_load_balancer = updateLoadBalancer;
    handle->lb.ensure_load_balancer_deleted = ensureLoadBalancerDeleted;
    handle->routes.struct_size = sizeof(ccm_routes_v1);
    handle->routes.max_concurrency = 8;
    handle->routes.list_routes = listRoutes;
    handle->routes.create_route = createRoute;
    handle->routes.delete_route = deleteRoute;
    *out = handle.release();
    return {};
  });
}

void destroyProvider(ccm_provider* provider) {
  std::unique_ptr<ccm_provider> owned(provider);  // never throws
}

const void* getCapability(ccm_provider* p, ccm_str id) {
  if (p == nullptr) return nullptr;
  std::string_view want(id.data == nullptr ? "" : id.data, id.size);
  if (want == CCM_CAP_INSTANCES) return &p->instances;
  if (want == CCM_CAP_INSTANCES_BATCH) return &p->batch;
  if (want == CCM_CAP_LOADBALANCER) return p->impl->loadBalancers() != nullptr ? &p->lb : nullptr;
  if (want == CCM_CAP_ROUTES) return p->impl->routes() != nullptr ? &p->routes : nullptr;
  return nullptr;
}

const ccm_plugin kPlugin = {
    sizeof(ccm_plugin),
    CCM_ABI_MAJOR,
    0,
    {kPluginName, 9},
    {kPluginVersion, 5},
    createProvider,
    destroyProvider,
    getCapability,
};

}  // namespace

extern "C" CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* host,
                                                              const ccm_call* call,
                                                              const ccm_plugin** out) {
  try {
    if (out == nullptr || host == nullptr) return CCM_STATUS_INVALID_ARGUMENT;
    *out = nullptr;
    ccm_host_info info = readStruct(host);
    ccm_host_services services{};
    if (info.services != nullptr) services = readStruct(info.services);
    ccm_call c = readStruct(call);
    auto refuse = [&](const std::string& msg) {
      if (CCM_OS_HAS_SLOT(services, set_error)) {
        services.set_error(info.host, c.call_id, ccm_str{msg.data(), msg.size()}, 0);
      }
      return CCM_STATUS_FAILED_PRECONDITION;
    };
    if (info.abi_major != CCM_ABI_MAJOR) {
      return refuse("the openstack plugin speaks ABI " + std::to_string(CCM_ABI_MAJOR) + "." +
                    std::to_string(CCM_ABI_MINOR) + "; the host speaks " +
                    std::to_string(info.abi_major) + "." + std::to_string(info.abi_minor));
    }
    if (info.services == nullptr) return refuse("the host passed no services table");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    hostEnv().emplace(info.host, services);
    *out = &kPlugin;
    return CCM_STATUS_OK;
  } catch (...) {
    return CCM_STATUS_INTERNAL;
  }
}
