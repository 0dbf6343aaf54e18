// TestHost: a test host for the openstack plugin. It dlopens openstack.so, negotiates through
// ccm_provider_entry_v1 with its own ccm_host_services table (capturing logs, secrets, metrics
// and emitted results; clocks it can shift; calls it can cancel), and offers typed wrappers
// that build the ABI structs and call the capability tables exactly as the host does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ccm/provider_abi.h"

namespace ccm::openstack::testing {

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Node {
  std::string name;
  std::string uid;
  std::string provider_id;
  Pairs labels;
  Pairs annotations;
  Pairs addresses;  // (type, address)
};

inline Node node(std::string name, std::string provider_id = "", Pairs addresses = {}) {
  Node n;
  n.name = std::move(name);
  n.provider_id = std::move(provider_id);
  n.addresses = std::move(addresses);
  return n;
}

struct ServicePort {
  std::string name;
  std::string protocol = "TCP";
  int32_t port = 0;
  int32_t node_port = 0;
};

struct Service {
  std::string ns = "default";
  std::string name;
  std::string uid = "5d3c0d1e-8b4b-4c4e-9e35-6a0a8c1f2b3d";
  Pairs annotations;
  std::vector<ServicePort> ports;
  std::string load_balancer_ip;
  std::vector<std::string> source_ranges;
  std::string external_traffic_policy = "Cluster";
  int32_t health_check_node_port = 0;
  std::vector<std::string> ip_families = {"IPv4"};
  std::string ip_family_policy;  // sent as the Service's JSON when set
  std::string load_balancer_class;
  std::string session_affinity = "None";
};

struct Route {
  std::string name;
  std::string target_node;
  std::string destination_cidr;
  bool blackhole = false;
  Pairs target_node_addresses;
};

struct InstanceMetadata {
  std::string provider_id;
  std::string instance_type;
  std::string zone;
  std::string region;
  Pairs addresses;
};

struct Ingress {
  std::string ip;
  std::string hostname;
  std::string ip_mode;
};

struct LogLine {
  ccm_log_level level;
  std::string message;
};

// What one call produced.
struct CallResult {
  ccm_status status = CCM_STATUS_INTERNAL;
  std::string error;
  int64_t retry_after_ms = 0;
  std::map<size_t, InstanceMetadata> metadata;
  std::map<size_t, std::pair<ccm_status, std::string>> item_errors;
  std::optional<std::vector<Ingress>> lb_status;
  std::vector<Route> routes;
  std::optional<std::string> string;
  ccm_existence existence = CCM_EXISTENCE_UNKNOWN;
  ccm_power power = CCM_POWER_UNKNOWN;
  bool exists = false;

  bool ok() const { return status == CCM_STATUS_OK; }
};

class Provider;

class TestHost {
 public:
  // Loads openstack.so (path from $CCM_OPENSTACK_SO) and negotiates, once per process.
  static TestHost& instance();

  const ccm_plugin& plugin() const { return *plugin_; }

  // Creates a provider from cloud.conf text. The result's status/error say why not.
  std::pair<CallResult, std::unique_ptr<Provider>> create(const std::string& config);

  // Runs fn(call) as one host call with a fresh call_id and deadline (now + deadline_ms),
  // collecting what the plugin emits.
  template <typename Fn>
  CallResult run(Fn&& fn, int64_t deadline_ms = 60000) {
    ccm_call call = begin(deadline_ms);
    ccm_status st = fn(&call);
    return end(call.call_id, st);
  }

  // Logs and secrets seen so far (all providers).
  std::vector<LogLine> logs();
  std::vector<std::string> secrets();
  void clearLogs();
  uint64_t metricCount(const std::string& name);
  // True when any log line contains needle.
  bool logged(const std::string& needle);

  // Shift the clocks the plugin sees.
  void advanceUnix(std::chrono::nanoseconds d);
  void setCancelAll(bool cancelled);

  // Negotiation as a host of another ABI major would do it (for refusal tests).
  static std::pair<ccm_status, std::string> negotiateWithMajor(uint32_t major);

  // Service callbacks (static C functions forward here).
  ccm_call begin(int64_t deadline_ms);
  CallResult end(uint64_t call_id, ccm_status status);

 private:
  TestHost();
  friend struct Services;

  void* lib_ = nullptr;
  const ccm_plugin* plugin_ = nullptr;
  std::mutex mu_;
  std::vector<LogLine> logs_;
  std::vector<std::string> secrets_;
  std::map<std::string, uint64_t> metrics_;
  std::map<uint64_t, CallResult> running_;
  uint64_t next_call_ = 1;
  int64_t unix_offset_ns_ = 0;
  bool cancel_all_ = false;
};

// A created provider and typed calls on its capabilities.
class Provider {
 public:
  Provider(TestHost& host, ccm_provider* p) : host_(host), p_(p) {}
  ~Provider();

  const void* capability(const char* id);
  bool has(const char* id) { return capability(id) != nullptr; }

  CallResult exists(const Node& node);
  CallResult shutdown(const Node& node);
  CallResult metadata(const Node& node);
  CallResult metadataBatch(const std::vector<Node>& nodes);

  CallResult getLoadBalancer(const Service& svc, const std::string& cluster = "kubernetes");
  CallResult loadBalancerName(const Service& svc, const std::string& cluster = "kubernetes");
  CallResult ensure(const Service& svc, const std::vector<Node>& nodes,
                    const std::string& cluster = "kubernetes", int64_t deadline_ms = 60000);
  CallResult update(const Service& svc, const std::vector<Node>& nodes,
                    const std::string& cluster = "kubernetes");
  CallResult remove(const Service& svc, const std::string& cluster = "kubernetes");
  // Calls ensure (or remove) until it stops answering "busy, retry later" (at most `tries`).
  CallResult ensureSettled(const Service& svc, const std::vector<Node>& nodes, int tries = 10,
                           const std::string& cluster = "kubernetes");
  CallResult removeSettled(const Service& svc, int tries = 10,
                           const std::string& cluster = "kubernetes");

  CallResult listRoutes(const std::string& cluster = "kubernetes");
  CallResult createRoute(const Route& route, const std::string& cluster = "kubernetes");
  CallResult deleteRoute(const Route& route, const std::string& cluster = "kubernetes");

  // ccm_plugin.reconfigure with new cloud.conf text (UNIMPLEMENTED when the slot is NULL).
  CallResult reconfigure(const std::string& config);

  ccm_provider* raw() { return p_; }

 private:
  TestHost& host_;
  ccm_provider* p_;
};

}  // namespace ccm::openstack::testing
