// ccm/provider.hpp — the header-only C++ helper for writing a ccm provider plugin.
//
// A provider is a C++ class deriving from ccm::sdk::Provider, with a static factory:
//
//   class MyProvider : public ccm::sdk::Provider, public ccm::sdk::Instances {
//    public:
//     static ccm::sdk::Result<std::unique_ptr<MyProvider>> create(const ccm::sdk::Host& host,
//                                                                 std::string_view config);
//     ccm::sdk::Instances* instances() override { return this; }
//     ccm::sdk::Result<ccm::sdk::Existence> instanceExists(const ccm::sdk::Call&,
//                                                          const ccm::sdk::NodeView&) override;
//     ...
//   };
//   CCM_SDK_PROVIDER(MyProvider, "my-cloud", "1.2.0")
//
// or, to declare what ABI 1.1 lets a provider declare (each may be left empty):
//
//   CCM_SDK_PROVIDER_DESCRIBED(MyProvider, (ccm::sdk::PluginDescription{
//       .name = "my-cloud", .version = "1.2.0",
//       .provider_id_prefix = "mycloud://",           // metadata providerIDs start with it
//       .annotation_domain = "lb.my-cloud.example",   // where LoadBalancerStatus.annotations go
//       .metric_namespace = "mycloud"}))              // "mycloud_*" metrics keep their names
//
// CCM_SDK_PROVIDER defines the one exported symbol (ccm_provider_entry_v1) and the C tables
// behind it. Every call into the class is wrapped: a thrown exception becomes
// CCM_STATUS_INTERNAL with its message, never an unwind across the ABI. Returned Errors carry
// their code, message and retry-after to the host.
//
// Inputs (NodeView, ServiceView, RouteView data) are views into host memory, valid for the
// call only: copy what you keep (NodeView::toNode() and ServiceView::toService() give owning
// sdk::Node and sdk::Service values). Each method gets the Call it runs under: its deadline
// (timeLeft()), checkAlive() between steps, and log lines with fields (info() and friends). Outputs are returned as values; the helper hands them to the
// host, which copies them.
//
// Build the plugin with -fvisibility=hidden: only ccm_provider_entry_v1 is exported.
#pragma once

#if !defined(__cplusplus) || __cplusplus < 202002L
#error "ccm/provider.hpp needs C++20: compile with -std=c++20 or later (CMake's ccm::plugin-sdk target sets it). A provider in C needs only ccm/provider_abi.h."
#endif

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ccm/provider_abi.h"
#include "ccm/types.hpp"

namespace ccm::sdk {
inline namespace v1 {

// ---- the host, as the plugin sees it ----------------------------------------------------------

// Access to the host's services (logging, metrics, secrets, clocks). Valid from negotiation
// on; one per plugin. THREAD: any thread.
class Host {
 public:
  void log(ccm_log_level level, std::string_view message) const {
    if (ready_ && has(offsetof(ccm_host_services, log)) && services_.log != nullptr) {
      services_.log(handle_, level, str(message));
    }
  }
  // A log line with structured fields (ABI 1.1 log_fields). A 1.0 host has no such service:
  // the fields are then appended to the message as key="value" text.
  void logFields(ccm_log_level level, std::string_view message, const Labels& fields) const {
    if (!ready_) {
      return;
    }
    if (minor_ >= 1 && has(offsetof(ccm_host_services, log_fields)) &&
        services_.log_fields != nullptr) {
      std::vector<ccm_kv> kv;
      kv.reserve(fields.size());
      for (const auto& [k, v] : fields) {
        kv.push_back({str(k), str(v)});
      }
      services_.log_fields(handle_, level, str(message), kv.data(), kv.size());
      return;
    }
    // klog's text form: key="value", with '"' and backslash escaped and newlines as \n.
    std::string text(message);
    for (const auto& [k, v] : fields) {
      text.append(" ").append(k).append("=\"");
      for (char c : v) {
        if (c == '\n') {
          text.append("\\n");
          continue;
        }
        if (c == '"' || c == '\\') {
          text.push_back('\\');
        }
        text.push_back(c);
      }
      text.push_back('"');
    }
    log(level, text);
  }
  void info(std::string_view m) const { log(CCM_LOG_INFO, m); }
  void warning(std::string_view m) const { log(CCM_LOG_WARNING, m); }
  void error(std::string_view m) const { log(CCM_LOG_ERROR, m); }
  void debug(std::string_view m) const { log(CCM_LOG_DEBUG, m); }

  // Declare a secret so no log line ever shows it.
  void registerSecret(std::string_view value) const {
    if (ready_ && has(offsetof(ccm_host_services, register_secret)) &&
        services_.register_secret != nullptr) {
      services_.register_secret(handle_, str(value));
    }
  }

  void counterAdd(std::string_view name, std::string_view help, const Labels& labels,
                  double value) const {
    metric(CCM_METRIC_COUNTER, name, help, labels, value);
  }
  void gaugeSet(std::string_view name, std::string_view help, const Labels& labels,
                double value) const {
    metric(CCM_METRIC_GAUGE, name, help, labels, value);
  }
  void observeSeconds(std::string_view name, std::string_view help, const Labels& labels,
                      double seconds) const {
    metric(CCM_METRIC_HISTOGRAM, name, help, labels, seconds);
  }

  int64_t nowMonotonicNs() const {
    if (ready_ && has(offsetof(ccm_host_services, now_monotonic_ns)) &&
        services_.now_monotonic_ns != nullptr) {
      return services_.now_monotonic_ns(handle_);
    }
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t nowUnixNs() const {
    if (ready_ && has(offsetof(ccm_host_services, now_unix_ns)) &&
        services_.now_unix_ns != nullptr) {
      return services_.now_unix_ns(handle_);
    }
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // The host's name and version as given at negotiation.
  const std::string& hostName() const { return host_name_; }
  const std::string& hostVersion() const { return host_version_; }
  uint32_t negotiatedMinor() const { return minor_; }

  // For the helper itself and for tests.
  ccm_host_handle handle() const { return handle_; }
  const ccm_host_services& services() const { return services_; }
  bool has(size_t slot_offset) const {
    return slot_offset + sizeof(void*) <= services_.struct_size;
  }
  // The service slot at this offset when the host's table has it, else nullptr.
  template <typename Fn>
  Fn slot(Fn ccm_host_services::*member, size_t offset) const {
    return ready_ && has(offset) ? services_.*member : nullptr;
  }

  static Host& instance() {
    static Host host;
    return host;
  }

  void init(const ccm_host_info& info, uint32_t minor) {
    handle_ = info.host;
    services_ = copyStruct(info.services);
    host_name_ = std::string(view(info.host_name));
    host_version_ = std::string(view(info.host_version));
    minor_ = minor;
    ready_ = true;
  }

 private:
  void metric(ccm_metric_kind kind, std::string_view name, std::string_view help,
              const Labels& labels, double value) const {
    if (!ready_ || !has(offsetof(ccm_host_services, metric)) || services_.metric == nullptr) {
      return;
    }
    std::vector<ccm_kv> kv;
    kv.reserve(labels.size());
    for (const auto& [k, v] : labels) {
      kv.push_back({str(k), str(v)});
    }
    services_.metric(handle_, kind, str(name), str(help), kv.data(), kv.size(), value);
  }

  bool ready_ = false;
  ccm_host_handle handle_ = 0;
  ccm_host_services services_{};
  std::string host_name_;
  std::string host_version_;
  uint32_t minor_ = 0;
};

// One call in progress: its id, deadline and cancellation, and log lines about it.
// OWNERSHIP: refers to its Host, which outlives every call. THREAD: the calling thread (or
// threads the provider starts for this call, while the call runs). Cheap to copy.
class Call {
 public:
  // The call the host is making (the helper builds one for every capability call).
  explicit Call(const ccm_call* c) : Call(Host::instance(), c) {}
  // The same over another Host (tests that drive a Host of their own).
  Call(const Host& host, const ccm_call* c) : host_(&host), c_(copyStruct(c)) {}

  // A call the host gave no ccm_call for (work the provider starts itself, or a create of the
  // older form without a Call): id 0, no deadline, and the host is never asked about
  // cancellation.
  static Call lifecycle(const Host& host = Host::instance()) {
    Call c(host, nullptr);
    c.probe_cancellation_ = false;
    return c;
  }

  const Host& host() const { return *host_; }
  uint64_t id() const { return c_.call_id; }
  // Nanoseconds on the host's monotonic clock; 0 = no deadline.
  int64_t deadlineNs() const { return c_.deadline_monotonic_ns; }
  bool hasDeadline() const { return c_.deadline_monotonic_ns != 0; }

  // True once the host wants the call to stop (deadline passed, shutdown, lost leadership).
  bool cancelled() const {
    if (!probe_cancellation_) {
      return pastDeadline();
    }
    if (auto probe = host_->slot(&ccm_host_services::is_cancelled,
                                 offsetof(ccm_host_services, is_cancelled))) {
      return probe(host_->handle(), c_.call_id);
    }
    return pastDeadline();
  }

  // Time left before the deadline (a large value when there is none; zero when past).
  std::chrono::nanoseconds remaining() const {
    return timeLeft().value_or(std::chrono::hours(24));
  }
  // Time left before the deadline on the host's monotonic clock, zero once past; nullopt
  // when the call has no deadline.
  std::optional<std::chrono::nanoseconds> timeLeft() const {
    if (!hasDeadline()) {
      return std::nullopt;
    }
    int64_t left = c_.deadline_monotonic_ns - host_->nowMonotonicNs();
    return std::chrono::nanoseconds(left > 0 ? left : 0);
  }

  // OK while the call may go on; DEADLINE_EXCEEDED once its deadline has passed, CANCELLED
  // once the host says stop. Check it between steps and return it when it fails.
  Status checkAlive() const {
    if (pastDeadline()) {
      return Error::deadlineExceeded("the call's deadline has passed");
    }
    if (probe_cancellation_) {
      if (auto probe = host_->slot(&ccm_host_services::is_cancelled,
                                   offsetof(ccm_host_services, is_cancelled))) {
        if (probe(host_->handle(), c_.call_id)) {
          return Error::cancelled("the host cancelled the call");
        }
      }
    }
    return {};
  }

  // Log lines through the host, with structured fields (Host::logFields; none: Host::log).
  void info(std::string_view message, const Labels& fields = {}) const {
    log(CCM_LOG_INFO, message, fields);
  }
  void debug(std::string_view message, const Labels& fields = {}) const {
    log(CCM_LOG_DEBUG, message, fields);
  }
  void warning(std::string_view message, const Labels& fields = {}) const {
    log(CCM_LOG_WARNING, message, fields);
  }
  void error(std::string_view message, const Labels& fields = {}) const {
    log(CCM_LOG_ERROR, message, fields);
  }
  void log(ccm_log_level level, std::string_view message, const Labels& fields = {}) const {
    if (fields.empty()) {
      host_->log(level, message);
    } else {
      host_->logFields(level, message, fields);
    }
  }

 private:
  bool pastDeadline() const {
    return hasDeadline() && host_->nowMonotonicNs() >= c_.deadline_monotonic_ns;
  }

  const Host* host_;
  ccm_call c_;
  bool probe_cancellation_ = true;
};

// ---- input views -----------------------------------------------------------------------------

using KeyValueView = std::pair<std::string_view, std::string_view>;

struct AddressView {
  std::string_view type;
  std::string_view address;
};

namespace detail {
inline std::optional<std::string_view> find(const ccm_kv* kv, size_t n, std::string_view key) {
  for (size_t i = 0; kv != nullptr && i < n; ++i) {
    if (view(kv[i].key) == key) {
      return view(kv[i].value);
    }
  }
  return std::nullopt;
}
inline std::vector<KeyValueView> all(const ccm_kv* kv, size_t n) {
  std::vector<KeyValueView> out;
  for (size_t i = 0; kv != nullptr && i < n; ++i) {
    out.emplace_back(view(kv[i].key), view(kv[i].value));
  }
  return out;
}
inline StringMap stringMap(const ccm_kv* kv, size_t n) {
  StringMap out;
  for (size_t i = 0; kv != nullptr && i < n; ++i) {
    out.insert_or_assign(std::string(view(kv[i].key)), std::string(view(kv[i].value)));
  }
  return out;
}
inline std::vector<std::string> ownedStrings(const ccm_str* s, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; s != nullptr && i < n; ++i) {
    out.emplace_back(view(s[i]));
  }
  return out;
}
inline std::vector<std::string_view> strings(const ccm_str* s, size_t n) {
  std::vector<std::string_view> out;
  for (size_t i = 0; s != nullptr && i < n; ++i) {
    out.push_back(view(s[i]));
  }
  return out;
}
}  // namespace detail

// A Node as the host passed it. Valid for the call only.
class NodeView {
 public:
  explicit NodeView(const ccm_node* n) : n_(copyStruct(n)), info_(copyStruct(n_.node_info)) {}

  std::string_view name() const { return view(n_.name); }
  std::string_view uid() const { return view(n_.uid); }
  std::string_view providerId() const { return view(n_.provider_id); }
  std::optional<std::string_view> label(std::string_view key) const {
    return detail::find(n_.labels, n_.label_count, key);
  }
  std::optional<std::string_view> annotation(std::string_view key) const {
    return detail::find(n_.annotations, n_.annotation_count, key);
  }
  std::vector<KeyValueView> labels() const { return detail::all(n_.labels, n_.label_count); }
  std::vector<KeyValueView> annotations() const {
    return detail::all(n_.annotations, n_.annotation_count);
  }
  std::vector<AddressView> addresses() const {
    std::vector<AddressView> out;
    for (size_t i = 0; n_.addresses != nullptr && i < n_.address_count; ++i) {
      out.push_back({view(n_.addresses[i].type), view(n_.addresses[i].address)});
    }
    return out;
  }
  std::string_view systemUuid() const { return view(info_.system_uuid); }
  std::string_view machineId() const { return view(info_.machine_id); }
  std::string_view kubeletVersion() const { return view(info_.kubelet_version); }
  std::string_view architecture() const { return view(info_.architecture); }
  std::string_view operatingSystem() const { return view(info_.operating_system); }
  const ccm_node_info& nodeInfo() const { return info_; }
  // The whole Node as JSON; empty unless the capability asked for it (wantsObjectJson).
  std::string_view objectJson() const { return view(n_.object_json); }
  const ccm_node& raw() const { return n_; }

  // An owning copy of everything above, for a provider that keeps the Node past the call.
  // A key given twice keeps its last value.
  Node toNode() const {
    Node out;
    out.name = std::string(name());
    out.uid = std::string(uid());
    out.provider_id = std::string(providerId());
    out.labels = detail::stringMap(n_.labels, n_.label_count);
    out.annotations = detail::stringMap(n_.annotations, n_.annotation_count);
    out.addresses = toAddresses(n_.addresses, n_.address_count);
    out.node_info = NodeInfo{std::string(view(info_.machine_id)),
                             std::string(view(info_.system_uuid)),
                             std::string(view(info_.boot_id)),
                             std::string(view(info_.kernel_version)),
                             std::string(view(info_.os_image)),
                             std::string(view(info_.container_runtime_version)),
                             std::string(view(info_.kubelet_version)),
                             std::string(view(info_.operating_system)),
                             std::string(view(info_.architecture))};
    out.object_json = std::string(objectJson());
    return out;
  }

 private:
  ccm_node n_;
  ccm_node_info info_;
};

struct ServicePortView {
  std::string_view name;
  std::string_view protocol;
  int32_t port;
  int32_t node_port;
  std::string_view target_port;
  std::string_view app_protocol;
};

// A Service as the host passed it. Valid for the call only.
class ServiceView {
 public:
  explicit ServiceView(const ccm_service* s) : s_(copyStruct(s)) {}

  std::string_view namespaceName() const { return view(s_.namespace_); }
  std::string_view name() const { return view(s_.name); }
  std::string_view uid() const { return view(s_.uid); }
  std::optional<std::string_view> annotation(std::string_view key) const {
    return detail::find(s_.annotations, s_.annotation_count, key);
  }
  std::vector<KeyValueView> annotations() const {
    return detail::all(s_.annotations, s_.annotation_count);
  }
  std::vector<KeyValueView> labels() const { return detail::all(s_.labels, s_.label_count); }
  std::string_view type() const { return view(s_.type); }
  std::vector<ServicePortView> ports() const {
    std::vector<ServicePortView> out;
    for (size_t i = 0; s_.ports != nullptr && i < s_.port_count; ++i) {
      ccm_service_port p = copyStruct(s_.ports[i]);
      out.push_back({view(p.name), view(p.protocol), p.port, p.node_port, view(p.target_port),
                     view(p.app_protocol)});
    }
    return out;
  }
  std::string_view loadBalancerIp() const { return view(s_.load_balancer_ip); }
  std::vector<std::string_view> sourceRanges() const {
    return detail::strings(s_.source_ranges, s_.source_range_count);
  }
  std::string_view externalTrafficPolicy() const { return view(s_.external_traffic_policy); }
  int32_t healthCheckNodePort() const { return s_.health_check_node_port; }
  std::vector<std::string_view> ipFamilies() const {
    return detail::strings(s_.ip_families, s_.ip_family_count);
  }
  std::string_view loadBalancerClass() const { return view(s_.load_balancer_class); }
  std::string_view sessionAffinity() const { return view(s_.session_affinity); }
  std::string_view clusterIp() const { return view(s_.cluster_ip); }
  LoadBalancerStatus currentStatus() const { return toLoadBalancerStatus(s_.current_status); }
  std::string_view objectJson() const { return view(s_.object_json); }
  const ccm_service& raw() const { return s_; }

  // An owning copy of everything above, for a provider that keeps the Service past the call.
  // A key given twice keeps its last value.
  Service toService() const {
    Service out;
    out.namespace_ = std::string(namespaceName());
    out.name = std::string(name());
    out.uid = std::string(uid());
    out.labels = detail::stringMap(s_.labels, s_.label_count);
    out.annotations = detail::stringMap(s_.annotations, s_.annotation_count);
    out.type = std::string(type());
    for (const ServicePortView& p : ports()) {
      out.ports.push_back({std::string(p.name), std::string(p.protocol), p.port, p.node_port,
                           std::string(p.target_port), std::string(p.app_protocol)});
    }
    out.load_balancer_ip = std::string(loadBalancerIp());
    out.source_ranges = detail::ownedStrings(s_.source_ranges, s_.source_range_count);
    out.external_traffic_policy = std::string(externalTrafficPolicy());
    out.health_check_node_port = healthCheckNodePort();
    out.ip_families = detail::ownedStrings(s_.ip_families, s_.ip_family_count);
    out.load_balancer_class = std::string(loadBalancerClass());
    out.session_affinity = std::string(sessionAffinity());
    out.cluster_ip = std::string(clusterIp());
    out.current_status = currentStatus();
    out.object_json = std::string(objectJson());
    return out;
  }

 private:
  ccm_service s_;
};

// ---- capabilities ------------------------------------------------------------------------------

// "ccm.instances/1". THREAD: any worker, concurrently up to maxConcurrency().
class Instances {
 public:
  virtual ~Instances() = default;
  // EXISTS, NOT_FOUND (the cloud positively says it is gone) or an Error (read as unknown).
  virtual Result<Existence> instanceExists(const Call& call, const NodeView& node) = 0;
  // RUNNING, SHUTDOWN, or an Error; Error::unimplemented means "never shut down".
  virtual Result<Power> instanceShutdown(const Call& call, const NodeView& node) = 0;
  // Metadata; std::nullopt = "not yet" (the node stays uninitialised); Error::notFound when
  // the instance does not exist.
  virtual Result<std::optional<InstanceMetadata>> instanceMetadata(const Call& call,
                                                                   const NodeView& node) = 0;
  virtual uint32_t maxConcurrency() const { return 0; }
  virtual bool wantsObjectJson() const { return false; }
};

// "ccm.instances.batch/1". THREAD: any worker, concurrently up to maxConcurrency().
class InstancesBatch {
 public:
  virtual ~InstancesBatch() = default;
  // One result per node, in input order. A missing entry reads as UNAVAILABLE for that node;
  // an Error for the whole call fails every node.
  virtual Result<std::vector<Result<InstanceMetadata>>> instanceMetadataBatch(
      const Call& call, std::span<const NodeView> nodes) = 0;
  virtual uint32_t maxBatchSize() const { return 0; }
  virtual uint32_t maxConcurrency() const { return 0; }
  virtual bool wantsObjectJson() const { return false; }
};

// "ccm.loadbalancer/1". Calls for one service never overlap. Ensure, update and delete must be
// idempotent.
class LoadBalancer {
 public:
  virtual ~LoadBalancer() = default;
  // The status when a load balancer exists for the service, std::nullopt when none does.
  virtual Result<std::optional<LoadBalancerStatus>> getLoadBalancer(
      const Call& call, std::string_view cluster_name, const ServiceView& service) = 0;
  virtual Result<std::string> getLoadBalancerName(const Call& call, std::string_view cluster_name,
                                                  const ServiceView& service) = 0;
  virtual Result<LoadBalancerStatus> ensureLoadBalancer(const Call& call,
                                                        std::string_view cluster_name,
                                                        const ServiceView& service,
                                                        std::span<const NodeView> nodes) = 0;
  virtual Status updateLoadBalancer(const Call& call, std::string_view cluster_name,
                                    const ServiceView& service,
                                    std::span<const NodeView> nodes) = 0;
  virtual Status ensureLoadBalancerDeleted(const Call& call, std::string_view cluster_name,
                                           const ServiceView& service) = 0;
  virtual uint32_t maxConcurrency() const { return 0; }
  virtual bool wantsObjectJson() const { return false; }
};

// "ccm.routes/1".
class Routes {
 public:
  virtual ~Routes() = default;
  virtual Result<std::vector<Route>> listRoutes(const Call& call,
                                                std::string_view cluster_name) = 0;
  virtual Status createRoute(const Call& call, std::string_view cluster_name,
                             std::string_view name_hint, const Route& route) = 0;
  virtual Status deleteRoute(const Call& call, std::string_view cluster_name,
                             const Route& route) = 0;
  virtual uint32_t maxConcurrency() const { return 0; }
};

// What a plugin says about itself at negotiation. The last three are ABI 1.1 declarations
// (empty or nullptr: not declared; ccm/validation.hpp has the rules the host checks):
//   provider_id_prefix  the providerID scheme it owns, e.g. "mycloud://";
//   annotation_domain   the DNS subdomain its LoadBalancerStatus.annotations live in;
//   metric_namespace    metrics named "<namespace>_..." are exposed without "ccm_provider_".
struct PluginDescription {
  const char* name = "";
  const char* version = "";
  const char* provider_id_prefix = nullptr;
  const char* annotation_domain = nullptr;
  const char* metric_namespace = nullptr;
};

// Optional (ABI 1.1): a provider that can take new --cloud-config bytes without a restart
// (e.g. a rotated credential) also derives from Reconfigurable; the helper then fills the
// plugin table's reconfigure slot, and leaves it NULL for every other provider (the host then
// says the change applies at the next restart). Parse the bytes with the same code as create;
// on success switch to them for the calls that start afterwards (calls already running may
// finish with the old settings); on an Error keep the old settings in full and name the key
// that is wrong. THREAD: one host thread, never two reconfigures at once, but capability
// calls run at the same time: swap the settings atomically.
class Reconfigurable {
 public:
  virtual ~Reconfigurable() = default;
  virtual Status reconfigure(const Call& call, std::string_view config) = 0;
};

// The provider. Return the capabilities you implement (often `this`), nullptr for the rest.
class Provider {
 public:
  virtual ~Provider() = default;
  virtual Instances* instances() { return nullptr; }
  virtual InstancesBatch* instancesBatch() { return nullptr; }
  virtual LoadBalancer* loadBalancer() { return nullptr; }
  virtual Routes* routes() { return nullptr; }
};

// ---- the glue between the C ABI and the classes above ------------------------------------------

// The host service `name` when the host's table has that slot, else nullptr.
#define CCM_SDK_SLOT(name)                                    \
  ::ccm::sdk::Host::instance().slot(&ccm_host_services::name, \
                                    offsetof(ccm_host_services, name))

namespace detail {

// What a ccm_provider* points to.
struct Box {
  std::unique_ptr<Provider> impl;
  Instances* instances = nullptr;
  InstancesBatch* batch = nullptr;
  LoadBalancer* lb = nullptr;
  Routes* routes = nullptr;
  ccm_instances_v1 instances_table{};
  ccm_instances_batch_v1 batch_table{};
  ccm_loadbalancer_v1 lb_table{};
  ccm_routes_v1 routes_table{};
};

inline Box* box(ccm_provider* p) { return reinterpret_cast<Box*>(p); }

inline void setError(const ccm_call* call, std::string_view message,
                     std::chrono::milliseconds retry_after = {}) {
  if (auto set = CCM_SDK_SLOT(set_error); set != nullptr && call != nullptr) {
    set(Host::instance().handle(), call->call_id, str(message), retry_after.count());
  }
}

inline ccm_status fail(const ccm_call* call, const Error& e) {
  setError(call, e.message(), e.retryAfter());
  return e.code() == CCM_STATUS_OK ? CCM_STATUS_INTERNAL : e.code();
}

// Runs fn, turning any exception into INTERNAL: nothing unwinds into the host.
template <typename Fn>
ccm_status guard(const ccm_call* call, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::exception& e) {
    try {
      setError(call, std::string("provider threw an exception: ") + e.what());
    } catch (...) {
    }
    return CCM_STATUS_INTERNAL;
  } catch (...) {
    setError(call, "provider threw a non-standard exception");
    return CCM_STATUS_INTERNAL;
  }
}

inline uint64_t callId(const ccm_call* call) { return call != nullptr ? call->call_id : 0; }

inline bool emitMetadata(const ccm_call* call, size_t index, const InstanceMetadata& m) {
  auto emit = CCM_SDK_SLOT(emit_instance_metadata);
  CInstanceMetadata c(m);
  return emit != nullptr && emit(Host::instance().handle(), callId(call), index, c.get());
}

inline bool emitStatus(const ccm_call* call, const LoadBalancerStatus& s) {
  auto emit = CCM_SDK_SLOT(emit_lb_status);
  CLoadBalancerStatus c(s);
  if (Host::instance().negotiatedMinor() < 1) {
    // A 1.0 host knows no annotations: hand it the 1.0 struct.
    ccm_lb_status old = *c.get();
    old.struct_size = static_cast<uint32_t>(offsetof(ccm_lb_status, annotations));
    return emit != nullptr && emit(Host::instance().handle(), callId(call), &old);
  }
  return emit != nullptr && emit(Host::instance().handle(), callId(call), c.get());
}

inline std::vector<NodeView> nodeViews(const ccm_node* const* nodes, size_t n) {
  std::vector<NodeView> out;
  out.reserve(n);
  for (size_t i = 0; nodes != nullptr && i < n; ++i) {
    out.emplace_back(nodes[i]);
  }
  return out;
}

struct Thunks {
  // ccm.instances/1
  static ccm_status exists(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                           ccm_existence* out) {
    return guard(call, [&]() -> ccm_status {
      Result<Existence> r = box(p)->instances->instanceExists(Call(call), NodeView(node));
      if (!r.ok()) {
        return fail(call, r.error());
      }
      *out = static_cast<ccm_existence>(r.value());
      return CCM_STATUS_OK;
    });
  }
  static ccm_status shutdown(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                             ccm_power* out) {
    return guard(call, [&]() -> ccm_status {
      Result<Power> r = box(p)->instances->instanceShutdown(Call(call), NodeView(node));
      if (!r.ok()) {
        return fail(call, r.error());
      }
      *out = static_cast<ccm_power>(r.value());
      return CCM_STATUS_OK;
    });
  }
  static ccm_status metadata(ccm_provider* p, const ccm_call* call, const ccm_node* node) {
    return guard(call, [&]() -> ccm_status {
      auto r = box(p)->instances->instanceMetadata(Call(call), NodeView(node));
      if (!r.ok()) {
        return fail(call, r.error());
      }
      if (r.value().has_value()) {
        emitMetadata(call, 0, *r.value());
      }
      return CCM_STATUS_OK;
    });
  }
  // ccm.instances.batch/1
  static ccm_status batch(ccm_provider* p, const ccm_call* call, const ccm_node* const* nodes,
                          size_t count) {
    return guard(call, [&]() -> ccm_status {
      std::vector<NodeView> views = nodeViews(nodes, count);
      auto r = box(p)->batch->instanceMetadataBatch(Call(call), views);
      if (!r.ok()) {
        return fail(call, r.error());
      }
      auto item_error = CCM_SDK_SLOT(emit_item_error);
      for (size_t i = 0; i < r.value().size() && i < count; ++i) {
        const auto& item = r.value()[i];
        if (item.ok()) {
          emitMetadata(call, i, item.value());
        } else if (item_error != nullptr) {
          item_error(Host::instance().handle(), callId(call), i, item.error().code(),
                     str(item.error().message()));
        }
      }
      return CCM_STATUS_OK;
    });
  }
  // ccm.loadbalancer/1
  static ccm_status getLb(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                          const ccm_service* svc, bool* out_exists) {
    return guard(call, [&]() -> ccm_status {
      auto r = box(p)->lb->getLoadBalancer(Call(call), view(cluster), ServiceView(svc));
      if (!r.ok()) {
        return fail(call, r.error());
      }
      *out_exists = r.value().has_value();
      if (r.value().has_value()) {
        emitStatus(call, *r.value());
      }
      return CCM_STATUS_OK;
    });
  }
  static ccm_status lbName(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                           const ccm_service* svc) {
    return guard(call, [&]() -> ccm_status {
      auto r = box(p)->lb->getLoadBalancerName(Call(call), view(cluster), ServiceView(svc));
      if (!r.ok()) {
        return fail(call, r.error());
      }
      if (auto emit = CCM_SDK_SLOT(emit_string)) {
        emit(Host::instance().handle(), callId(call), str(r.value()));
      }
      return CCM_STATUS_OK;
    });
  }
  static ccm_status ensureLb(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                             const ccm_service* svc, const ccm_node* const* nodes, size_t n) {
    return guard(call, [&]() -> ccm_status {
      std::vector<NodeView> views = nodeViews(nodes, n);
      auto r = box(p)->lb->ensureLoadBalancer(Call(call), view(cluster), ServiceView(svc), views);
      if (!r.ok()) {
        return fail(call, r.error());
      }
      emitStatus(call, r.value());
      return CCM_STATUS_OK;
    });
  }
  static ccm_status updateLb(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                             const ccm_service* svc, const ccm_node* const* nodes, size_t n) {
    return guard(call, [&]() -> ccm_status {
      std::vector<NodeView> views = nodeViews(nodes, n);
      Status s = box(p)->lb->updateLoadBalancer(Call(call), view(cluster), ServiceView(svc), views);
      return s.ok() ? CCM_STATUS_OK : fail(call, s.error());
    });
  }
  static ccm_status deleteLb(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                             const ccm_service* svc) {
    return guard(call, [&]() -> ccm_status {
      Status s = box(p)->lb->ensureLoadBalancerDeleted(Call(call), view(cluster), ServiceView(svc));
      return s.ok() ? CCM_STATUS_OK : fail(call, s.error());
    });
  }
  // ccm.routes/1
  static ccm_status listRoutes(ccm_provider* p, const ccm_call* call, ccm_str cluster) {
    return guard(call, [&]() -> ccm_status {
      auto r = box(p)->routes->listRoutes(Call(call), view(cluster));
      if (!r.ok()) {
        return fail(call, r.error());
      }
      auto emit = CCM_SDK_SLOT(emit_route);
      for (const Route& route : r.value()) {
        CRoute c(route);
        if (emit == nullptr || !emit(Host::instance().handle(), callId(call), c.get())) {
          break;
        }
      }
      return CCM_STATUS_OK;
    });
  }
  static ccm_status createRoute(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                                ccm_str hint, const ccm_route* route) {
    return guard(call, [&]() -> ccm_status {
      Status s = box(p)->routes->createRoute(Call(call), view(cluster), view(hint), toRoute(route));
      return s.ok() ? CCM_STATUS_OK : fail(call, s.error());
    });
  }
  static ccm_status deleteRoute(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                                const ccm_route* route) {
    return guard(call, [&]() -> ccm_status {
      Status s = box(p)->routes->deleteRoute(Call(call), view(cluster), toRoute(route));
      return s.ok() ? CCM_STATUS_OK : fail(call, s.error());
    });
  }

  static void destroy(ccm_provider* p) noexcept {
    try {
      delete box(p);
    } catch (...) {
    }
  }

  static const void* capability(ccm_provider* p, ccm_str id) noexcept {
    Box* b = box(p);
    std::string_view want = view(id);
    if (want == CCM_CAP_INSTANCES && b->instances != nullptr) {
      return &b->instances_table;
    }
    if (want == CCM_CAP_INSTANCES_BATCH && b->batch != nullptr) {
      return &b->batch_table;
    }
    if (want == CCM_CAP_LOADBALANCER && b->lb != nullptr) {
      return &b->lb_table;
    }
    if (want == CCM_CAP_ROUTES && b->routes != nullptr) {
      return &b->routes_table;
    }
    return nullptr;
  }

  static std::unique_ptr<Box> makeBox(std::unique_ptr<Provider> impl) {
    auto b = std::make_unique<Box>();
    b->impl = std::move(impl);
    b->instances = b->impl->instances();
    b->batch = b->impl->instancesBatch();
    b->lb = b->impl->loadBalancer();
    b->routes = b->impl->routes();
    if (b->instances != nullptr) {
      b->instances_table = {sizeof(ccm_instances_v1), b->instances->maxConcurrency(),
                            b->instances->wantsObjectJson() ? CCM_CAP_WANTS_OBJECT_JSON : 0u,
                            &exists, &shutdown, &metadata};
    }
    if (b->batch != nullptr) {
      b->batch_table = {sizeof(ccm_instances_batch_v1), b->batch->maxConcurrency(),
                        b->batch->wantsObjectJson() ? CCM_CAP_WANTS_OBJECT_JSON : 0u,
                        b->batch->maxBatchSize(), &batch};
    }
    if (b->lb != nullptr) {
      b->lb_table = {sizeof(ccm_loadbalancer_v1), b->lb->maxConcurrency(),
                     b->lb->wantsObjectJson() ? CCM_CAP_WANTS_OBJECT_JSON : 0u,
                     &getLb, &lbName, &ensureLb, &updateLb, &deleteLb};
    }
    if (b->routes != nullptr) {
      b->routes_table = {sizeof(ccm_routes_v1), b->routes->maxConcurrency(), 0u,
                         &listRoutes, &createRoute, &deleteRoute};
    }
    return b;
  }
};

template <typename P>
ccm_status createThunk(const ccm_call* call, ccm_str config, ccm_provider** out) {
  return guard(call, [&]() -> ccm_status {
    Result<std::unique_ptr<P>> r = [&] {
      // A provider whose create takes the call sees the start-up deadline and the host's
      // cancellation (shutdown while starting); the older form is still accepted.
      if constexpr (requires(const Call& c) { P::create(c, Host::instance(), view(config)); }) {
        return P::create(Call(Host::instance(), call), Host::instance(), view(config));
      } else {
        return P::create(Host::instance(), view(config));
      }
    }();
    if (!r.ok()) {
      return fail(call, r.error());
    }
    if (!r.value()) {
      return fail(call, Error::internal("provider factory returned no provider"));
    }
    std::unique_ptr<Box> b = Thunks::makeBox(std::move(r.value()));
    *out = reinterpret_cast<ccm_provider*>(b.release());
    return CCM_STATUS_OK;
  });
}

// The reconfigure slot: a thunk when P derives from Reconfigurable, else NULL.
template <typename P>
ccm_status reconfigureThunk(ccm_provider* p, const ccm_call* call, ccm_str config) {
  return guard(call, [&]() -> ccm_status {
    // The box's provider came from P::create, so it is a P.
    auto& impl = static_cast<Reconfigurable&>(*static_cast<P*>(box(p)->impl.get()));
    Status s = impl.reconfigure(Call(call), view(config));
    return s.ok() ? CCM_STATUS_OK : fail(call, s.error());
  });
}

template <typename P>
constexpr ccm_status (*reconfigureSlot(uint32_t minor))(ccm_provider*, const ccm_call*, ccm_str) {
  if constexpr (std::is_base_of_v<Reconfigurable, P>) {
    return minor >= 1 ? &reconfigureThunk<P> : nullptr;
  } else {
    (void)minor;
    return nullptr;
  }
}

template <typename P>
ccm_status negotiate(const ccm_host_info* host, const ccm_call* call, const ccm_plugin** out,
                     const PluginDescription& description) noexcept {
  const char* name = description.name;
  const char* version = description.version;
  ccm_host_info info = copyStruct(host);
  if (info.abi_major != CCM_ABI_MAJOR) {
    // Fail closed, naming both versions through this caller's own table when it has a
    // set_error slot; the plugin-wide Host (maybe set by an earlier, successful
    // negotiation) is left alone.
    (void)version;
    ccm_host_services theirs = copyStruct(info.services);
    if (call != nullptr && hasField(theirs.struct_size, offsetof(ccm_host_services, set_error),
                                    sizeof(void*)) &&
        theirs.set_error != nullptr) {
      std::string message = "plugin " + std::string(name) + " speaks ABI " +
                            std::to_string(CCM_ABI_MAJOR) + "." + std::to_string(CCM_ABI_MINOR) +
                            " but the host speaks ABI " + std::to_string(info.abi_major) + "." +
                            std::to_string(info.abi_minor);
      theirs.set_error(info.host, call->call_id, str(message), 0);
    }
    return CCM_STATUS_FAILED_PRECONDITION;
  }
  uint32_t minor = ccm_abi_negotiated_minor(info.abi_minor, CCM_ABI_MINOR);
  Host::instance().init(info, minor);
  auto text = [minor](const char* s) {
    // The 1.1 declarations mean nothing to a 1.0 host: left empty then.
    return minor >= 1 && s != nullptr ? ccm_str{s, std::char_traits<char>::length(s)}
                                      : ccm_str{nullptr, 0};
  };
  // Filled at every negotiation (a process may negotiate again, e.g. a test's fake host
  // offering another minor); negotiation never overlaps another call into the plugin.
  static ccm_plugin plugin{};
  plugin = ccm_plugin{sizeof(ccm_plugin),
                                    CCM_ABI_MAJOR,
                                    minor,
                                    {name, std::char_traits<char>::length(name)},
                                    {version, std::char_traits<char>::length(version)},
                                    &createThunk<P>,
                                    &Thunks::destroy,
                                    &Thunks::capability,
                                    reconfigureSlot<P>(minor),
                                    text(description.provider_id_prefix),
                                    text(description.annotation_domain),
                                    text(description.metric_namespace)};
  *out = &plugin;
  return CCM_STATUS_OK;
}

}  // namespace detail
}  // namespace v1
}  // namespace ccm::sdk

// Defines the plugin's entry point for provider class P (see the top of this file).
#define CCM_SDK_PROVIDER(P, NAME, VERSION)                                                   \
  CCM_SDK_PROVIDER_DESCRIBED(P, (::ccm::sdk::PluginDescription{NAME, VERSION}))

// The same, with a PluginDescription (a constant expression) declaring the ABI 1.1 strings.
#define CCM_SDK_PROVIDER_DESCRIBED(P, DESCRIPTION)                                           \
  extern "C" CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(                             \
      const ccm_host_info* host, const ccm_call* call, const ccm_plugin** out) {             \
    static constexpr ::ccm::sdk::PluginDescription kDescription = DESCRIPTION;               \
    return ::ccm::sdk::detail::negotiate<P>(host, call, out, kDescription);                  \
  }
