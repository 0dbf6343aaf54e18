// The fake host refuses what the host refuses, with the host's message: the conformance kit's
// broken plugins (test/abi/plugins) loaded from their .so files, and a provider in this file
// whose metadata each case breaks in one way. The expected messages are the host's (the same
// pieces test/abi/conformance_test.cpp and test/sdk/provider_check_test.py expect from it).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "ccm/testing/fake_host.hpp"

using namespace ccm::sdk;
using ccm::sdk::testing::FakeHost;

namespace {

std::string kit(const char* name) {
  const char* dir = std::getenv("CCM_CONFORMANCE_DIR");
  REQUIRE(dir != nullptr);
  return std::string(dir) + "/" + name + ".so";
}

void expectError(const Status& s, ccm_status code, const std::string& fragment) {
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code() == code);
  CHECK_MESSAGE(s.error().message().find(fragment) != std::string::npos, s.error().message());
}

template <typename T>
void expectError(const Result<T>& r, ccm_status code, const std::string& fragment) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == code);
  CHECK_MESSAGE(r.error().message().find(fragment) != std::string::npos, r.error().message());
}

// Creating the kit plugin name fails with the host's reason.
void expectRefusedAtCreate(const char* name, const std::string& fragment,
                           ccm_status code = CCM_STATUS_FAILED_PRECONDITION) {
  CAPTURE(name);
  FakeHost host(FakeHost::load(kit(name)));
  expectError(host.create(""), code, fragment);
}

}  // namespace

TEST_CASE("the fake host refuses at create what the host refuses at load") {
  expectRefusedAtCreate("wrong-major", "it speaks plugin ABI 2.0, this host speaks ABI 1.");
  expectRefusedAtCreate("minor-too-new", "it chose ABI minor 5 but this host offers at most 1.");
  expectRefusedAtCreate("short-struct",
                        "its ccm_plugin struct_size is 8 bytes, smaller than the");
  expectRefusedAtCreate("null-slot", "its required ccm_plugin.create slot is NULL");
  expectRefusedAtCreate("null-table", "its entry point returned OK but no ccm_plugin table");
  expectRefusedAtCreate("bad-prefix",
                        "provider bad-prefix declares a malformed ccm_plugin.provider_id_prefix");
  expectRefusedAtCreate("bad-domain",
                        "provider bad-domain declares a malformed ccm_plugin.annotation_domain");
  expectRefusedAtCreate("bad-namespace",
                        "declares a malformed ccm_plugin.metric_namespace \"workqueue\"");
  expectRefusedAtCreate("null-cap-slot",
                        "provider null-cap-slot: capability ccm.instances/1 has its required "
                        "slot instance_metadata set to NULL");
  expectRefusedAtCreate("no-capability",
                        "provider no-capability provides no capability: get_capability "
                        "returned NULL for each of ccm.instances/1");
  expectRefusedAtCreate("refuses-negotiation", "this plugin needs ABI 1.3 features");
  expectRefusedAtCreate("refuses-config", "[Global] auth-url is required but missing",
                        CCM_STATUS_INVALID_ARGUMENT);
}

TEST_CASE("playing a 1.0 host, the fake host reads no 1.1 declaration") {
  // The out-of-prefix kit plugin (v11 answering outside "kit://") falls back to minor 0 for a
  // 1.0 host: its prefix is then not declared and its providerID is accepted, as the host does
  // with a 1.0 plugin.
  FakeHost host(FakeHost::load(kit("out-of-prefix")), {.abi_minor = 0});
  REQUIRE(host.create("").ok());
  CHECK(host.negotiatedMinor() == 0);
  CHECK(host.providerIdPrefix().empty());
  auto md = host.instanceMetadata(testing::Node{"node-1"});
  REQUIRE(md.ok());
  CHECK(md.value()->provider_id == "other://vm-1");
}

TEST_CASE("malformed output fails the call as INTERNAL with the host's message") {
  FakeHost host(FakeHost::load(kit("malformed")));
  REQUIRE(host.create("").ok());
  testing::Node node{"node-1"};
  expectError(host.instanceMetadata(node), CCM_STATUS_INTERNAL,
              "invalid instance metadata: addresses[0].type \"Bogus\" is not one of Hostname, "
              "InternalIP, ExternalIP, InternalDNS, ExternalDNS");
  testing::Service svc;
  expectError(host.ensureLoadBalancer(svc, {node}), CCM_STATUS_INTERNAL,
              "invalid load balancer status: ingress[0].ip \"not-an-ip\" is not an IP address");
}

TEST_CASE("inconsistent pointer/length pairs are refused, never read") {
  {
    FakeHost host(FakeHost::load(kit("null-data")));
    REQUIRE(host.create("").ok());
    testing::Node node{"node-1"};
    expectError(host.instanceMetadata(node), CCM_STATUS_INTERNAL,
                "invalid instance metadata: provider_id has data NULL with size 12");
    testing::Service svc;
    expectError(host.getLoadBalancerName(svc), CCM_STATUS_INTERNAL,
                "invalid string: value has data NULL with size 5");
    expectError(host.ensureLoadBalancer(svc, {node}), CCM_STATUS_INTERNAL,
                "invalid load balancer status: ingress is NULL with ingress_count 1");
  }
  {
    FakeHost host(FakeHost::load(kit("null-arrays")));
    REQUIRE(host.create("").ok());
    testing::Node node{"node-1"};
    expectError(host.instanceMetadata(node), CCM_STATUS_INTERNAL,
                "invalid instance metadata: addresses is NULL with address_count 3");
    testing::Service svc;
    expectError(host.ensureLoadBalancer(svc, {node}), CCM_STATUS_INTERNAL,
                "ingress[0].ports is NULL with port_count 2");
  }
}

TEST_CASE("missing output, unknown status codes and foreign providerIDs") {
  {
    FakeHost host(FakeHost::load(kit("no-status")));
    REQUIRE(host.create("").ok());
    expectError(host.ensureLoadBalancer(testing::Service{}, {}), CCM_STATUS_INTERNAL,
                "provider returned OK from ensure_load_balancer without a load balancer status");
    expectError(host.getLoadBalancer(testing::Service{}), CCM_STATUS_INTERNAL,
                "provider returned OK from get_load_balancer with exists set but without a load "
                "balancer status");
  }
  {
    FakeHost host(FakeHost::load(kit("bad-existence")));
    REQUIRE(host.create("").ok());
    expectError(host.instanceExists(testing::Node{"node-1"}), CCM_STATUS_INTERNAL,
                "instance_exists wrote existence 7, which is not one of");
  }
  {
    FakeHost host(FakeHost::load(kit("bad-metric")));
    REQUIRE(host.create("").ok());
    expectError(host.instanceExists(testing::Node{"node-1"}), CCM_STATUS_INTERNAL,
                "metric \"Bad-Name\" has an invalid name or labels");
  }
  {
    FakeHost host(FakeHost::load(kit("wrong-output")));
    REQUIRE(host.create("").ok());
    expectError(host.instanceExists(testing::Node{"node-1"}), CCM_STATUS_INTERNAL,
                "emit_string called during a call that returns no output");
  }
  {
    FakeHost host(FakeHost::load(kit("unknown-status")));
    REQUIRE(host.create("").ok());
    expectError(host.instanceExists(testing::Node{"node-1"}), CCM_STATUS_INTERNAL,
                "unknown status code 777: something odd");
  }
  {
    FakeHost sound(FakeHost::load(kit("v11")));
    REQUIRE(sound.create("").ok());
    auto md = sound.instanceMetadata(testing::Node{"node-1"});
    REQUIRE(md.ok());
    REQUIRE(md.value().has_value());
    CHECK(md.value()->provider_id == "kit://vm-1");
    FakeHost host(FakeHost::load(kit("out-of-prefix")));
    REQUIRE(host.create("").ok());
    expectError(host.instanceMetadata(testing::Node{"node-1"}), CCM_STATUS_INTERNAL,
                "providerID \"other://vm-1\" does not start with the provider's declared prefix "
                "\"kit://\"");
  }
}

TEST_CASE("the fake host calls every function of a sound plugin") {
  FakeHost host(FakeHost::load(kit("baseline")));
  REQUIRE(host.create("").ok());
  testing::Node node{"node-1"};
  CHECK(host.instanceExists(node).value() == Existence::Exists);
  CHECK(host.instanceShutdown(node).value() == Power::Running);
  auto md = host.instanceMetadata(node);
  REQUIRE(md.ok());
  REQUIRE(md.value().has_value());
  CHECK(md.value()->provider_id == "broken://vm-1");
  testing::Service svc;
  svc.name = "web";
  auto got = host.getLoadBalancer(svc);
  REQUIRE(got.ok());
  CHECK_FALSE(got.value().has_value());
  CHECK(host.getLoadBalancerName(svc).value() == "web");
  CHECK(host.ensureLoadBalancer(svc, {node}).value().ingress.at(0).ip == "192.0.2.10");
  CHECK(host.updateLoadBalancer(svc, {node}).ok());
  CHECK(host.ensureLoadBalancerDeleted(svc).ok());
  // No batch or routes capability in the kit: the calls say so instead of crashing.
  CHECK(host.instanceMetadataBatch({node}).error().code() == CCM_STATUS_UNIMPLEMENTED);
  CHECK(host.deleteRoute(Route{}).error().code() == CCM_STATUS_UNIMPLEMENTED);
  CHECK(host.reconfigure("").error().code() == CCM_STATUS_UNIMPLEMENTED);
}

// ---- a provider in this file, whose metadata each case sets -----------------------------------

namespace {

const ccm_host_services* g_services = nullptr;
ccm_host_handle g_host = 0;
ccm_provider* const kProvider = reinterpret_cast<ccm_provider*>(0x1);
std::string g_instance_type = "small";
std::string g_zone = "zone-a";
std::string g_address = "10.0.0.1";

ccm_str cs(const std::string& s) { return ccm_str{s.data(), s.size()}; }

ccm_status metadataFn(ccm_provider*, const ccm_call* call, const ccm_node*) {
  ccm_instance_metadata md{};
  md.struct_size = sizeof md;
  md.provider_id = str("local://vm-1");
  md.instance_type = cs(g_instance_type);
  md.zone = cs(g_zone);
  ccm_node_address address{str("InternalIP"), cs(g_address)};
  md.addresses = &address;
  md.address_count = 1;
  g_services->emit_instance_metadata(g_host, call->call_id, 0, &md);
  return CCM_STATUS_OK;
}
ccm_status existsFn(ccm_provider*, const ccm_call*, const ccm_node*, ccm_existence* out) {
  *out = CCM_EXISTENCE_EXISTS;
  return CCM_STATUS_OK;
}
ccm_status shutdownFn(ccm_provider*, const ccm_call*, const ccm_node*, ccm_power* out) {
  *out = CCM_POWER_RUNNING;
  return CCM_STATUS_OK;
}

const ccm_instances_v1 kInstances = {sizeof(ccm_instances_v1), 0, 0, existsFn, shutdownFn,
                                     metadataFn};

ccm_status createFn(const ccm_call*, ccm_str, ccm_provider** out) {
  *out = kProvider;
  return CCM_STATUS_OK;
}
void destroyFn(ccm_provider*) {}
const void* capabilityFn(ccm_provider*, ccm_str id) {
  return view(id) == CCM_CAP_INSTANCES ? &kInstances : nullptr;
}

ccm_status entry(const ccm_host_info* host, const ccm_call*, const ccm_plugin** out) {
  static ccm_plugin plugin{};
  g_services = host->services;
  g_host = host->host;
  plugin.struct_size = sizeof plugin;
  plugin.abi_major = CCM_ABI_MAJOR;
  plugin.abi_minor = 0;
  plugin.name = str("local");
  plugin.version = str("1.0.0");
  plugin.create = createFn;
  plugin.destroy = destroyFn;
  plugin.get_capability = capabilityFn;
  *out = &plugin;
  return CCM_STATUS_OK;
}

Result<std::optional<InstanceMetadata>> metadataWith(const std::string& instance_type,
                                                     const std::string& zone,
                                                     const std::string& address) {
  g_instance_type = instance_type;
  g_zone = zone;
  g_address = address;
  FakeHost host(&entry);
  REQUIRE(host.create("").ok());
  return host.instanceMetadata(testing::Node{"node-1"});
}

}  // namespace

TEST_CASE("content the host refuses: an 8 MiB instance type, invalid UTF-8, not an IP") {
  CHECK(metadataWith("small", "zone-a", "10.0.0.1").ok());
  expectError(metadataWith(std::string(size_t{8} << 20, 'x'), "zone-a", "10.0.0.1"),
              CCM_STATUS_INTERNAL,
              "invalid instance metadata: instanceType is 8388608 bytes long (at most 63)");
  expectError(metadataWith("small", "zone-\xff\xfe", "10.0.0.1"), CCM_STATUS_INTERNAL,
              "invalid instance metadata: zone is not valid UTF-8 text");
  expectError(metadataWith("small", "zone-a", "not-an-ip"), CCM_STATUS_INTERNAL,
              "invalid instance metadata: addresses[0].address \"not-an-ip\" is not an IP "
              "address");
  CHECK(metadataWith("small", "zone-a", "fd00::1").ok());
}
