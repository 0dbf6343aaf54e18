// TestHost: dlopen + a ccm_host_services table that records everything.
#include "test/plugins/openstack/fake_host.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ccm::openstack::testing {
namespace {

TestHost* g_host = nullptr;

std::string str(ccm_str s) {
  return s.data == nullptr ? std::string() : std::string(s.data, s.size);
}
ccm_str view(const std::string& s) {
  return ccm_str{s.data(), s.size()};
}

int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct KvStorage {
  std::vector<ccm_kv> kv;
  explicit KvStorage(const Pairs& p) {
    for (const auto& [k, v] : p) {
      kv.push_back({view(k), view(v)});
    }
  }
};

struct AddrStorage {
  std::vector<ccm_node_address> a;
  explicit AddrStorage(const Pairs& p) {
    for (const auto& [t, addr] : p) {
      a.push_back({view(t), view(addr)});
    }
  }
};

struct NodeStorage {
  KvStorage labels;
  KvStorage annotations;
  AddrStorage addresses;
  ccm_node_info info{};
  ccm_node node{};
  explicit NodeStorage(const Node& n)
      : labels(n.labels), annotations(n.annotations), addresses(n.addresses) {
    info.struct_size = sizeof info;
    node.struct_size = sizeof node;
    node.name = view(n.name);
    node.uid = view(n.uid);
    node.provider_id = view(n.provider_id);
    node.labels = labels.kv.data();
    node.label_count = labels.kv.size();
    node.annotations = annotations.kv.data();
    node.annotation_count = annotations.kv.size();
    node.addresses = addresses.a.data();
    node.address_count = addresses.a.size();
    node.node_info = &info;
  }
};

struct NodesStorage {
  std::vector<std::unique_ptr<NodeStorage>> nodes;
  std::vector<const ccm_node*> ptrs;
  explicit NodesStorage(const std::vector<Node>& ns) {
    for (const Node& n : ns) {
      nodes.push_back(std::make_unique<NodeStorage>(n));
      ptrs.push_back(&nodes.back()->node);
    }
  }
};

struct ServiceStorage {
  KvStorage annotations;
  std::vector<ccm_service_port> ports;
  std::vector<const ccm_service_port*> port_ptrs;
  std::vector<ccm_str> ranges;
  std::vector<ccm_str> families;
  ccm_lb_status status{};
  ccm_service svc{};
  std::string type = "LoadBalancer";
  std::string object_json;
  explicit ServiceStorage(const Service& s) : annotations(s.annotations) {
    if (!s.ip_family_policy.empty()) {
      object_json = R"({"spec":{"ipFamilyPolicy":")" + s.ip_family_policy + R"("}})";
    }
    for (const ServicePort& p : s.ports) {
      ccm_service_port sp{};
      sp.struct_size = sizeof sp;
      sp.name = view(p.name);
      sp.protocol = view(p.protocol);
      sp.port = p.port;
      sp.node_port = p.node_port;
      ports.push_back(sp);
    }
    for (const auto& p : ports) {
      port_ptrs.push_back(&p);
    }
    for (const auto& r : s.source_ranges) {
      ranges.push_back(view(r));
    }
    for (const auto& f : s.ip_families) {
      families.push_back(view(f));
    }
    status.struct_size = sizeof status;
    svc.struct_size = sizeof svc;
    svc.namespace_ = view(s.ns);
    svc.name = view(s.name);
    svc.uid = view(s.uid);
    svc.annotations = annotations.kv.data();
    svc.annotation_count = annotations.kv.size();
    svc.type = view(type);
    svc.ports = port_ptrs.data();
    svc.port_count = port_ptrs.size();
    svc.load_balancer_ip = view(s.load_balancer_ip);
    svc.source_ranges = ranges.data();
    svc.source_range_count = ranges.size();
    svc.external_traffic_policy = view(s.external_traffic_policy);
    svc.health_check_node_port = s.health_check_node_port;
    svc.ip_families = families.data();
    svc.ip_family_count = families.size();
    svc.load_balancer_class = view(s.load_balancer_class);
    svc.session_affinity = view(s.session_affinity);
    svc.object_json = view(object_json);
    svc.current_status = &status;
  }
};

struct RouteStorage {
  AddrStorage addresses;
  ccm_route route{};
  explicit RouteStorage(const Route& r) : addresses(r.target_node_addresses) {
    route.struct_size = sizeof route;
    route.name = view(r.name);
    route.target_node = view(r.target_node);
    route.destination_cidr = view(r.destination_cidr);
    route.blackhole = r.blackhole;
    route.enable_node_addresses = !r.target_node_addresses.empty();
    route.target_node_addresses = addresses.a.data();
    route.target_node_address_count = addresses.a.size();
  }
};

}  // namespace

// The C service functions.
struct Services {
  static TestHost& h() { return *g_host; }

  static void log(ccm_host_handle, ccm_log_level level, ccm_str message) {
    std::lock_guard<std::mutex> lock(h().mu_);
    h().logs_.push_back({level, str(message)});
  }
  static bool isCancelled(ccm_host_handle, uint64_t call_id) {
    std::lock_guard<std::mutex> lock(h().mu_);
    return h().cancel_all_ || h().running_.count(call_id) == 0;
  }
  static int64_t nowMono(ccm_host_handle) { return steadyNs(); }
  static int64_t nowUnix(ccm_host_handle) {
    std::lock_guard<std::mutex> lock(h().mu_);
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count() +
           h().unix_offset_ns_;
  }
  static bool setError(ccm_host_handle, uint64_t call_id, ccm_str message, int64_t retry) {
    std::lock_guard<std::mutex> lock(h().mu_);
    auto it = h().running_.find(call_id);
    if (it == h().running_.end()) {
      return false;
    }
    it->second.error = str(message);
    it->second.retry_after_ms = retry;
    return true;
  }
  static void metric(ccm_host_handle, ccm_metric_kind, ccm_str name, ccm_str, const ccm_kv*, size_t,
                     double) {
    std::lock_guard<std::mutex> lock(h().mu_);
    h().metrics_[str(name)]++;
  }
  static void registerSecret(ccm_host_handle, ccm_str value) {
    std::lock_guard<std::mutex> lock(h().mu_);
    h().secrets_.push_back(str(value));
  }
  static bool emitMetadata(ccm_host_handle, uint64_t call_id, size_t index,
                           const ccm_instance_metadata* m) {
    std::lock_guard<std::mutex> lock(h().mu_);
    auto it = h().running_.find(call_id);
    if (it == h().running_.end()) {
      return false;
    }
    InstanceMetadata md;
    md.provider_id = str(m->provider_id);
    md.instance_type = str(m->instance_type);
    md.zone = str(m->zone);
    md.region = str(m->region);
    for (size_t i = 0; i < m->address_count; ++i) {
      md.addresses.emplace_back(str(m->addresses[i].type), str(m->addresses[i].address));
    }
    it->second.metadata[index] = md;
    return true;
  }
  static bool emitItemError(ccm_host_handle, uint64_t call_id, size_t index, ccm_status st,
                            ccm_str message) {
    std::lock_guard<std::mutex> lock(h().mu_);
    auto it = h().running_.find(call_id);
    if (it == h().running_.end()) {
      return false;
    }
    it->second.item_errors[index] = {st, str(message)};
    return true;
  }
  static bool emitLbStatus(ccm_host_handle, uint64_t call_id, const ccm_lb_status* s) {
    std::lock_guard<std::mutex> lock(h().mu_);
    auto it = h().running_.find(call_id);
    if (it == h().running_.end()) {
      return false;
    }
    std::vector<Ingress> out;
    for (size_t i = 0; i < s->ingress_count; ++i) {
      out.push_back(
          {str(s->ingress[i]->ip), str(s->ingress[i]->hostname), str(s->ingress[i]->ip_mode)});
    }
    it->second.lb_status = out;
    return true;
  }
  static bool emitRoute(ccm_host_handle, uint64_t call_id, const ccm_route* r) {
    std::lock_guard<std::mutex> lock(h().mu_);
    auto it = h().running_.find(call_id);
    if (it == h().running_.end()) {
      return false;
    }
    Route route;
    route.name = str(r->name);
    route.target_node = str(r->target_node);
    route.destination_cidr = str(r->destination_cidr);
    route.blackhole = r->blackhole;
    it->second.routes.push_back(route);
    return true;
  }
  static bool emitString(ccm_host_handle, uint64_t call_id, ccm_str value) {
    std::lock_guard<std::mutex> lock(h().mu_);
    auto it = h().running_.find(call_id);
    if (it == h().running_.end()) {
      return false;
    }
    it->second.string = str(value);
    return true;
  }

  static ccm_host_services table() {
    ccm_host_services s{};
    s.struct_size = sizeof s;
    s.log = log;
    s.is_cancelled = isCancelled;
    s.now_monotonic_ns = nowMono;
    s.now_unix_ns = nowUnix;
    s.set_error = setError;
    s.metric = metric;
    s.register_secret = registerSecret;
    s.emit_instance_metadata = emitMetadata;
    s.emit_item_error = emitItemError;
    s.emit_lb_status = emitLbStatus;
    s.emit_route = emitRoute;
    s.emit_string = emitString;
    return s;
  }
};

namespace {

const ccm_host_services& servicesTable() {
  static const ccm_host_services table = Services::table();
  return table;
}

ccm_provider_entry_fn entryOf(void* lib) {
  void* sym = dlsym(lib, CCM_PROVIDER_ENTRY_SYMBOL);
  if (sym == nullptr) {
    throw std::runtime_error("openstack.so has no entry symbol");
  }
  return reinterpret_cast<ccm_provider_entry_fn>(sym);
}

void* openLibrary() {
  const char* path = std::getenv("CCM_OPENSTACK_SO");
  if (path == nullptr || *path == '\0') {
    throw std::runtime_error("set CCM_OPENSTACK_SO");
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    throw std::runtime_error(std::string("dlopen: ") + dlerror());
  }
  return lib;
}

}  // namespace

TestHost::TestHost() {
  g_host = this;
  lib_ = openLibrary();
  ccm_host_info info{};
  info.struct_size = sizeof info;
  info.abi_major = CCM_ABI_MAJOR;
  info.abi_minor = CCM_ABI_MINOR;
  std::string name = "fake-host";
  std::string version = "0.0.1";
  info.host_name = view(name);
  info.host_version = view(version);
  info.host = 42;
  info.services = &servicesTable();
  ccm_call call = begin(0);
  ccm_status st = entryOf(lib_)(&info, &call, &plugin_);
  CallResult r = end(call.call_id, st);
  if (st != CCM_STATUS_OK || plugin_ == nullptr) {
    throw std::runtime_error("negotiation refused: " + r.error);
  }
}

TestHost& TestHost::instance() {
  // Never destroyed: providers kept in function-local statics are destroyed at exit and call
  // back into the host's services while they go.
  static TestHost* host = new TestHost();
  return *host;
}

std::pair<ccm_status, std::string> TestHost::negotiateWithMajor(uint32_t major) {
  TestHost& h = instance();
  ccm_host_info info{};
  info.struct_size = sizeof info;
  info.abi_major = major;
  info.abi_minor = 0;
  info.host = 43;
  info.services = &servicesTable();
  ccm_call call = h.begin(0);
  const ccm_plugin* out = nullptr;
  ccm_status st = entryOf(h.lib_)(&info, &call, &out);
  CallResult r = h.end(call.call_id, st);
  return {st, r.error};
}

ccm_call TestHost::begin(int64_t deadline_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  ccm_call call{};
  call.struct_size = sizeof call;
  call.call_id = next_call_++;
  call.deadline_monotonic_ns = deadline_ms > 0 ? steadyNs() + deadline_ms * 1000000 : 0;
  running_[call.call_id] = CallResult{};
  return call;
}

CallResult TestHost::end(uint64_t call_id, ccm_status status) {
  std::lock_guard<std::mutex> lock(mu_);
  CallResult r = std::move(running_[call_id]);
  running_.erase(call_id);
  r.status = status;
  return r;
}

std::vector<LogLine> TestHost::logs() {
  std::lock_guard<std::mutex> lock(mu_);
  return logs_;
}

std::vector<std::string> TestHost::secrets() {
  std::lock_guard<std::mutex> lock(mu_);
  return secrets_;
}

void TestHost::clearLogs() {
  std::lock_guard<std::mutex> lock(mu_);
  logs_.clear();
}

uint64_t TestHost::metricCount(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_[name];
}

bool TestHost::logged(const std::string& needle) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& l : logs_) {
    if (l.message.find(needle) != std::string::npos) {
      return true;
    }
  }
  return false;
}

void TestHost::advanceUnix(std::chrono::nanoseconds d) {
  std::lock_guard<std::mutex> lock(mu_);
  unix_offset_ns_ += d.count();
}

void TestHost::setCancelAll(bool cancelled) {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_all_ = cancelled;
}

std::pair<CallResult, std::unique_ptr<Provider>> TestHost::create(const std::string& config) {
  ccm_provider* p = nullptr;
  CallResult r = run(
      [&](const ccm_call* call) {
        return plugin_->create(call, ccm_str{config.data(), config.size()}, &p);
      },
      0);
  std::unique_ptr<Provider> provider;
  if (r.ok() && p != nullptr) {
    provider = std::make_unique<Provider>(*this, p);
  }
  return {std::move(r), std::move(provider)};
}

Provider::~Provider() {
  host_.plugin().destroy(p_);
}

const void* Provider::capability(const char* id) {
  return host_.plugin().get_capability(p_, ccm_str{id, std::strlen(id)});
}

namespace {
template <typename T>
const T& cap(Provider& p, const char* id) {
  const void* c = p.capability(id);
  if (c == nullptr) {
    throw std::runtime_error(std::string("capability missing: ") + id);
  }
  return *static_cast<const T*>(c);
}
}  // namespace

CallResult Provider::reconfigure(const std::string& config) {
  const ccm_plugin& table = host_.plugin();
  if (table.reconfigure == nullptr) {
    CallResult r;
    r.status = CCM_STATUS_UNIMPLEMENTED;
    return r;
  }
  return host_.run([&](const ccm_call* c) {
    return table.reconfigure(p_, c, ccm_str{config.data(), config.size()});
  });
}

CallResult Provider::exists(const Node& node) {
  NodeStorage n(node);
  ccm_existence e = CCM_EXISTENCE_UNKNOWN;
  auto& t = cap<ccm_instances_v1>(*this, CCM_CAP_INSTANCES);
  CallResult r =
      host_.run([&](const ccm_call* c) { return t.instance_exists(p_, c, &n.node, &e); });
  r.existence = e;
  return r;
}

CallResult Provider::shutdown(const Node& node) {
  NodeStorage n(node);
  ccm_power pw = CCM_POWER_UNKNOWN;
  auto& t = cap<ccm_instances_v1>(*this, CCM_CAP_INSTANCES);
  CallResult r =
      host_.run([&](const ccm_call* c) { return t.instance_shutdown(p_, c, &n.node, &pw); });
  r.power = pw;
  return r;
}

CallResult Provider::metadata(const Node& node) {
  NodeStorage n(node);
  auto& t = cap<ccm_instances_v1>(*this, CCM_CAP_INSTANCES);
  return host_.run([&](const ccm_call* c) { return t.instance_metadata(p_, c, &n.node); });
}

CallResult Provider::metadataBatch(const std::vector<Node>& nodes) {
  NodesStorage n(nodes);
  auto& t = cap<ccm_instances_batch_v1>(*this, CCM_CAP_INSTANCES_BATCH);
  return host_.run([&](const ccm_call* c) {
    return t.instance_metadata_batch(p_, c, n.ptrs.data(), n.ptrs.size());
  });
}

CallResult Provider::getLoadBalancer(const Service& svc, const std::string& cluster) {
  ServiceStorage s(svc);
  bool exists = false;
  auto& t = cap<ccm_loadbalancer_v1>(*this, CCM_CAP_LOADBALANCER);
  CallResult r = host_.run([&](const ccm_call* c) {
    return t.get_load_balancer(p_, c, view(cluster), &s.svc, &exists);
  });
  r.exists = exists;
  return r;
}

CallResult Provider::loadBalancerName(const Service& svc, const std::string& cluster) {
  ServiceStorage s(svc);
  auto& t = cap<ccm_loadbalancer_v1>(*this, CCM_CAP_LOADBALANCER);
  return host_.run(
      [&](const ccm_call* c) { return t.get_load_balancer_name(p_, c, view(cluster), &s.svc); });
}

CallResult Provider::ensure(const Service& svc, const std::vector<Node>& nodes,
                            const std::string& cluster, int64_t deadline_ms) {
  ServiceStorage s(svc);
  NodesStorage n(nodes);
  auto& t = cap<ccm_loadbalancer_v1>(*this, CCM_CAP_LOADBALANCER);
  return host_.run(
      [&](const ccm_call* c) {
        return t.ensure_load_balancer(p_, c, view(cluster), &s.svc, n.ptrs.data(), n.ptrs.size());
      },
      deadline_ms);
}

CallResult Provider::update(const Service& svc, const std::vector<Node>& nodes,
                            const std::string& cluster) {
  ServiceStorage s(svc);
  NodesStorage n(nodes);
  auto& t = cap<ccm_loadbalancer_v1>(*this, CCM_CAP_LOADBALANCER);
  return host_.run([&](const ccm_call* c) {
    return t.update_load_balancer(p_, c, view(cluster), &s.svc, n.ptrs.data(), n.ptrs.size());
  });
}

CallResult Provider::remove(const Service& svc, const std::string& cluster) {
  ServiceStorage s(svc);
  auto& t = cap<ccm_loadbalancer_v1>(*this, CCM_CAP_LOADBALANCER);
  return host_.run([&](const ccm_call* c) {
    return t.ensure_load_balancer_deleted(p_, c, view(cluster), &s.svc);
  });
}

CallResult Provider::ensureSettled(const Service& svc, const std::vector<Node>& nodes, int tries,
                                   const std::string& cluster) {
  CallResult r;
  for (int i = 0; i < tries; ++i) {
    r = ensure(svc, nodes, cluster);
    if (r.status != CCM_STATUS_FAILED_PRECONDITION || r.retry_after_ms == 0) {
      return r;
    }
  }
  return r;
}

CallResult Provider::removeSettled(const Service& svc, int tries, const std::string& cluster) {
  CallResult r;
  for (int i = 0; i < tries; ++i) {
    r = remove(svc, cluster);
    if (r.status != CCM_STATUS_FAILED_PRECONDITION || r.retry_after_ms == 0) {
      return r;
    }
  }
  return r;
}

CallResult Provider::listRoutes(const std::string& cluster) {
  auto& t = cap<ccm_routes_v1>(*this, CCM_CAP_ROUTES);
  return host_.run([&](const ccm_call* c) { return t.list_routes(p_, c, view(cluster)); });
}

CallResult Provider::createRoute(const Route& route, const std::string& cluster) {
  RouteStorage r(route);
  std::string hint = "node-uid";
  auto& t = cap<ccm_routes_v1>(*this, CCM_CAP_ROUTES);
  return host_.run([&](const ccm_call* c) {
    return t.create_route(p_, c, view(cluster), view(hint), &r.route);
  });
}

CallResult Provider::deleteRoute(const Route& route, const std::string& cluster) {
  RouteStorage r(route);
  auto& t = cap<ccm_routes_v1>(*this, CCM_CAP_ROUTES);
  return host_.run(
      [&](const ccm_call* c) { return t.delete_route(p_, c, view(cluster), &r.route); });
}

}  // namespace ccm::openstack::testing
