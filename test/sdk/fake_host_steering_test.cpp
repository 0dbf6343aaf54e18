// What a test steers in the fake host (deadlines, cancellation, clocks, the ABI major, the
// Service's fields and object JSON), and the host's checks it shares (plugin name and
// version, the host's "provider" metric label), against a provider written in this file.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "ccm/testing/fake_host.hpp"

using namespace ccm::sdk;
using ccm::sdk::testing::FakeHost;

namespace {

const ccm_host_services* g_services = nullptr;
ccm_host_handle g_host = 0;
ccm_provider* const kProvider = reinterpret_cast<ccm_provider*>(0x2);
std::string g_name = "steer";
std::string g_version = "1.0.0";
std::string g_metric_label = "zone";
// What the last call saw.
ccm_call g_call{};
int64_t g_unix_ns = 0;
int64_t g_mono_ns = 0;
std::string g_service_seen;
constexpr int kConcurrent = 8;
std::atomic<int> g_in_flight{0};
int g_destroyed = 0;

ccm_str cs(const std::string& s) { return ccm_str{s.data(), s.size()}; }

// Reports a metric, records the call and the clocks, then waits (bounded) for the call to be
// cancelled when the node is called "wait".
ccm_status existsFn(ccm_provider*, const ccm_call* call, const ccm_node* node,
                    ccm_existence* out) {
  g_call = *call;
  g_unix_ns = g_services->now_unix_ns(g_host);
  g_mono_ns = g_services->now_monotonic_ns(g_host);
  ccm_kv label{cs(g_metric_label), str("a")};
  g_services->metric(g_host, CCM_METRIC_COUNTER, str("calls_total"), str("calls"), &label, 1, 1);
  if (view(node->name).substr(0, 5) == "busy-") {
    // Concurrent calls: each waits (bounded) until all are in, then fails with its own
    // message.
    ++g_in_flight;
    for (int i = 0; i < 10000 && g_in_flight.load() < kConcurrent; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    g_services->set_error(g_host, call->call_id, node->name, static_cast<int64_t>(view(node->name).size()));
    return CCM_STATUS_UNAVAILABLE;
  }
  if (view(node->name) == "wait") {
    for (int i = 0; i < 10000 && !g_services->is_cancelled(g_host, call->call_id); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (g_services->is_cancelled(g_host, call->call_id)) {
    return CCM_STATUS_CANCELLED;
  }
  *out = CCM_EXISTENCE_EXISTS;
  return CCM_STATUS_OK;
}
ccm_status shutdownFn(ccm_provider*, const ccm_call*, const ccm_node*, ccm_power* out) {
  *out = CCM_POWER_RUNNING;
  return CCM_STATUS_OK;
}
ccm_status metadataFn(ccm_provider*, const ccm_call*, const ccm_node*) { return CCM_STATUS_OK; }

// Records the Service fields the ABI carries beyond the basics, and answers no balancer.
ccm_status getLbFn(ccm_provider*, const ccm_call*, ccm_str, const ccm_service* s, bool* exists) {
  g_service_seen = std::to_string(s->health_check_node_port) + "|";
  for (size_t i = 0; i < s->ip_family_count; ++i) {
    g_service_seen += std::string(view(s->ip_families[i])) + ",";
  }
  g_service_seen += "|" + std::string(view(s->load_balancer_class)) + "|" +
                    std::string(view(s->session_affinity)) + "|" +
                    std::string(view(s->object_json));
  *exists = false;
  return CCM_STATUS_OK;
}
ccm_status nameFn(ccm_provider*, const ccm_call*, ccm_str, const ccm_service*) {
  return CCM_STATUS_UNIMPLEMENTED;
}
ccm_status ensureFn(ccm_provider*, const ccm_call*, ccm_str, const ccm_service*,
                    const ccm_node* const*, size_t) {
  return CCM_STATUS_UNIMPLEMENTED;
}
ccm_status deleteFn(ccm_provider*, const ccm_call*, ccm_str, const ccm_service*) {
  return CCM_STATUS_UNIMPLEMENTED;
}

const ccm_instances_v1 kInstances = {sizeof(ccm_instances_v1), 0, 0, existsFn, shutdownFn,
                                     metadataFn};
const ccm_loadbalancer_v1 kLb = {sizeof(ccm_loadbalancer_v1), 0, 0, getLbFn, nameFn, ensureFn,
                                 ensureFn, deleteFn};

ccm_status createFn(const ccm_call*, ccm_str, ccm_provider** out) {
  *out = kProvider;
  return CCM_STATUS_OK;
}
void destroyFn(ccm_provider*) { ++g_destroyed; }
const void* capabilityFn(ccm_provider*, ccm_str id) {
  if (view(id) == CCM_CAP_INSTANCES) {
    return &kInstances;
  }
  return view(id) == CCM_CAP_LOADBALANCER ? &kLb : nullptr;
}

ccm_status entry(const ccm_host_info* host, const ccm_call* call, const ccm_plugin** out) {
  static ccm_plugin plugin{};
  g_services = host->services;
  g_host = host->host;
  if (host->abi_major != CCM_ABI_MAJOR) {
    g_services->set_error(g_host, call->call_id,
                          str("steer speaks ABI 1, the host " +
                              std::to_string(host->abi_major)),
                          0);
    return CCM_STATUS_FAILED_PRECONDITION;
  }
  plugin.struct_size = sizeof plugin;
  plugin.abi_major = CCM_ABI_MAJOR;
  plugin.abi_minor = 0;
  plugin.name = cs(g_name);
  plugin.version = cs(g_version);
  plugin.create = createFn;
  plugin.destroy = destroyFn;
  plugin.get_capability = capabilityFn;
  *out = &plugin;
  return CCM_STATUS_OK;
}

}  // namespace

TEST_CASE("the fake host checks the plugin's name and version as the host does") {
  g_name = "Steer Provider";
  {
    FakeHost host(&entry);
    Status s = host.create("");
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().code() == CCM_STATUS_FAILED_PRECONDITION);
    CHECK_MESSAGE(s.error().message().find("\"Steer Provider\", which is not a provider name") !=
                      std::string::npos,
                  s.error().message());
  }
  g_name = "steer";
  g_version = "1.0\x1b[31m";
  {
    FakeHost host(&entry);
    Status s = host.create("");
    REQUIRE_FALSE(s.ok());
    CHECK_MESSAGE(s.error().message().find(
                      "its version \"1.0\\x1b[31m\" has a control character at byte 3") !=
                      std::string::npos,
                  s.error().message());
  }
  g_version = std::string(65, '1');
  {
    FakeHost host(&entry);
    Status s = host.create("");
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message().find("its version is 65 bytes long (at most 64)") !=
          std::string::npos);
  }
  g_version = "1.0.0";
  FakeHost host(&entry);
  CHECK(host.create("").ok());
}

TEST_CASE("a metric under the host's prefix may not carry a provider label") {
  FakeHost host(&entry);
  REQUIRE(host.create("").ok());
  g_metric_label = "provider";
  auto r = host.instanceExists(testing::Node{"node-1"});
  g_metric_label = "zone";
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == CCM_STATUS_INTERNAL);
  CHECK(r.error().message().find("the label \"provider\" is the host's") != std::string::npos);
  REQUIRE(host.instanceExists(testing::Node{"node-1"}).ok());
  CHECK(host.metric("calls_total") == 1);
}

TEST_CASE("the test steers deadlines, clocks and cancellation") {
  FakeHost host(&entry);
  REQUIRE(host.create("").ok());
  testing::Node node{"node-1"};
  REQUIRE(host.instanceExists(node).ok());
  CHECK(g_call.deadline_monotonic_ns == 0);

  host.setCallTimeout(std::chrono::seconds(5));
  REQUIRE(host.instanceExists(node).ok());
  CHECK(g_call.deadline_monotonic_ns > g_mono_ns);
  CHECK(g_call.deadline_monotonic_ns - g_mono_ns <= int64_t{5'000'000'000});

  int64_t unix_before = g_unix_ns;
  int64_t mono_before = g_mono_ns;
  host.advanceUnixClock(std::chrono::hours(1));
  host.advanceMonotonicClock(std::chrono::hours(2));
  REQUIRE(host.instanceExists(node).ok());
  CHECK(g_unix_ns - unix_before >= int64_t{3600} * 1'000'000'000);
  CHECK(g_mono_ns - mono_before >= int64_t{7200} * 1'000'000'000);
  CHECK(g_call.deadline_monotonic_ns > g_mono_ns);

  host.cancelCalls(true);
  auto cancelled = host.instanceExists(node);
  REQUIRE_FALSE(cancelled.ok());
  CHECK(cancelled.error().code() == CCM_STATUS_CANCELLED);
  host.cancelCalls(false);
  CHECK(host.instanceExists(node).ok());

  // Cancelled from another thread while the call waits for it.
  std::thread canceller([&host] { host.cancelCalls(true); });
  auto in_flight = host.instanceExists(testing::Node{"wait"});
  canceller.join();
  host.cancelCalls(false);
  REQUIRE_FALSE(in_flight.ok());
  CHECK(in_flight.error().code() == CCM_STATUS_CANCELLED);
  // A call that is not running reads as cancelled, as in the host.
  CHECK(g_services->is_cancelled(g_host, g_call.call_id));
}

TEST_CASE("another ABI major: the plugin's refusal comes back from create") {
  FakeHost host(&entry, {.abi_major = 2});
  Status s = host.create("");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code() == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(s.error().message() == "steer speaks ABI 1, the host 2");
}

TEST_CASE("the Service's fields and object JSON reach the plugin; create again replaces") {
  g_destroyed = 0;
  FakeHost host(&entry);
  REQUIRE(host.create("").ok());
  testing::Service svc;
  REQUIRE(host.getLoadBalancer(svc).ok());
  CHECK(g_service_seen == "0|IPv4,||None|");
  svc.health_check_node_port = 31000;
  svc.ip_families = {"IPv6", "IPv4"};
  svc.load_balancer_class = "example.com/lb";
  svc.session_affinity = "ClientIP";
  svc.object_json = R"({"spec":{"ipFamilyPolicy":"PreferDualStack"}})";
  REQUIRE(host.getLoadBalancer(svc).ok());
  CHECK(g_service_seen ==
        R"(31000|IPv6,IPv4,|example.com/lb|ClientIP|{"spec":{"ipFamilyPolicy":"PreferDualStack"}})");
  REQUIRE(host.create("again").ok());
  CHECK(g_destroyed == 1);
}

TEST_CASE("captured logs can be cleared") {
  FakeHost host(&entry);
  REQUIRE(host.create("").ok());
  g_services->log(g_host, CCM_LOG_INFO, str("hello"));
  CHECK(host.logged("hello"));
  host.clearLogs();
  CHECK(host.logs().empty());
  CHECK_FALSE(host.logged("hello"));
}

TEST_CASE("each fake host has its own handle; a gone host's handle is absorbed") {
  ccm_host_handle first = 0;
  {
    FakeHost host(&entry);
    REQUIRE(host.create("").ok());
    first = g_host;
    g_services->log(g_host, CCM_LOG_INFO, str("to the first"));
    CHECK(host.logged("to the first"));
    host.destroyProvider();
    CHECK_FALSE(host.hasProvider());
    CHECK(host.instanceExists(testing::Node{"node-1"}).error().code() ==
          CCM_STATUS_UNIMPLEMENTED);
  }
  FakeHost second(&entry);
  REQUIRE(second.create("").ok());
  CHECK(g_host != first);
  // The first host is gone: its handle reaches no live host and nothing breaks.
  g_services->log(first, CCM_LOG_INFO, str("stray"));
  CHECK(g_services->is_cancelled(first, 1));
  CHECK_FALSE(g_services->set_error(first, 1, str("late"), 0));
  CHECK_FALSE(second.logged("stray"));
}

TEST_CASE("concurrent calls keep their own outputs") {
  FakeHost host(&entry);
  REQUIRE(host.create("").ok());
  g_in_flight = 0;
  std::vector<Status> results(kConcurrent);
  std::vector<std::thread> threads;
  threads.reserve(kConcurrent);
  for (int i = 0; i < kConcurrent; ++i) {
    threads.emplace_back([&host, &results, i] {
      auto r = host.instanceExists(testing::Node{"busy-" + std::to_string(i)});
      results[i] = r.ok() ? Status() : Status(r.error());
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  CHECK(g_in_flight.load() == kConcurrent);
  for (int i = 0; i < kConcurrent; ++i) {
    CAPTURE(i);
    CHECK(results[i].code() == CCM_STATUS_UNAVAILABLE);
    CHECK(results[i].message() == "busy-" + std::to_string(i));
    CHECK(results[i].retryAfter().count() == 6);
  }
}
