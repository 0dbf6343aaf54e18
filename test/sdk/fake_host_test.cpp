// The SDK's fake host, as a provider author would use it in unit tests: against the minimal
// C example and against fake-cloud, both loaded from their .so files.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "ccm/testing/fake_host.hpp"

using namespace ccm::sdk;
using ccm::sdk::testing::FakeHost;

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE(v != nullptr);
  return v;
}
}  // namespace

TEST_CASE("fake host drives the minimal C provider") {
  FakeHost host(FakeHost::load(env("CCM_EXAMPLE_DIR") + "/minimal.so"));
  Status bad = host.create("node-a zone-1\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code() == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(bad.error().message().find("line 1: expected") != std::string::npos);

  REQUIRE(host.create("node-a zone-1 small 10.10.0.1\nnode-b zone-2 large 10.10.0.2 shutdown\n")
              .ok());
  CHECK(host.name() == "minimal");
  CHECK(host.logged("minimal provider ready with 2 machines"));
  testing::Node a{"node-a"};
  auto md = host.instanceMetadata(a);
  REQUIRE(md.ok());
  REQUIRE(md.value().has_value());
  CHECK(md.value()->provider_id == "minimal://node-a");
  CHECK(md.value()->zone == "zone-1");
  CHECK(md.value()->addresses.at(0).address == "10.10.0.1");
  testing::Node b{"node-b"};
  CHECK(host.instanceShutdown(b).value() == Power::Shutdown);
  testing::Node c{"node-c"};
  CHECK(host.instanceExists(c).value() == Existence::NotFound);
  CHECK(host.listRoutes().error().code() == CCM_STATUS_UNIMPLEMENTED);
}

TEST_CASE("fake host drives fake-cloud load balancers and routes") {
  FakeHost host(FakeHost::load(env("CCM_PLUGIN_DIR") + "/fake-cloud.so"));
  REQUIRE(host.create("loadBalancer: {ipPool: 198.51.100.0/24}\n").ok());
  testing::Service svc;
  auto st = host.ensureLoadBalancer(svc, {testing::Node{"n1"}});
  REQUIRE(st.ok());
  CHECK(st.value().ingress.at(0).ip == "198.51.100.1");
  CHECK(host.metric("fake_cloud_calls_total") >= 1);
  CHECK(host.ensureLoadBalancerDeleted(svc).ok());
  Route r;
  r.target_node = "n1";
  r.destination_cidr = "10.244.0.0/24";
  CHECK(host.createRoute(r, "uid-1").ok());
  auto routes = host.listRoutes();
  REQUIRE(routes.ok());
  CHECK(routes.value().size() == 1);
}

TEST_CASE("ABI 1.1 through the fake host: declarations, annotations and log fields") {
  FakeHost host(FakeHost::load(env("CCM_PLUGIN_DIR") + "/fake-cloud.so"));
  REQUIRE(host.create("region: r-9\nloadBalancer: {ipPool: 198.51.100.0/24}\n").ok());
  CHECK(host.negotiatedMinor() == 1);
  CHECK(host.providerIdPrefix() == "fake://");
  CHECK(host.annotationDomain() == "fake-cloud.ccm.io");
  CHECK(host.metricNamespace() == "fakecloud");
  auto fields = host.loggedFields("fake-cloud: ready");
  REQUIRE(fields.has_value());
  CHECK(std::find(fields->begin(), fields->end(), std::pair<std::string, std::string>{
                                                      "region", "r-9"}) != fields->end());
  testing::Service svc;
  auto st = host.ensureLoadBalancer(svc, {testing::Node{"n1"}});
  REQUIRE(st.ok());
  REQUIRE(st.value().annotations.size() == 1);
  CHECK(st.value().annotations[0].first == "fake-cloud.ccm.io/load-balancer-id");
  CHECK_FALSE(st.value().annotations[0].second.empty());
  CHECK(host.metric("fakecloud_requests_total") >= 1);
}

TEST_CASE("the fake host refuses annotations outside the declared domain, as the host does") {
  FakeHost host(FakeHost::load(env("CCM_PLUGIN_DIR") + "/fake-cloud.so"));
  REQUIRE(host.create("lbAnnotations: {example.com/owner: x}\n").ok());
  auto st = host.ensureLoadBalancer(testing::Service{}, {testing::Node{"n1"}});
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code() == CCM_STATUS_INTERNAL);
  CHECK_MESSAGE(st.error().message().find("annotation \"example.com/owner\" is outside the "
                                          "provider's annotation domain fake-cloud.ccm.io") !=
                    std::string::npos,
                st.error().message());
}

TEST_CASE("a 1.0 fake host: no declarations, no annotations, fields folded into the text") {
  FakeHost host(FakeHost::load(env("CCM_PLUGIN_DIR") + "/fake-cloud.so"),
                testing::FakeHostOptions{.abi_minor = 0});
  REQUIRE(host.create("region: r-9\n").ok());
  CHECK(host.negotiatedMinor() == 0);
  CHECK(host.providerIdPrefix().empty());
  CHECK(host.annotationDomain().empty());
  auto fields = host.loggedFields("fake-cloud: ready");
  REQUIRE(fields.has_value());
  CHECK(fields->empty());
  CHECK(host.logged("fake-cloud: ready region=\"r-9\""));
  auto st = host.ensureLoadBalancer(testing::Service{}, {testing::Node{"n1"}});
  REQUIRE(st.ok());
  CHECK(st.value().annotations.empty());
  CHECK_FALSE(st.value().ingress.empty());
}
