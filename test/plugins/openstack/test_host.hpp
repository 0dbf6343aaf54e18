// TestHost: openstack.so (the file named by $CCM_OPENSTACK_SO) under the SDK's fake host
// (ccm/testing/fake_host.hpp), which negotiates, passes inputs and checks every output as the
// host does. Provider: typed calls on one created provider, each answered as a CallResult
// (status, message and what the call returned) for the tests to assert on.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ccm/testing/fake_host.hpp"

namespace ccm::openstack::testing {

using sdk::Ingress;
using sdk::InstanceMetadata;
using sdk::NodeAddress;
using sdk::Route;
using sdk::testing::Node;
using sdk::testing::Service;
using sdk::testing::ServicePort;
using LogLine = sdk::testing::FakeHost::LogLine;

Node node(std::string name, std::string provider_id = "", std::vector<NodeAddress> addresses = {});

// The Service object JSON (Service::object_json) of a Service whose spec.ipFamilyPolicy is
// policy, the one field openstack reads from it; empty (no object JSON) for an empty policy.
std::string ipFamilyPolicyJson(const std::string& policy);

// What one call produced: its status and message, and its output when it had one.
struct CallResult {
  ccm_status status = CCM_STATUS_INTERNAL;
  std::string error;
  int64_t retry_after_ms = 0;
  std::map<size_t, InstanceMetadata> metadata;                      // by node index
  std::map<size_t, std::pair<ccm_status, std::string>> item_errors;  // by node index
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
  // The process's one host, with openstack.so negotiated on first use; never destroyed
  // (providers kept in function-local statics are destroyed at exit and log as they go).
  static TestHost& instance();

  sdk::testing::FakeHost& fake() { return fake_; }
  const ccm_plugin& plugin() const { return fake_.plugin(); }

  // Creates a provider from cloud.conf text, destroying the one created before (the fake
  // host holds one). The result's status/error say why not. start_timeout: the deadline the
  // host gives create (--provider-start-timeout); by default the host's default, 2 minutes,
  // so a create that only works without a deadline fails here as it would in the host.
  std::pair<CallResult, std::unique_ptr<Provider>> create(
      const std::string& config,
      std::chrono::nanoseconds start_timeout = std::chrono::minutes(2));

  std::vector<LogLine> logs() const { return fake_.logs(); }
  std::vector<std::string> secrets() const { return fake_.secrets(); }
  void clearLogs() { fake_.clearLogs(); }
  double metric(const std::string& name) const { return fake_.metric(name); }
  bool logged(const std::string& needle) const { return fake_.logged(needle); }
  void advanceUnix(std::chrono::nanoseconds d) { fake_.advanceUnixClock(d); }
  void setCancelAll(bool cancelled) { fake_.cancelCalls(cancelled); }

  // Negotiation by a host of another ABI major (a FakeHost of its own): the plugin's status
  // and message.
  static std::pair<ccm_status, std::string> negotiateWithMajor(uint32_t major);

 private:
  friend class Provider;
  TestHost();

  sdk::testing::FakeHost fake_;
  uint64_t generation_ = 0;  // counts creates: a Provider is live while it matches
};

// The provider one create made. Used after a later create replaced it, it throws.
class Provider {
 public:
  Provider(TestHost& host, uint64_t generation) : host_(host), generation_(generation) {}
  ~Provider();
  Provider(const Provider&) = delete;
  Provider& operator=(const Provider&) = delete;

  bool has(const char* id);
  // False once a later create replaced this provider.
  bool current() const { return host_.generation_ == generation_; }

  // Calls get a deadline of deadline_ms from their start (60 s unless said otherwise).
  CallResult exists(const Node& node, int64_t deadline_ms = kDeadlineMs);
  CallResult shutdown(const Node& node);
  CallResult metadata(const Node& node);
  CallResult metadataBatch(const std::vector<Node>& nodes);

  CallResult getLoadBalancer(const Service& svc, const std::string& cluster = "kubernetes");
  CallResult loadBalancerName(const Service& svc, const std::string& cluster = "kubernetes");
  CallResult ensure(const Service& svc, const std::vector<Node>& nodes,
                    const std::string& cluster = "kubernetes", int64_t deadline_ms = kDeadlineMs);
  CallResult update(const Service& svc, const std::vector<Node>& nodes,
                    const std::string& cluster = "kubernetes");
  CallResult remove(const Service& svc, const std::string& cluster = "kubernetes");
  // Calls ensure (or remove) until it stops answering "busy, retry later" (at most `tries`).
  CallResult ensureSettled(const Service& svc, const std::vector<Node>& nodes, int tries = 10,
                           const std::string& cluster = "kubernetes");
  CallResult removeSettled(const Service& svc, int tries = 10,
                           const std::string& cluster = "kubernetes");

  CallResult listRoutes(const std::string& cluster = "kubernetes");
  // The route's node addresses are passed (enable_node_addresses) when it has some.
  CallResult createRoute(const Route& route, const std::string& cluster = "kubernetes");
  CallResult deleteRoute(const Route& route, const std::string& cluster = "kubernetes");

  // ccm_plugin.reconfigure with new cloud.conf text (UNIMPLEMENTED when the slot is NULL).
  CallResult reconfigure(const std::string& config);

  static constexpr int64_t kDeadlineMs = 60000;

 private:
  // The fake host, with this call's deadline set; throws when this provider was replaced.
  sdk::testing::FakeHost& call(int64_t deadline_ms = kDeadlineMs);

  TestHost& host_;
  uint64_t generation_;
};

}  // namespace ccm::openstack::testing
