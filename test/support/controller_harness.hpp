// Test support for the service and route controller unit tests: an in-memory Provider that
// records calls and fails on request, builders for kube::Service / kube::Node snapshots, a
// harness holding a ControllerContext over FakeKubeApi and detached informers, and helpers to
// read the events and patches the controllers wrote.
#pragma once

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "host/controllers/common/controller.hpp"
#include "host/kube/cache/informer.hpp"
#include "host/kube/write/event_recorder.hpp"
#include "host/options/options.hpp"
#include "host/plugin/provider.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"
#include "test/support/fake_kube_api.hpp"
#include "test/support/wait.hpp"

namespace ccm::testing {

using namespace std::chrono_literals;

// ---- a Provider that implements nothing ---------------------------------------------------

// Every call answers UNIMPLEMENTED; a test overrides the few it drives.
class UnimplementedProvider : public plugin::Provider {
 public:
  explicit UnimplementedProvider(std::string name) {
    info_.name = std::move(name);
    info_.instances.present = true;
  }
  const plugin::ProviderInfo& info() const override { return info_; }
  StatusOr<plugin::Existence> instanceExists(const plugin::NodeRef&) override {
    return unimplemented();
  }
  StatusOr<plugin::Power> instanceShutdown(const plugin::NodeRef&) override {
    return plugin::Power::Running;
  }
  StatusOr<std::optional<plugin::InstanceMetadata>> instanceMetadata(
      const plugin::NodeRef&) override {
    return unimplemented();
  }
  StatusOr<std::vector<plugin::MetadataResult>> instanceMetadataBatch(
      std::span<const plugin::NodeRef>) override {
    return unimplemented();
  }
  StatusOr<std::optional<plugin::LoadBalancerStatus>> getLoadBalancer(
      std::string_view, const plugin::ServiceRef&) override {
    return unimplemented();
  }
  StatusOr<std::string> getLoadBalancerName(std::string_view, const plugin::ServiceRef&) override {
    return unimplemented();
  }
  StatusOr<plugin::LoadBalancerStatus> ensureLoadBalancer(
      std::string_view, const plugin::ServiceRef&, std::span<const plugin::NodeRef>) override {
    return unimplemented();
  }
  Status updateLoadBalancer(std::string_view, const plugin::ServiceRef&,
                            std::span<const plugin::NodeRef>) override {
    return unimplemented();
  }
  Status ensureLoadBalancerDeleted(std::string_view, const plugin::ServiceRef&) override {
    return unimplemented();
  }
  StatusOr<std::vector<plugin::Route>> listRoutes(std::string_view) override {
    return unimplemented();
  }
  Status createRoute(std::string_view, std::string_view, const plugin::Route&) override {
    return unimplemented();
  }
  Status deleteRoute(std::string_view, const plugin::Route&) override { return unimplemented(); }
  void cancelAll() override {}

 protected:
  static Status unimplemented() { return Status(Code::Unimplemented, "not in this test"); }
  plugin::ProviderInfo info_;
};

// ---- a Provider with instances only -------------------------------------------------------
// Every node exists and has metadata: providerID fake://<name>, type m1.test, zone zone-a,
// region region-1, and the given addresses (for the node controller's tests).
class MetadataProvider final : public UnimplementedProvider {
 public:
  explicit MetadataProvider(std::vector<std::pair<std::string, std::string>> addresses)
      : UnimplementedProvider("metadata-only"), addresses_(std::move(addresses)) {}
  StatusOr<plugin::Existence> instanceExists(const plugin::NodeRef&) override {
    return plugin::Existence::Exists;
  }
  StatusOr<std::optional<plugin::InstanceMetadata>> instanceMetadata(
      const plugin::NodeRef& node) override {
    plugin::InstanceMetadata md;
    md.provider_id = "fake://" + std::string(node.name);
    md.instance_type = "m1.test";
    md.zone = "zone-a";
    md.region = "region-1";
    for (const auto& [t, a] : addresses_) {
      md.addresses.push_back({t, a});
    }
    return std::optional<plugin::InstanceMetadata>(md);
  }

 private:
  std::vector<std::pair<std::string, std::string>> addresses_;
};

// ---- a Provider in memory -------------------------------------------------------------------

class FakeProvider final : public plugin::Provider {
 public:
  struct Call {
    std::string op;       // ensure update delete get name list create deleteRoute
    std::string service;  // namespace/name
    std::string uid;
    std::vector<std::string> nodes;  // host set (ensure/update)
    std::vector<std::string> ports;  // "name/protocol/port/nodePort"
    std::string cluster;
    std::string node;  // routes
    std::string cidr;  // routes
    std::string name_hint;
    std::string load_balancer_class;  // the Service's spec.loadBalancerClass as passed
  };
  struct Lb {
    std::string service;
    std::vector<std::string> nodes;
    int ensures = 0;
    int updates = 0;
    std::string ip;
  };

  FakeProvider() {
    info_.name = "fake";
    info_.load_balancer.present = true;
    info_.routes.present = true;
  }

  const plugin::ProviderInfo& info() const override { return info_; }
  plugin::ProviderInfo& mutableInfo() { return info_; }

  // The next `count` calls of `op` answer `st`.
  void failNext(const std::string& op, Status st, int count = 1) {
    std::lock_guard lock(mu_);
    for (int i = 0; i < count; ++i) {
      failures_[op].push_back(st);
    }
  }
  // Every call of `op` answers `st` until cleared (std::nullopt).
  void failAlways(const std::string& op, std::optional<Status> st) {
    std::lock_guard lock(mu_);
    if (st) {
      always_[op] = *st;
    } else {
      always_.erase(op);
    }
  }
  // Runs at the start of every call (outside the lock), e.g. to block it.
  void setHook(std::function<void(const std::string& op, const Call& call)> hook) {
    std::lock_guard lock(mu_);
    hook_ = std::move(hook);
  }

  // Runs after an operation computed its answer, just before it returns (listRoutes only).
  void setAfterHook(std::function<void(const std::string& op)> hook) {
    std::lock_guard lock(mu_);
    after_hook_ = std::move(hook);
  }

  std::vector<Call> calls(const std::string& op = {}) const {
    std::lock_guard lock(mu_);
    std::vector<Call> out;
    for (const auto& c : calls_) {
      if (op.empty() || c.op == op) {
        out.push_back(c);
      }
    }
    return out;
  }
  size_t count(const std::string& op) const { return calls(op).size(); }
  void clearCalls() {
    std::lock_guard lock(mu_);
    calls_.clear();
  }
  std::map<std::string, Lb> loadBalancers() const {
    std::lock_guard lock(mu_);
    return lbs_;
  }
  void putLoadBalancer(const std::string& uid, Lb lb) {
    std::lock_guard lock(mu_);
    lbs_[uid] = std::move(lb);
  }
  std::map<std::string, plugin::Route> routes() const {
    std::lock_guard lock(mu_);
    return routes_;
  }
  void putRoute(plugin::Route r) {
    std::lock_guard lock(mu_);
    routes_[r.destination_cidr] = std::move(r);
  }
  int duplicateCreates() const {
    std::lock_guard lock(mu_);
    return duplicate_creates_;
  }
  int peakInFlight() const { return peak_.load(); }

  StatusOr<plugin::Existence> instanceExists(const plugin::NodeRef&) override {
    return Status(Code::Unimplemented, "no instances");
  }
  StatusOr<plugin::Power> instanceShutdown(const plugin::NodeRef&) override {
    return Status(Code::Unimplemented, "no instances");
  }
  StatusOr<std::optional<plugin::InstanceMetadata>> instanceMetadata(
      const plugin::NodeRef&) override {
    return Status(Code::Unimplemented, "no instances");
  }
  StatusOr<std::vector<plugin::MetadataResult>> instanceMetadataBatch(
      std::span<const plugin::NodeRef>) override {
    return Status(Code::Unimplemented, "no instances");
  }

  StatusOr<std::optional<plugin::LoadBalancerStatus>> getLoadBalancer(
      std::string_view cluster, const plugin::ServiceRef& svc) override {
    Scope s(this, "get", serviceCall("get", cluster, svc, {}));
    if (auto st = s.failure()) {
      return *st;
    }
    std::lock_guard lock(mu_);
    auto it = lbs_.find(std::string(svc.uid));
    if (it == lbs_.end()) {
      return std::optional<plugin::LoadBalancerStatus>();
    }
    return std::optional<plugin::LoadBalancerStatus>(statusOf(it->second));
  }
  StatusOr<std::string> getLoadBalancerName(std::string_view cluster,
                                            const plugin::ServiceRef& svc) override {
    Scope s(this, "name", serviceCall("name", cluster, svc, {}));
    if (auto st = s.failure()) {
      return *st;
    }
    return "a" + std::string(svc.uid);
  }
  StatusOr<plugin::LoadBalancerStatus> ensureLoadBalancer(
      std::string_view cluster, const plugin::ServiceRef& svc,
      std::span<const plugin::NodeRef> nodes) override {
    Scope s(this, "ensure", serviceCall("ensure", cluster, svc, nodes));
    if (auto st = s.failure()) {
      return *st;
    }
    std::lock_guard lock(mu_);
    Lb& lb = lbs_[std::string(svc.uid)];
    if (lb.ip.empty()) {
      lb.ip = "203.0.113." + std::to_string(++next_ip_);
    }
    lb.service = key(svc);
    lb.nodes = names(nodes);
    ++lb.ensures;
    return statusOf(lb);
  }
  Status updateLoadBalancer(std::string_view cluster, const plugin::ServiceRef& svc,
                            std::span<const plugin::NodeRef> nodes) override {
    Scope s(this, "update", serviceCall("update", cluster, svc, nodes));
    if (auto st = s.failure()) {
      return *st;
    }
    std::lock_guard lock(mu_);
    auto it = lbs_.find(std::string(svc.uid));
    if (it == lbs_.end()) {
      return Status(Code::NotFound, "no such load balancer");
    }
    it->second.nodes = names(nodes);
    ++it->second.updates;
    return okStatus();
  }
  Status ensureLoadBalancerDeleted(std::string_view cluster,
                                   const plugin::ServiceRef& svc) override {
    Scope s(this, "delete", serviceCall("delete", cluster, svc, {}));
    if (auto st = s.failure()) {
      return *st;
    }
    std::lock_guard lock(mu_);
    lbs_.erase(std::string(svc.uid));
    return okStatus();
  }

  StatusOr<std::vector<plugin::Route>> listRoutes(std::string_view cluster) override {
    Call c;
    c.op = "list";
    c.cluster = std::string(cluster);
    Scope s(this, "list", c);
    if (auto st = s.failure()) {
      return *st;
    }
    std::vector<plugin::Route> out;
    std::function<void(const std::string&)> after;
    {
      std::lock_guard lock(mu_);
      for (const auto& [_, r] : routes_) {
        out.push_back(r);
      }
      after = after_hook_;
    }
    if (after) {
      after("list");
    }
    return out;
  }
  Status createRoute(std::string_view cluster, std::string_view name_hint,
                     const plugin::Route& route) override {
    Call c;
    c.op = "create";
    c.cluster = std::string(cluster);
    c.node = route.target_node;
    c.cidr = route.destination_cidr;
    c.name_hint = std::string(name_hint);
    Scope s(this, "create", c);
    if (auto st = s.failure()) {
      return *st;
    }
    std::lock_guard lock(mu_);
    auto it = routes_.find(route.destination_cidr);
    if (it != routes_.end()) {
      if (it->second.target_node == route.target_node) {
        ++duplicate_creates_;
        return Status(Code::AlreadyExists, "route exists");
      }
      return Status(Code::FailedPrecondition, "destination " + route.destination_cidr +
                                                  " routed to " + it->second.target_node);
    }
    plugin::Route r = route;
    r.name = "r-" + std::string(name_hint) + "-" + route.destination_cidr;
    routes_[route.destination_cidr] = r;
    return okStatus();
  }
  Status deleteRoute(std::string_view cluster, const plugin::Route& route) override {
    Call c;
    c.op = "deleteRoute";
    c.cluster = std::string(cluster);
    c.node = route.target_node;
    c.cidr = route.destination_cidr;
    Scope s(this, "deleteRoute", c);
    if (auto st = s.failure()) {
      return *st;
    }
    std::lock_guard lock(mu_);
    auto it = routes_.find(route.destination_cidr);
    if (it != routes_.end() && it->second.target_node == route.target_node) {
      routes_.erase(it);
    }
    return okStatus();
  }
  void cancelAll() override {}

  // ipMode of every answered ingress ("", "VIP", "Proxy"); set before the controller runs.
  std::string ingress_ip_mode;

 private:
  // Records the call, runs the hook, counts concurrency, and picks a scripted failure.
  class Scope {
   public:
    Scope(FakeProvider* p, const std::string& op, const Call& call) : p_(p) {
      std::function<void(const std::string&, const Call&)> hook;
      {
        std::lock_guard lock(p->mu_);
        p->calls_.push_back(call);
        hook = p->hook_;
        auto it = p->failures_.find(op);
        if (it != p->failures_.end() && !it->second.empty()) {
          failure_ = it->second.front();
          it->second.pop_front();
        } else if (auto a = p->always_.find(op); a != p->always_.end()) {
          failure_ = a->second;
        }
      }
      int now = ++p->in_flight_;
      int peak = p->peak_.load();
      while (now > peak && !p->peak_.compare_exchange_weak(peak, now)) {
      }
      if (hook) {
        hook(op, call);
      }
    }
    ~Scope() { --p_->in_flight_; }
    std::optional<Status> failure() const { return failure_; }

   private:
    FakeProvider* p_;
    std::optional<Status> failure_;
  };

  static std::string key(const plugin::ServiceRef& svc) {
    return std::string(svc.namespace_name) + "/" + std::string(svc.name);
  }
  static std::vector<std::string> names(std::span<const plugin::NodeRef> nodes) {
    std::vector<std::string> out;
    for (const auto& n : nodes) {
      out.emplace_back(n.name);
    }
    return out;
  }
  static Call serviceCall(const std::string& op, std::string_view cluster,
                          const plugin::ServiceRef& svc, std::span<const plugin::NodeRef> nodes) {
    Call c;
    c.op = op;
    c.service = key(svc);
    c.uid = std::string(svc.uid);
    c.nodes = names(nodes);
    c.cluster = std::string(cluster);
    c.load_balancer_class = std::string(svc.load_balancer_class);
    for (const auto& p : svc.ports) {
      c.ports.push_back(std::string(p.name) + "/" + std::string(p.protocol) + "/" +
                        std::to_string(p.port) + "/" + std::to_string(p.node_port));
    }
    return c;
  }
  plugin::LoadBalancerStatus statusOf(const Lb& lb) const {
    plugin::LoadBalancerStatus st;
    sdk::Ingress in;
    in.ip = lb.ip;
    in.ip_mode = ingress_ip_mode;
    st.ingress.push_back(in);
    return st;
  }

  plugin::ProviderInfo info_;
  mutable std::mutex mu_;
  std::vector<Call> calls_;                                    // guarded by mu_
  std::map<std::string, std::deque<Status>> failures_;         // guarded by mu_
  std::map<std::string, Status> always_;                       // guarded by mu_
  std::function<void(const std::string&, const Call&)> hook_;  // guarded by mu_
  std::function<void(const std::string&)> after_hook_;         // guarded by mu_
  std::map<std::string, Lb> lbs_;                              // guarded by mu_; by uid
  std::map<std::string, plugin::Route> routes_;                // guarded by mu_; by destination
  int duplicate_creates_ = 0;                                  // guarded by mu_
  int next_ip_ = 0;                                            // guarded by mu_
  std::atomic<int> in_flight_{0};
  std::atomic<int> peak_{0};
};

// ---- object builders ------------------------------------------------------------------------

struct SvcSpec {
  std::string ns = "default";
  std::string name = "web";
  std::string uid = "uid-web";
  std::string rv = "1";
  std::string type = "LoadBalancer";
  std::optional<std::string> lb_class;
  std::vector<std::string> finalizers;
  bool deleting = false;
  std::string ingress_ip;
  std::string lb_ip;
  std::string etp = "Cluster";
  int hc_node_port = 0;
  std::vector<std::string> external_ips;
  std::vector<std::string> ip_families = {"IPv4"};
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  // name, protocol, port, nodePort, targetPort, appProtocol
  struct Port {
    std::string name = "http";
    std::string protocol = "TCP";
    int port = 80;
    int node_port = 30080;
    std::string target_port = "8080";
    std::string app_protocol;
  };
  std::vector<Port> ports = {Port{}};
  std::vector<std::string> source_ranges;

  std::string key() const { return ns + "/" + name; }
  std::string json() const;
};

inline std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

inline std::string jsonMap(const std::map<std::string, std::string>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) {
    out += (out.size() > 1 ? "," : "") + jsonString(k) + ":" + jsonString(v);
  }
  return out + "}";
}

inline std::string jsonList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (const auto& s : v) {
    out += (out.size() > 1 ? "," : "") + jsonString(s);
  }
  return out + "]";
}

inline std::string SvcSpec::json() const {
  std::string ports_json = "[";
  for (const auto& p : ports) {
    ports_json += (ports_json.size() > 1 ? "," : "");
    ports_json += "{\"name\":" + jsonString(p.name) + ",\"protocol\":" + jsonString(p.protocol) +
                  ",\"port\":" + std::to_string(p.port) +
                  ",\"nodePort\":" + std::to_string(p.node_port) + ",\"targetPort\":" +
                  (p.target_port.find_first_not_of("0123456789") == std::string::npos
                       ? p.target_port
                       : jsonString(p.target_port));
    if (!p.app_protocol.empty()) {
      ports_json += ",\"appProtocol\":" + jsonString(p.app_protocol);
    }
    ports_json += "}";
  }
  ports_json += "]";
  std::string meta = "{\"namespace\":" + jsonString(ns) + ",\"name\":" + jsonString(name) +
                     ",\"uid\":" + jsonString(uid) + ",\"resourceVersion\":" + jsonString(rv) +
                     ",\"finalizers\":" + jsonList(finalizers) +
                     ",\"annotations\":" + jsonMap(annotations) + ",\"labels\":" + jsonMap(labels);
  if (deleting) {
    meta += ",\"deletionTimestamp\":\"2024-01-01T00:00:00Z\"";
  }
  meta += "}";
  std::string spec = "{\"type\":" + jsonString(type) + ",\"ports\":" + ports_json +
                     ",\"externalTrafficPolicy\":" + jsonString(etp) +
                     ",\"ipFamilies\":" + jsonList(ip_families) +
                     ",\"externalIPs\":" + jsonList(external_ips) +
                     ",\"loadBalancerSourceRanges\":" + jsonList(source_ranges);
  if (hc_node_port != 0) {
    spec += ",\"healthCheckNodePort\":" + std::to_string(hc_node_port);
  }
  if (!lb_ip.empty()) {
    spec += ",\"loadBalancerIP\":" + jsonString(lb_ip);
  }
  if (lb_class) {
    spec += ",\"loadBalancerClass\":" + jsonString(*lb_class);
  }
  spec += "}";
  std::string status = "{\"loadBalancer\":{";
  if (!ingress_ip.empty()) {
    status += "\"ingress\":[{\"ip\":" + jsonString(ingress_ip) + "}]";
  }
  status += "}}";
  return "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":" + meta + ",\"spec\":" + spec +
         ",\"status\":" + status + "}";
}

inline std::shared_ptr<const kube::Service> makeService(const SvcSpec& s) {
  auto r = kube::decodeService(s.json());
  REQUIRE_MESSAGE(r.ok(), r.status().toString(), " ", s.json());
  return std::move(r).value();
}

struct NodeSpec {
  std::string name = "node-1";
  std::string uid;
  std::string rv = "1";
  std::string provider_id;
  bool ready = true;
  bool deleting = false;
  std::map<std::string, std::string> labels;
  std::vector<std::pair<std::string, std::string>> taints;  // key, effect
  std::vector<std::string> pod_cidrs;
  std::vector<std::pair<std::string, std::string>> addresses;              // type, address
  std::optional<std::pair<std::string, std::string>> network_unavailable;  // status, reason
  std::string json() const;
};

inline std::string NodeSpec::json() const {
  std::string meta = "{\"name\":" + jsonString(name) +
                     ",\"uid\":" + jsonString(uid.empty() ? "uid-" + name : uid) +
                     ",\"resourceVersion\":" + jsonString(rv) + ",\"labels\":" + jsonMap(labels);
  if (deleting) {
    meta += ",\"deletionTimestamp\":\"2024-01-01T00:00:00Z\"";
  }
  meta += "}";
  std::string taints_json = "[";
  for (const auto& [k, e] : taints) {
    taints_json += (taints_json.size() > 1 ? "," : "") + std::string("{\"key\":") + jsonString(k) +
                   ",\"effect\":" + jsonString(e) + "}";
  }
  taints_json += "]";
  std::string spec = "{\"providerID\":" + jsonString(provider_id) + ",\"taints\":" + taints_json;
  if (!pod_cidrs.empty()) {
    spec += ",\"podCIDR\":" + jsonString(pod_cidrs[0]) + ",\"podCIDRs\":" + jsonList(pod_cidrs);
  }
  spec += "}";
  std::string conds = "[{\"type\":\"Ready\",\"status\":" + jsonString(ready ? "True" : "False") +
                      ",\"reason\":\"KubeletReady\"}";
  if (network_unavailable) {
    conds +=
        ",{\"type\":\"NetworkUnavailable\",\"status\":" + jsonString(network_unavailable->first) +
        ",\"reason\":" + jsonString(network_unavailable->second) +
        ",\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}";
  }
  conds += "]";
  std::string addrs = "[";
  for (const auto& [t, a] : addresses) {
    addrs += (addrs.size() > 1 ? "," : "") + std::string("{\"type\":") + jsonString(t) +
             ",\"address\":" + jsonString(a) + "}";
  }
  addrs += "]";
  return "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":" + meta + ",\"spec\":" + spec +
         ",\"status\":{\"conditions\":" + conds + ",\"addresses\":" + addrs + "}}";
}

inline std::shared_ptr<const kube::Node> makeNode(const NodeSpec& n) {
  auto r = kube::decodeNode(n.json());
  REQUIRE_MESSAGE(r.ok(), r.status().toString(), " ", n.json());
  return std::move(r).value();
}

// ---- the harness ----------------------------------------------------------------------------

struct Harness {
  options::Options options;
  kube::FakeKubeApi api;
  kube::Informer<kube::Node> nodes{nullptr};
  kube::Informer<kube::Service> services{nullptr};
  FakeProvider provider;
  kube::EventBroadcaster events{api};
  metrics::Registry registry;
  Clock* clock = &Clock::real();

  Harness() {
    options.cluster_name = "kubernetes";
    options.concurrent_service_syncs = 2;
    options.cluster_cidr = "10.244.0.0/16";
    options.route_reconciliation_period = std::chrono::milliseconds(10000);
    nodes.start();
    services.start();
  }
  explicit Harness(Clock& c) : Harness() { clock = &c; }

  controllers::ControllerContext context() {
    return controllers::ControllerContext{options,  api,    nodes,    services,
                                          provider, events, registry, *clock};
  }

  void addNode(const NodeSpec& n) { nodes.injectForTest("ADDED", makeNode(n)); }
  void updateNode(const NodeSpec& n) { nodes.injectForTest("MODIFIED", makeNode(n)); }
  void deleteNode(const NodeSpec& n) { nodes.injectForTest("DELETED", makeNode(n)); }
  void addService(const SvcSpec& s) { services.injectForTest("ADDED", makeService(s)); }
  void updateService(const SvcSpec& s) { services.injectForTest("MODIFIED", makeService(s)); }
  void deleteService(const SvcSpec& s) { services.injectForTest("DELETED", makeService(s)); }

  // PATCH calls to a path (e.g. "/api/v1/namespaces/default/services/web/status").
  std::vector<kube::FakeKubeApi::Call> patches(const std::string& path = {}) {
    return api.callsFor("PATCH", path);
  }

  // Reasons (and messages) of the events recorded so far, in order.
  std::vector<std::pair<std::string, std::string>> eventList() {
    events.processQueuedForTest();
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& c : api.callsFor("POST")) {
      if (c.path.find("/events") == std::string::npos) {
        continue;
      }
      rapidjson::Document d;
      d.Parse(c.body.c_str());
      if (d.HasParseError() || !d.IsObject() || !d.HasMember("reason")) {
        continue;
      }
      out.emplace_back(d["reason"].GetString(),
                       d.HasMember("message") ? d["message"].GetString() : "");
    }
    return out;
  }
  std::vector<std::string> eventReasons() {
    std::vector<std::string> out;
    for (const auto& [r, _] : eventList()) {
      out.push_back(r);
    }
    return out;
  }
};

inline std::string servicesStatusPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + ns + "/services/" + name + "/status";
}

}  // namespace ccm::testing
