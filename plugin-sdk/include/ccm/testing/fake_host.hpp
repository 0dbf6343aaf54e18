// ccm/testing/fake_host.hpp — a fake ccm host for provider unit tests (header-only).
//
// It plays the host's part of the ABI without a cluster: negotiates with your plugin (linked
// into the test, or loaded from a .so), creates it with a config, and calls its capabilities
// with typed inputs, collecting what it emits. Logs, registered secrets and metrics are kept
// for assertions.
//
//   ccm::sdk::testing::FakeHost host(&ccm_provider_entry_v1);      // or FakeHost::load("x.so")
//   REQUIRE(host.create("region: r1").ok());
//   ccm::sdk::testing::Node node{"node-1"};
//   auto md = host.instanceMetadata(node);                           // Result<optional<...>>
//
// It is deliberately simple: calls run on the calling thread (several threads may call at
// once, as the host does; each call keeps its own outputs), deadlines are only reported
// (not enforced). Several FakeHosts may be alive at once, each with its own handle; a plugin
// built with ccm/provider.hpp keeps one host per process, the last it negotiated with. The
// real host adds deadline enforcement and concurrency limits on top of
// the same contract. What a test can steer: each call's deadline (setCallTimeout), the
// cancellation every call sees (cancelCalls, also from another thread while a call runs), the
// clocks the plugin reads (advanceUnixClock, advanceMonotonicClock), and the ABI version the
// host offers (FakeHostOptions). Calling create again destroys the previous provider first.
//
// It refuses what the host refuses, with the host's message, because it runs the host's own
// checks (ccm/negotiation.hpp, ccm/output_checks.hpp, ccm/validation.hpp):
//   - at create: a name or version that is not short printable text, a table too short,
//     another major, a minor it does not offer, a NULL required
//     slot, a malformed 1.1 declaration, a capability table too short or with a NULL required
//     slot, no capability at all (FAILED_PRECONDITION);
//   - in a call: output with an inconsistent pointer/length pair, invalid UTF-8, an oversized
//     field, a non-IP address, a providerID outside the declared prefix, an annotation outside
//     the declared domain, OK without a required output, an unknown status code (INTERNAL,
//     the message naming the field);
//   - from a host service: a metric with an invalid name or labels, or one under the host's
//     ccm_provider_ prefix with a "provider" label (the host ignores it and counts bad_metric;
//     here the running call fails, so that the test sees it).
// It offers ABI 1.CCM_ABI_MINOR by default; FakeHostOptions{.abi_minor = 0} makes it a 1.0
// host (no log_fields slot, no annotations read) to test a provider's fallbacks.
#pragma once

#if !defined(__cplusplus) || __cplusplus < 202002L
#error "ccm/testing/fake_host.hpp needs C++20: compile with -std=c++20 or later (CMake's ccm::plugin-sdk target sets it). A provider in C needs only ccm/provider_abi.h."
#endif

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/catalog.hpp"
#include "ccm/negotiation.hpp"
#include "ccm/output_checks.hpp"
#include "ccm/plugin_text.hpp"
#include "ccm/provider_abi.h"
#include "ccm/service_checks.hpp"
#include "ccm/types.hpp"
#include "ccm/validation.hpp"

namespace ccm::sdk {
inline namespace v1 {
namespace testing {

// Inputs, owned by the test.
struct Node {
  Node() = default;
  explicit Node(std::string n) : name(std::move(n)) {}
  std::string name;
  std::string uid = "00000000-0000-0000-0000-000000000001";
  std::string provider_id;
  Labels labels;
  Labels annotations;
  std::vector<NodeAddress> addresses;
};

struct ServicePort {
  std::string name;
  std::string protocol = "TCP";
  int32_t port = 80;
  int32_t node_port = 30080;
};

struct Service {
  std::string namespace_name = "default";
  std::string name = "svc";
  std::string uid = "00000000-0000-0000-0000-000000000002";
  Labels annotations;
  std::vector<ServicePort> ports = {ServicePort{}};
  std::string load_balancer_ip;
  std::vector<std::string> source_ranges;
  std::string external_traffic_policy = "Cluster";
  int32_t health_check_node_port = 0;
  std::vector<std::string> ip_families = {"IPv4"};
  std::string load_balancer_class;
  std::string session_affinity = "None";
  // The whole Service object as JSON (ccm_service.object_json), for fields the ABI does not
  // carry, e.g. R"({"spec":{"ipFamilyPolicy":"PreferDualStack"}})". Empty: none passed.
  std::string object_json;
};

struct FakeHostOptions {
  // The highest minor the fake host offers (0 = a 1.0 host).
  uint32_t abi_minor = CCM_ABI_MINOR;
  // The major it speaks: another one tests the plugin's refusal (create then fails with the
  // plugin's status and message).
  uint32_t abi_major = CCM_ABI_MAJOR;
};

class FakeHost {
 public:
  struct LogLine {
    ccm_log_level level;
    std::string message;
    Labels fields;  // from log_fields (ABI 1.1); empty for log
  };

  explicit FakeHost(ccm_provider_entry_fn entry, FakeHostOptions options = {})
      : entry_(entry), options_(options) {
    std::lock_guard lock(registry().mu);
    handle_ = ++registry().last;
    registry().hosts[handle_] = this;
  }
  ~FakeHost() {
    destroyProvider();
    std::lock_guard lock(registry().mu);
    registry().hosts.erase(handle_);
  }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  // Loads the entry point from a shared library (kept loaded for the process).
  static ccm_provider_entry_fn load(const std::string& path) {
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      throw std::runtime_error(std::string("dlopen failed: ") + ::dlerror());
    }
    void* sym = ::dlsym(lib, CCM_PROVIDER_ENTRY_SYMBOL);
    if (sym == nullptr) {
      throw std::runtime_error(path + " does not export " CCM_PROVIDER_ENTRY_SYMBOL);
    }
    return reinterpret_cast<ccm_provider_entry_fn>(sym);
  }

  // Negotiates with the plugin (once; create does it when not done yet): calls its entry
  // point and checks the table it returns as the host does.
  Status negotiate() {
    if (!negotiated_) {
      ccm_host_info info{};
      info.struct_size = sizeof info;
      info.abi_major = options_.abi_major;
      info.abi_minor = options_.abi_minor;
      info.host_name = str("fake-host");
      info.host_version = str("0.0.0");
      info.host = handle_;
      info.services = options_.abi_minor >= 1 ? &services() : &services10();
      const ccm_plugin* plugin = nullptr;
      Running run = begin();
      ccm_status st = entry_(&info, &run.call, &plugin);
      if (st != CCM_STATUS_OK) {
        return end(run, st);
      }
      finish(run);
      if (std::string problem = checkPluginTable(plugin, options_.abi_minor, &plugin_);
          !problem.empty()) {
        plugin_ = ccm_plugin{};
        return Error::failedPrecondition(problem);
      }
      if (std::string problem = checkPluginIdentity(view(plugin_.name), view(plugin_.version));
          !problem.empty()) {
        plugin_ = ccm_plugin{};
        return Error::failedPrecondition(problem);
      }
      PluginDeclarations declared;
      if (std::string problem = checkDeclarations(plugin_, &declared); !problem.empty()) {
        return Error::failedPrecondition(problem);
      }
      provider_id_prefix_ = declared.provider_id_prefix;
      annotation_domain_ = declared.annotation_domain;
      metric_namespace_ = declared.metric_namespace;
      negotiated_ = true;
    }
    return {};
  }

  // Negotiates (once) and creates the provider from config.
  Status create(std::string_view config) {
    if (Status s = negotiate(); !s.ok()) {
      return s;
    }
    destroyProvider();
    Running run = begin();
    ccm_status st = plugin_.create(&run.call, str(config), &provider_);
    if (Status s = end(run, st); !s.ok()) {
      provider_ = nullptr;
      return s;
    }
    if (provider_ == nullptr) {
      return Error::internal("create returned OK without a provider");
    }
    // The capability tables, checked once as the host does when it creates the provider.
    std::string problem = fetch(instances_);
    problem = problem.empty() ? fetch(batch_) : problem;
    problem = problem.empty() ? fetch(lb_) : problem;
    problem = problem.empty() ? fetch(routes_table_) : problem;
    if (problem.empty() && !instances_ && !batch_ && !lb_ && !routes_table_) {
      problem = "provider " + std::string(name()) +
                " provides no capability: get_capability returned NULL for each of " +
                catalog::capabilityIdList();
    }
    if (!problem.empty()) {
      return Error::failedPrecondition(problem);
    }
    return {};
  }

  // Hands new config bytes to the provider as the host does when --cloud-config changes (ABI
  // 1.1 reconfigure). Unimplemented when the plugin has no reconfigure slot.
  Status reconfigure(std::string_view config) {
    if (provider_ == nullptr) {
      return Error::failedPrecondition("reconfigure before a successful create");
    }
    if (plugin_.abi_minor < 1 || plugin_.reconfigure == nullptr) {
      return Error::unimplemented("the plugin has no reconfigure slot");
    }
    Running run = begin();
    return end(run, plugin_.reconfigure(provider_, &run.call, str(config)));
  }

  // Destroys the provider (as the host does at shutdown); create makes a new one.
  void destroyProvider() {
    if (provider_ != nullptr && plugin_.destroy != nullptr) {
      plugin_.destroy(provider_);
    }
    provider_ = nullptr;
    instances_.reset();
    batch_.reset();
    lb_.reset();
    routes_table_.reset();
  }
  bool hasProvider() const { return provider_ != nullptr; }

  const ccm_plugin& plugin() const { return plugin_; }
  // The minor the plugin chose, and its ABI 1.1 declarations (empty when not declared).
  uint32_t negotiatedMinor() const { return plugin_.abi_minor; }
  const std::string& providerIdPrefix() const { return provider_id_prefix_; }
  const std::string& annotationDomain() const { return annotation_domain_; }
  const std::string& metricNamespace() const { return metric_namespace_; }
  std::string_view name() const { return view(plugin_.name); }

  template <typename T>
  const T* capability(const char* id) const {
    return provider_ == nullptr ? nullptr
                                : static_cast<const T*>(plugin_.get_capability(provider_, str(id)));
  }

  Result<Existence> instanceExists(const Node& node) {
    if (!instances_) {
      return Error::unimplemented("no " CCM_CAP_INSTANCES);
    }
    NodeBuffers b(node);
    ccm_existence out = CCM_EXISTENCE_UNKNOWN;
    Running run = begin();
    Status s = end(run, instances_->instance_exists(provider_, &run.call, &b.node, &out));
    if (!s.ok()) {
      return s.error();
    }
    Existence existence{};
    if (std::string e = acceptExistence(static_cast<int32_t>(out), &existence); !e.empty()) {
      return Error::internal("provider " + std::string(name()) + " returned invalid output: " + e);
    }
    return existence;
  }

  Result<Power> instanceShutdown(const Node& node) {
    if (!instances_) {
      return Error::unimplemented("no " CCM_CAP_INSTANCES);
    }
    NodeBuffers b(node);
    ccm_power out = CCM_POWER_UNKNOWN;
    Running run = begin();
    Status s = end(run, instances_->instance_shutdown(provider_, &run.call, &b.node, &out));
    if (!s.ok()) {
      return s.error();
    }
    Power power{};
    if (std::string e = acceptPower(static_cast<int32_t>(out), &power); !e.empty()) {
      return Error::internal("provider " + std::string(name()) + " returned invalid output: " + e);
    }
    return power;
  }

  // std::nullopt: the provider has no metadata yet (OK without an answer).
  Result<std::optional<InstanceMetadata>> instanceMetadata(const Node& node) {
    if (!instances_) {
      return Error::unimplemented("no " CCM_CAP_INSTANCES);
    }
    NodeBuffers b(node);
    Running run = begin(1, catalog::InstanceMetadata::kOutput);
    Status s = end(run, instances_->instance_metadata(provider_, &run.call, &b.node));
    if (!s.ok()) {
      return s.error();
    }
    return std::move(run.state->metadata[0]);
  }

  // One result per node, in order: the metadata (nullopt: none yet) or the node's error.
  Result<std::vector<Result<std::optional<InstanceMetadata>>>> instanceMetadataBatch(
      const std::vector<Node>& nodes) {
    if (!batch_) {
      return Error::unimplemented("no " CCM_CAP_INSTANCES_BATCH);
    }
    NodeListBuffers nl(nodes);
    Running run = begin(nodes.size(), catalog::InstanceMetadataBatch::kOutput);
    Status s =
        end(run, batch_->instance_metadata_batch(provider_, &run.call, nl.ptrs.data(), nl.ptrs.size()));
    if (!s.ok()) {
      return s.error();
    }
    std::vector<Result<std::optional<InstanceMetadata>>> out;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (run.state->item_errors[i]) {
        out.emplace_back(*run.state->item_errors[i]);
      } else if (run.state->metadata[i]) {
        out.emplace_back(std::move(run.state->metadata[i]));
      } else {
        // As the host answers a node the plugin gave no result for.
        out.emplace_back(Error::unavailable("provider returned no result for node " +
                                            nodes[i].name));
      }
    }
    return out;
  }

  // std::nullopt: no load balancer exists.
  Result<std::optional<LoadBalancerStatus>> getLoadBalancer(
      const Service& svc, std::string_view cluster = "kubernetes") {
    if (!lb_) {
      return Error::unimplemented("no " CCM_CAP_LOADBALANCER);
    }
    ServiceBuffers sb(svc);
    bool exists = false;
    Running run = begin(0, catalog::GetLoadBalancer::kOutput);
    Status s = end(run, lb_->get_load_balancer(provider_, &run.call, str(cluster), &sb.service, &exists));
    if (!s.ok()) {
      return s.error();
    }
    if (!exists) {
      return std::optional<LoadBalancerStatus>();
    }
    if (!run.state->lb_status) {
      return Error::internal(
          "provider returned OK from get_load_balancer with exists set but without a load "
          "balancer status");
    }
    return std::optional<LoadBalancerStatus>(std::move(*run.state->lb_status));
  }

  Result<std::string> getLoadBalancerName(const Service& svc,
                                          std::string_view cluster = "kubernetes") {
    if (!lb_) {
      return Error::unimplemented("no " CCM_CAP_LOADBALANCER);
    }
    ServiceBuffers sb(svc);
    Running run = begin(0, catalog::GetLoadBalancerName::kOutput);
    Status s = end(run, lb_->get_load_balancer_name(provider_, &run.call, str(cluster), &sb.service));
    if (!s.ok()) {
      return s.error();
    }
    if (!run.state->string) {
      return Error::internal("get_load_balancer_name returned OK without a name");
    }
    return *run.state->string;
  }

  Result<LoadBalancerStatus> ensureLoadBalancer(const Service& svc, const std::vector<Node>& nodes,
                                                std::string_view cluster = "kubernetes") {
    if (!lb_) {
      return Error::unimplemented("no " CCM_CAP_LOADBALANCER);
    }
    ServiceBuffers sb(svc);
    NodeListBuffers nl(nodes);
    Running run = begin(0, catalog::EnsureLoadBalancer::kOutput);
    Status s = end(run, lb_->ensure_load_balancer(provider_, &run.call, str(cluster), &sb.service,
                                             nl.ptrs.data(), nl.ptrs.size()));
    if (!s.ok()) {
      return s.error();
    }
    if (!run.state->lb_status) {
      return Error::internal("provider returned OK from ensure_load_balancer without a load "
                             "balancer status");
    }
    return *run.state->lb_status;
  }

  Status updateLoadBalancer(const Service& svc, const std::vector<Node>& nodes,
                            std::string_view cluster = "kubernetes") {
    if (!lb_) {
      return Error::unimplemented("no " CCM_CAP_LOADBALANCER);
    }
    ServiceBuffers sb(svc);
    NodeListBuffers nl(nodes);
    Running run = begin();
    return end(run, lb_->update_load_balancer(provider_, &run.call, str(cluster), &sb.service,
                                         nl.ptrs.data(), nl.ptrs.size()));
  }

  Status ensureLoadBalancerDeleted(const Service& svc, std::string_view cluster = "kubernetes") {
    if (!lb_) {
      return Error::unimplemented("no " CCM_CAP_LOADBALANCER);
    }
    ServiceBuffers sb(svc);
    Running run = begin();
    return end(run, lb_->ensure_load_balancer_deleted(provider_, &run.call, str(cluster), &sb.service));
  }

  Result<std::vector<Route>> listRoutes(std::string_view cluster = "kubernetes") {
    if (!routes_table_) {
      return Error::unimplemented("no " CCM_CAP_ROUTES);
    }
    Running run = begin(0, catalog::ListRoutes::kOutput);
    Status s = end(run, routes_table_->list_routes(provider_, &run.call, str(cluster)));
    if (!s.ok()) {
      return s.error();
    }
    return run.state->routes;
  }

  Status createRoute(const Route& route, std::string_view name_hint,
                     std::string_view cluster = "kubernetes") {
    if (!routes_table_) {
      return Error::unimplemented("no " CCM_CAP_ROUTES);
    }
    CRoute c(route);
    Running run = begin();
    return end(run, 
        routes_table_->create_route(provider_, &run.call, str(cluster), str(name_hint), c.get()));
  }

  Status deleteRoute(const Route& route, std::string_view cluster = "kubernetes") {
    if (!routes_table_) {
      return Error::unimplemented("no " CCM_CAP_ROUTES);
    }
    CRoute c(route);
    Running run = begin();
    return end(run, routes_table_->delete_route(provider_, &run.call, str(cluster), c.get()));
  }

  // What the provider logged, registered as secret, and reported as metrics (last value or
  // sum, by name), as copies (a plugin may call these services from threads of its own).
  std::vector<LogLine> logs() const {
    std::lock_guard lock(mu_);
    return logs_;
  }
  void clearLogs() {
    std::lock_guard lock(mu_);
    logs_.clear();
  }
  std::vector<std::string> secrets() const {
    std::lock_guard lock(mu_);
    return secrets_;
  }
  double metric(const std::string& name) const {
    std::lock_guard lock(mu_);
    auto it = metrics_.find(name);
    return it == metrics_.end() ? 0 : it->second;
  }
  // The fields of the first log line containing text (nullopt: no such line).
  std::optional<Labels> loggedFields(std::string_view text) const {
    std::lock_guard lock(mu_);
    for (const auto& l : logs_) {
      if (l.message.find(text) != std::string::npos) {
        return l.fields;
      }
    }
    return std::nullopt;
  }
  // True when some log line contains text.
  bool logged(std::string_view text) const { return loggedFields(text).has_value(); }

  // The deadline of every call started from now on: now (on the plugin's monotonic clock)
  // plus timeout; zero (the default) passes no deadline.
  void setCallTimeout(std::chrono::nanoseconds timeout) { call_timeout_ns_ = timeout.count(); }
  // While set, is_cancelled answers true for every call, the running one included (this may be
  // called from another thread while a call runs, as the host cancels one in flight).
  void cancelCalls(bool cancelled) { cancel_all_.store(cancelled); }
  // Moves the clocks the plugin reads (now_unix_ns, now_monotonic_ns) by d, e.g. to let a
  // token or a cache expire without waiting. Call deadlines follow the monotonic clock.
  void advanceUnixClock(std::chrono::nanoseconds d) { unix_offset_ns_ += d.count(); }
  void advanceMonotonicClock(std::chrono::nanoseconds d) { mono_offset_ns_ += d.count(); }

 private:

  // Owned C view of a Node.
  struct NodeBuffers {
    explicit NodeBuffers(const Node& n) : src(n) {
      for (const auto& [k, v] : src.labels) {
        labels.push_back({str(k), str(v)});
      }
      for (const auto& [k, v] : src.annotations) {
        annotations.push_back({str(k), str(v)});
      }
      for (const auto& a : src.addresses) {
        addresses.push_back({str(a.type), str(a.address)});
      }
      info.struct_size = sizeof info;
      node = ccm_node{sizeof(ccm_node), str(src.name), str(src.uid), str(src.provider_id),
                      labels.data(), labels.size(), annotations.data(), annotations.size(),
                      addresses.data(), addresses.size(), &info, ccm_str{nullptr, 0}};
    }
    NodeBuffers(const NodeBuffers& o) : NodeBuffers(o.src) {}
    Node src;
    std::vector<ccm_kv> labels;
    std::vector<ccm_kv> annotations;
    std::vector<ccm_node_address> addresses;
    ccm_node_info info{};
    ccm_node node{};
  };

  // Owned C views of a list of Nodes, and the pointer array the ABI takes. Not copyable: the
  // pointers point into buffers.
  struct NodeListBuffers {
    explicit NodeListBuffers(const std::vector<Node>& nodes)
        : buffers(nodes.begin(), nodes.end()) {
      for (auto& n : buffers) {
        ptrs.push_back(&n.node);
      }
    }
    NodeListBuffers(const NodeListBuffers&) = delete;
    NodeListBuffers& operator=(const NodeListBuffers&) = delete;
    std::vector<NodeBuffers> buffers;
    std::vector<const ccm_node*> ptrs;
  };

  // Owned C view of a Service.
  struct ServiceBuffers {
    explicit ServiceBuffers(const Service& s) : src(s) {
      for (const auto& [k, v] : src.annotations) {
        annotations.push_back({str(k), str(v)});
      }
      for (const auto& p : src.ports) {
        ports.push_back({sizeof(ccm_service_port), str(p.name), str(p.protocol), p.port,
                         p.node_port, ccm_str{nullptr, 0}, ccm_str{nullptr, 0}});
      }
      for (const auto& p : ports) {
        port_ptrs.push_back(&p);
      }
      for (const auto& r : src.source_ranges) {
        ranges.push_back(str(r));
      }
      status.struct_size = sizeof status;
      service = ccm_service{};
      service.struct_size = sizeof(ccm_service);
      service.namespace_ = str(src.namespace_name);
      service.name = str(src.name);
      service.uid = str(src.uid);
      service.annotations = annotations.data();
      service.annotation_count = annotations.size();
      service.type = str("LoadBalancer");
      service.ports = port_ptrs.data();
      service.port_count = port_ptrs.size();
      service.load_balancer_ip = str(src.load_balancer_ip);
      service.source_ranges = ranges.data();
      service.source_range_count = ranges.size();
      service.external_traffic_policy = str(src.external_traffic_policy);
      service.health_check_node_port = src.health_check_node_port;
      for (const auto& f : src.ip_families) {
        families.push_back(str(f));
      }
      service.ip_families = families.data();
      service.ip_family_count = families.size();
      service.load_balancer_class = str(src.load_balancer_class);
      service.session_affinity = str(src.session_affinity);
      service.object_json = str(src.object_json);
      service.current_status = &status;
    }
    Service src;
    std::vector<ccm_kv> annotations;
    std::vector<ccm_service_port> ports;
    std::vector<const ccm_service_port*> port_ptrs;
    std::vector<ccm_str> ranges;
    std::vector<ccm_str> families;
    ccm_lb_status status{};
    ccm_service service{};
  };

  // Fetches capability Table and checks it as the host does; an absent one leaves out empty.
  template <typename Table>
  std::string fetch(std::optional<Table>& out) {
    out.reset();
    constexpr std::string_view id = catalog::Capability<Table>::kId;
    const auto* raw = static_cast<const Table*>(plugin_.get_capability(provider_, str(id)));
    if (raw == nullptr) {
      return {};
    }
    Table table{};
    if (std::string problem = checkCapabilityTable(id, raw, &table); !problem.empty()) {
      return "provider " + std::string(name()) + ": " + problem;
    }
    out = table;
    return {};
  }

  // Every live FakeHost by its handle, so that a service call reaches the host the plugin
  // negotiated with.
  struct Registry {
    std::mutex mu;
    ccm_host_handle last = 0;
    std::map<ccm_host_handle, FakeHost*> hosts;
  };
  static Registry& registry() {
    static Registry* r = new Registry();  // never destroyed: plugins may call at exit
    return *r;
  }
  struct Detached {};
  explicit FakeHost(Detached) : entry_(nullptr) {}
  // The host behind handle; for a handle no live FakeHost has (it was destroyed, or the
  // plugin made one up) a detached host that runs no call and keeps what it is given, so a
  // stray service call never crashes the test.
  static FakeHost& self(ccm_host_handle handle) {
    {
      std::lock_guard lock(registry().mu);
      auto it = registry().hosts.find(handle);
      if (it != registry().hosts.end()) {
        return *it->second;
      }
    }
    static FakeHost* detached = new FakeHost(Detached{});
    return *detached;
  }

  // One call's outputs, filled by the host services while it runs (under mu_).
  struct CallState {
    OutputKind output = OutputKind::None;  // what the call returns
    std::string error;
    int64_t retry_after_ms = 0;
    std::vector<std::optional<InstanceMetadata>> metadata;
    std::vector<std::optional<Error>> item_errors;
    std::optional<LoadBalancerStatus> lb_status;
    std::optional<std::string> string;
    std::vector<Route> routes;
    std::string violation;  // the first invalid output: the call fails as INTERNAL
  };
  // A running call. Calls may run concurrently from several threads, as the host makes them.
  struct Running {
    ccm_call call{};
    std::shared_ptr<CallState> state;
  };

  Running begin(size_t items = 0, OutputKind output = OutputKind::None) {
    auto state = std::make_shared<CallState>();
    state->output = output;
    state->metadata.assign(items, std::nullopt);
    state->item_errors.assign(items, std::nullopt);
    int64_t timeout = call_timeout_ns_.load();
    int64_t deadline = timeout > 0 ? monotonicNs() + timeout : 0;
    std::lock_guard lock(mu_);
    uint64_t id = ++call_id_;
    running_[id] = state;
    return Running{ccm_call{sizeof(ccm_call), id, deadline}, std::move(state)};
  }

  // The call is over: later service calls with its id are refused.
  void finish(const Running& run) {
    std::lock_guard lock(mu_);
    running_.erase(run.call.call_id);
  }

  Status end(const Running& run, ccm_status st) {
    finish(run);
    // No service call can reach the state any more: read without the lock.
    const CallState& c = *run.state;
    if (!c.violation.empty()) {
      return Error::internal(c.violation);
    }
    if (st == CCM_STATUS_OK) {
      return {};
    }
    switch (st) {
      case CCM_STATUS_CANCELLED: case CCM_STATUS_INVALID_ARGUMENT:
      case CCM_STATUS_DEADLINE_EXCEEDED: case CCM_STATUS_NOT_FOUND:
      case CCM_STATUS_ALREADY_EXISTS: case CCM_STATUS_PERMISSION_DENIED:
      case CCM_STATUS_RESOURCE_EXHAUSTED: case CCM_STATUS_FAILED_PRECONDITION:
      case CCM_STATUS_ABORTED: case CCM_STATUS_UNIMPLEMENTED: case CCM_STATUS_INTERNAL:
      case CCM_STATUS_UNAVAILABLE: case CCM_STATUS_UNAUTHENTICATED:
      case CCM_STATUS_IMPLEMENTED_ELSEWHERE:
        return Error(st, c.error, std::chrono::milliseconds(c.retry_after_ms));
      default:
        // As the host: a code outside the ABI's closed set reads as INTERNAL.
        return Error::internal("unknown status code " + std::to_string(st) +
                               (c.error.empty() ? "" : ": " + c.error));
    }
  }

  // The state of running call id, or nullptr when it is not running. Caller holds mu_.
  CallState* live(uint64_t id) {
    auto it = running_.find(id);
    return it == running_.end() ? nullptr : it->second.get();
  }

  int64_t monotonicNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
               .count() +
           mono_offset_ns_.load();
  }
  int64_t unixNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count() +
           unix_offset_ns_.load();
  }
  // As the host: an emit of another kind than the running call returns is refused (and here
  // fails the call, so that the test sees it).
  // Caller holds mu_.
  static bool expects(CallState& c, OutputKind emitted, std::string_view service) {
    if (std::string e = checkOutputKind(c.output, emitted, service); !e.empty()) {
      flag(c, e);
      return false;
    }
    return true;
  }
  // Records the first invalid output of a call (it then fails as INTERNAL). Caller holds mu_.
  static void flag(CallState& c, std::string problem) {
    if (c.violation.empty()) {
      c.violation = std::move(problem);
    }
  }
  // A service call that is no call's (the metric service has no call id) fails every running
  // call, so that the test sees it whichever call it came from.
  void flagAll(const std::string& problem) {
    std::lock_guard lock(mu_);
    for (auto& [id, c] : running_) {
      flag(*c, problem);
    }
  }

  static const ccm_host_services& services() {
    static const ccm_host_services table = [] {
      ccm_host_services t{};
      t.struct_size = sizeof t;
      t.log = [](ccm_host_handle handle, ccm_log_level level, ccm_str m) {
        FakeHost& h = self(handle);
        std::lock_guard lock(h.mu_);
        h.logs_.push_back({level, std::string(view(m)), {}});
      };
      t.is_cancelled = [](ccm_host_handle handle, uint64_t id) {
        // As the host: a call that is not running (finished, or never started) is cancelled.
        FakeHost& h = self(handle);
        std::lock_guard lock(h.mu_);
        return h.cancel_all_.load() || h.live(id) == nullptr;
      };
      t.now_monotonic_ns = [](ccm_host_handle handle) -> int64_t {
        return self(handle).monotonicNs();
      };
      t.now_unix_ns = [](ccm_host_handle handle) -> int64_t { return self(handle).unixNs(); };
      t.set_error = [](ccm_host_handle handle, uint64_t id, ccm_str m, int64_t retry) {
        FakeHost& h = self(handle);
        std::lock_guard lock(h.mu_);
        CallState* c = h.live(id);
        if (c == nullptr) {
          return false;
        }
        c->error = std::string(view(m));
        c->retry_after_ms = retry;
        return true;
      };
      t.metric = [](ccm_host_handle handle, ccm_metric_kind kind, ccm_str name, ccm_str,
                    const ccm_kv* labels, size_t label_count, double value) {
        // As the host: a bad name or label is ignored (the host counts a bad_metric
        // violation); here it also fails the running calls, so that the test sees it.
        FakeHost& h = self(handle);
        std::string e =
            checkMetricCall(view(name), view(name).substr(0, 200), labels, label_count);
        if (e.empty()) {
          e = checkHostLabels(view(name), h.metric_namespace_, labels, label_count);
        }
        if (!e.empty()) {
          h.flagAll(e);
          return;
        }
        std::lock_guard lock(h.mu_);
        double& v = h.metrics_[std::string(view(name))];
        v = kind == CCM_METRIC_COUNTER ? v + value : value;
      };
      t.register_secret = [](ccm_host_handle handle, ccm_str v) {
        FakeHost& h = self(handle);
        std::lock_guard lock(h.mu_);
        h.secrets_.emplace_back(view(v));
      };
      t.emit_instance_metadata = [](ccm_host_handle handle, uint64_t id, size_t index,
                                    const ccm_instance_metadata* md) {
        FakeHost& h = self(handle);
        // Checked before taking the lock (the checks read only md and declarations).
        InstanceMetadata m;
        std::string e = md == nullptr ? std::string()
                                      : acceptMetadata(md, h.provider_id_prefix_, &m);
        std::lock_guard lock(h.mu_);
        CallState* c = h.live(id);
        if (c == nullptr || !expects(*c, OutputKind::Metadata, "emit_instance_metadata")) {
          return false;
        }
        if (md == nullptr || index >= c->metadata.size()) {
          flag(*c, md == nullptr ? "emit_instance_metadata was given a NULL pointer"
                                 : "emit_instance_metadata index " + std::to_string(index) +
                                       " is out of range (the call has " +
                                       std::to_string(c->metadata.size()) + " nodes)");
          return false;
        }
        if (!e.empty()) {
          if (c->metadata.size() == 1) {
            flag(*c, "invalid instance metadata: " + e);
          } else {
            c->item_errors[index] =
                Error::internal("provider returned invalid instance metadata: " + e);
          }
          return false;
        }
        c->metadata[index] = std::move(m);
        return true;
      };
      t.emit_item_error = [](ccm_host_handle handle, uint64_t id, size_t index, ccm_status st,
                             ccm_str message) {
        FakeHost& h = self(handle);
        std::lock_guard lock(h.mu_);
        CallState* c = h.live(id);
        if (c == nullptr || !expects(*c, OutputKind::Metadata, "emit_item_error") ||
            index >= c->item_errors.size()) {
          return false;
        }
        c->item_errors[index] =
            Error(st == CCM_STATUS_OK ? CCM_STATUS_INTERNAL : st, std::string(view(message)));
        return true;
      };
      t.emit_lb_status = [](ccm_host_handle handle, uint64_t id, const ccm_lb_status* s) {
        FakeHost& h = self(handle);
        LoadBalancerStatus status;
        std::string e = s == nullptr ? std::string()
                                     : acceptLbStatus(s, h.plugin_.abi_minor >= 1,
                                                      h.annotation_domain_, &status);
        std::lock_guard lock(h.mu_);
        CallState* c = h.live(id);
        if (c == nullptr || !expects(*c, OutputKind::LbStatus, "emit_lb_status")) {
          return false;
        }
        if (s == nullptr) {
          flag(*c, "emit_lb_status was given a NULL pointer");
          return false;
        }
        if (!e.empty()) {
          flag(*c, "invalid load balancer status: " + e);
          return false;
        }
        c->lb_status = std::move(status);
        return true;
      };
      t.emit_route = [](ccm_host_handle handle, uint64_t id, const ccm_route* r) {
        FakeHost& h = self(handle);
        Route route;
        std::string e = r == nullptr ? std::string() : acceptRoute(r, &route);
        std::lock_guard lock(h.mu_);
        CallState* c = h.live(id);
        if (c == nullptr || !expects(*c, OutputKind::Routes, "emit_route")) {
          return false;
        }
        if (r == nullptr) {
          flag(*c, "emit_route was given a NULL pointer");
          return false;
        }
        if (!e.empty()) {
          flag(*c, "invalid route: " + e);
          return false;
        }
        c->routes.push_back(std::move(route));
        return true;
      };
      t.emit_string = [](ccm_host_handle handle, uint64_t id, ccm_str value) {
        FakeHost& h = self(handle);
        std::string accepted;
        std::string e = acceptString(value, &accepted);
        std::lock_guard lock(h.mu_);
        CallState* c = h.live(id);
        if (c == nullptr || !expects(*c, OutputKind::String, "emit_string")) {
          return false;
        }
        if (!e.empty()) {
          flag(*c, "invalid string: " + e);
          return false;
        }
        c->string = std::move(accepted);
        return true;
      };
      t.log_fields = [](ccm_host_handle handle, ccm_log_level level, ccm_str m,
                        const ccm_kv* fields, size_t n) {
        // As the host: keys it would drop (isValidLogKey, or repeated) are dropped.
        Labels kept;
        for (const auto& [key, value] : toLabels(fields, n)) {
          bool repeated = false;
          for (const auto& k : kept) {
            repeated = repeated || k.first == key;
          }
          if (isValidLogKey(key) && !repeated) {
            kept.emplace_back(key, value);
          }
        }
        FakeHost& h = self(handle);
        std::lock_guard lock(h.mu_);
        h.logs_.push_back({level, std::string(view(m)), std::move(kept)});
      };
      return t;
    }();
    return table;
  }

  // What a 1.0 host passes: the table up to emit_string, without log_fields.
  static const ccm_host_services& services10() {
    static const ccm_host_services table = [] {
      ccm_host_services t = services();
      t.log_fields = nullptr;
      t.struct_size = static_cast<uint32_t>(offsetof(ccm_host_services, log_fields));
      return t;
    }();
    return table;
  }

  ccm_provider_entry_fn entry_;
  FakeHostOptions options_;
  ccm_host_handle handle_ = 0;
  bool negotiated_ = false;
  std::string provider_id_prefix_;
  std::string annotation_domain_;
  std::string metric_namespace_;
  ccm_plugin plugin_{};
  ccm_provider* provider_ = nullptr;
  std::optional<ccm_instances_v1> instances_;
  std::optional<ccm_instances_batch_v1> batch_;
  std::optional<ccm_loadbalancer_v1> lb_;
  std::optional<ccm_routes_v1> routes_table_;
  std::atomic<int64_t> call_timeout_ns_{0};
  std::atomic<bool> cancel_all_{false};
  std::atomic<int64_t> unix_offset_ns_{0};
  std::atomic<int64_t> mono_offset_ns_{0};
  mutable std::mutex mu_;  // guards the four below and every CallState
  uint64_t call_id_ = 0;
  std::map<uint64_t, std::shared_ptr<CallState>> running_;
  std::vector<LogLine> logs_;
  std::vector<std::string> secrets_;
  std::map<std::string, double> metrics_;
};

}  // namespace testing
}  // namespace v1
}  // namespace ccm::sdk
