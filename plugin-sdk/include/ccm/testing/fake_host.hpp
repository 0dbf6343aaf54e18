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
// It is deliberately simple: calls run on the calling thread, deadlines are only reported
// (not enforced), and only one FakeHost may exist at a time in a process. The real host adds
// deadline enforcement, concurrency limits and output validation on top of the same contract.
#pragma once

#if !defined(__cplusplus) || __cplusplus < 202002L
#error "ccm/testing/fake_host.hpp needs C++20: compile with -std=c++20 or later (CMake's ccm::plugin-sdk target sets it). A provider in C needs only ccm/provider_abi.h."
#endif

#include <dlfcn.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/provider_abi.h"
#include "ccm/types.hpp"

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
};

class FakeHost {
 public:
  struct LogLine {
    ccm_log_level level;
    std::string message;
  };

  explicit FakeHost(ccm_provider_entry_fn entry) : entry_(entry) { current() = this; }
  ~FakeHost() {
    if (provider_ != nullptr && plugin_.destroy != nullptr) {
      plugin_.destroy(provider_);
    }
    current() = nullptr;
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

  // Negotiates (once) and creates the provider from config.
  Status create(std::string_view config) {
    if (!negotiated_) {
      ccm_host_info info{};
      info.struct_size = sizeof info;
      info.abi_major = CCM_ABI_MAJOR;
      info.abi_minor = CCM_ABI_MINOR;
      info.host_name = str("fake-host");
      info.host_version = str("0.0.0");
      info.host = kHandle;
      info.services = &services();
      const ccm_plugin* plugin = nullptr;
      ccm_call call = begin();
      ccm_status st = entry_(&info, &call, &plugin);
      if (st != CCM_STATUS_OK || plugin == nullptr) {
        return end(st == CCM_STATUS_OK ? CCM_STATUS_INTERNAL : st);
      }
      plugin_ = copyStruct(plugin);
      negotiated_ = true;
    }
    ccm_call call = begin();
    ccm_status st = plugin_.create(&call, str(config), &provider_);
    return end(st);
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
    ccm_call call = begin();
    return end(plugin_.reconfigure(provider_, &call, str(config)));
  }

  const ccm_plugin& plugin() const { return plugin_; }
  std::string_view name() const { return view(plugin_.name); }

  template <typename T>
  const T* capability(const char* id) const {
    return provider_ == nullptr ? nullptr
                                : static_cast<const T*>(plugin_.get_capability(provider_, str(id)));
  }

  Result<Existence> instanceExists(const Node& node) {
    auto* cap = capability<ccm_instances_v1>(CCM_CAP_INSTANCES);
    if (cap == nullptr) {
      return Error::unimplemented("no " CCM_CAP_INSTANCES);
    }
    NodeBuffers b(node);
    ccm_existence out = CCM_EXISTENCE_UNKNOWN;
    ccm_call call = begin();
    Status s = end(cap->instance_exists(provider_, &call, &b.node, &out));
    if (!s.ok()) {
      return s.error();
    }
    return static_cast<Existence>(out);
  }

  Result<Power> instanceShutdown(const Node& node) {
    auto* cap = capability<ccm_instances_v1>(CCM_CAP_INSTANCES);
    if (cap == nullptr) {
      return Error::unimplemented("no " CCM_CAP_INSTANCES);
    }
    NodeBuffers b(node);
    ccm_power out = CCM_POWER_UNKNOWN;
    ccm_call call = begin();
    Status s = end(cap->instance_shutdown(provider_, &call, &b.node, &out));
    if (!s.ok()) {
      return s.error();
    }
    return static_cast<Power>(out);
  }

  Result<std::optional<InstanceMetadata>> instanceMetadata(const Node& node) {
    auto* cap = capability<ccm_instances_v1>(CCM_CAP_INSTANCES);
    if (cap == nullptr) {
      return Error::unimplemented("no " CCM_CAP_INSTANCES);
    }
    NodeBuffers b(node);
    ccm_call call = begin(1);
    Status s = end(cap->instance_metadata(provider_, &call, &b.node));
    if (!s.ok()) {
      return s.error();
    }
    return std::move(metadata_[0]);
  }

  Result<LoadBalancerStatus> ensureLoadBalancer(const Service& svc, const std::vector<Node>& nodes,
                                                std::string_view cluster = "kubernetes") {
    auto* cap = capability<ccm_loadbalancer_v1>(CCM_CAP_LOADBALANCER);
    if (cap == nullptr) {
      return Error::unimplemented("no " CCM_CAP_LOADBALANCER);
    }
    ServiceBuffers sb(svc);
    std::vector<NodeBuffers> nb(nodes.begin(), nodes.end());
    std::vector<const ccm_node*> ptrs;
    for (auto& n : nb) {
      ptrs.push_back(&n.node);
    }
    ccm_call call = begin();
    Status s = end(cap->ensure_load_balancer(provider_, &call, str(cluster), &sb.service,
                                             ptrs.data(), ptrs.size()));
    if (!s.ok()) {
      return s.error();
    }
    if (!lb_status_) {
      return Error::internal("ensure_load_balancer returned OK without a status");
    }
    return *lb_status_;
  }

  Status ensureLoadBalancerDeleted(const Service& svc, std::string_view cluster = "kubernetes") {
    auto* cap = capability<ccm_loadbalancer_v1>(CCM_CAP_LOADBALANCER);
    if (cap == nullptr) {
      return Error::unimplemented("no " CCM_CAP_LOADBALANCER);
    }
    ServiceBuffers sb(svc);
    ccm_call call = begin();
    return end(cap->ensure_load_balancer_deleted(provider_, &call, str(cluster), &sb.service));
  }

  Result<std::vector<Route>> listRoutes(std::string_view cluster = "kubernetes") {
    auto* cap = capability<ccm_routes_v1>(CCM_CAP_ROUTES);
    if (cap == nullptr) {
      return Error::unimplemented("no " CCM_CAP_ROUTES);
    }
    ccm_call call = begin();
    Status s = end(cap->list_routes(provider_, &call, str(cluster)));
    if (!s.ok()) {
      return s.error();
    }
    return routes_;
  }

  Status createRoute(const Route& route, std::string_view name_hint,
                     std::string_view cluster = "kubernetes") {
    auto* cap = capability<ccm_routes_v1>(CCM_CAP_ROUTES);
    if (cap == nullptr) {
      return Error::unimplemented("no " CCM_CAP_ROUTES);
    }
    CRoute c(route);
    ccm_call call = begin();
    return end(cap->create_route(provider_, &call, str(cluster), str(name_hint), c.get()));
  }

  // What the provider logged, registered as secret, and reported as metrics (last value or
  // sum, by name).
  const std::vector<LogLine>& logs() const { return logs_; }
  const std::vector<std::string>& secrets() const { return secrets_; }
  double metric(const std::string& name) const {
    auto it = metrics_.find(name);
    return it == metrics_.end() ? 0 : it->second;
  }
  // True when some log line contains text.
  bool logged(std::string_view text) const {
    for (const auto& l : logs_) {
      if (l.message.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

 private:
  static constexpr ccm_host_handle kHandle = 1;

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
      service.current_status = &status;
    }
    Service src;
    std::vector<ccm_kv> annotations;
    std::vector<ccm_service_port> ports;
    std::vector<const ccm_service_port*> port_ptrs;
    std::vector<ccm_str> ranges;
    ccm_lb_status status{};
    ccm_service service{};
  };

  static FakeHost*& current() {
    static FakeHost* host = nullptr;
    return host;
  }
  static FakeHost& self() {
    if (current() == nullptr) {
      throw std::logic_error("host service called with no FakeHost alive");
    }
    return *current();
  }

  ccm_call begin(size_t items = 0) {
    ++call_id_;
    error_.clear();
    retry_after_ms_ = 0;
    metadata_.assign(items, std::nullopt);
    lb_status_.reset();
    routes_.clear();
    in_call_ = true;
    return ccm_call{sizeof(ccm_call), call_id_, 0};
  }

  Status end(ccm_status st) {
    in_call_ = false;
    if (st == CCM_STATUS_OK) {
      return {};
    }
    return Error(st, error_, std::chrono::milliseconds(retry_after_ms_));
  }

  bool live(uint64_t id) const { return in_call_ && id == call_id_; }

  static const ccm_host_services& services() {
    static const ccm_host_services table = [] {
      ccm_host_services t{};
      t.struct_size = sizeof t;
      t.log = [](ccm_host_handle, ccm_log_level level, ccm_str m) {
        self().logs_.push_back({level, std::string(view(m))});
      };
      t.is_cancelled = [](ccm_host_handle, uint64_t) { return false; };
      t.now_monotonic_ns = [](ccm_host_handle) -> int64_t {
        return std::chrono::steady_clock::now().time_since_epoch().count();
      };
      t.now_unix_ns = [](ccm_host_handle) -> int64_t {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      };
      t.set_error = [](ccm_host_handle, uint64_t id, ccm_str m, int64_t retry) {
        if (!self().live(id)) {
          return false;
        }
        self().error_ = std::string(view(m));
        self().retry_after_ms_ = retry;
        return true;
      };
      t.metric = [](ccm_host_handle, ccm_metric_kind kind, ccm_str name, ccm_str,
                    const ccm_kv*, size_t, double value) {
        double& v = self().metrics_[std::string(view(name))];
        v = kind == CCM_METRIC_COUNTER ? v + value : value;
      };
      t.register_secret = [](ccm_host_handle, ccm_str v) {
        self().secrets_.emplace_back(view(v));
      };
      t.emit_instance_metadata = [](ccm_host_handle, uint64_t id, size_t index,
                                    const ccm_instance_metadata* md) {
        if (!self().live(id) || index >= self().metadata_.size() || md == nullptr) {
          return false;
        }
        self().metadata_[index] = toInstanceMetadata(md);
        return true;
      };
      t.emit_item_error = [](ccm_host_handle, uint64_t id, size_t, ccm_status, ccm_str) {
        return self().live(id);
      };
      t.emit_lb_status = [](ccm_host_handle, uint64_t id, const ccm_lb_status* s) {
        if (!self().live(id) || s == nullptr) {
          return false;
        }
        self().lb_status_ = toLoadBalancerStatus(s);
        return true;
      };
      t.emit_route = [](ccm_host_handle, uint64_t id, const ccm_route* r) {
        if (!self().live(id) || r == nullptr) {
          return false;
        }
        self().routes_.push_back(toRoute(r));
        return true;
      };
      t.emit_string = [](ccm_host_handle, uint64_t id, ccm_str) { return self().live(id); };
      return t;
    }();
    return table;
  }

  ccm_provider_entry_fn entry_;
  bool negotiated_ = false;
  ccm_plugin plugin_{};
  ccm_provider* provider_ = nullptr;
  uint64_t call_id_ = 0;
  bool in_call_ = false;
  std::string error_;
  int64_t retry_after_ms_ = 0;
  std::vector<std::optional<InstanceMetadata>> metadata_;
  std::optional<LoadBalancerStatus> lb_status_;
  std::vector<Route> routes_;
  std::vector<LogLine> logs_;
  std::vector<std::string> secrets_;
  std::map<std::string, double> metrics_;
};

}  // namespace testing
}  // namespace v1
}  // namespace ccm::sdk
