// The SDK's reconfigure support from a provider author's side: the fake host hands new config
// bytes to a provider that derives from sdk::Reconfigurable (fake-cloud), and reports a
// plugin without the slot (the minimal C example) as unimplemented.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "ccm/testing/fake_host.hpp"

using namespace ccm::sdk;
using ccm::sdk::testing::FakeHost;

namespace {
std::string dirOf(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE(v != nullptr);
  return v;
}
}  // namespace

TEST_CASE("fake host reconfigures fake-cloud; a refused config leaves the old one in use") {
  FakeHost host(FakeHost::load(dirOf("CCM_PLUGIN_DIR") + "/fake-cloud.so"));
  CHECK(host.reconfigure("region: r0\n").error().code() == CCM_STATUS_FAILED_PRECONDITION);
  REQUIRE(host.create("region: r1\nautoInstances: {zones: [z]}\n").ok());
  REQUIRE((host.plugin().reconfigure != nullptr));
  testing::Node n{"node-1"};
  CHECK(host.instanceMetadata(n).value()->region == "r1");

  REQUIRE(host.reconfigure("region: r2\nautoInstances: {zones: [z]}\n").ok());
  CHECK(host.instanceMetadata(n).value()->region == "r2");
  CHECK(host.logged("fake-cloud: reconfigured (region r2"));

  Status bad = host.reconfigure("region: r3\nautoInstances: {zones: [z]}\nstateFile: /x\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code() == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(bad.error().message().find("stateFile: cannot change while the provider runs") !=
        std::string::npos);
  CHECK(host.instanceMetadata(n).value()->region == "r2");
}

TEST_CASE("fake host: a plugin without the reconfigure slot answers unimplemented") {
  FakeHost host(FakeHost::load(dirOf("CCM_EXAMPLE_DIR") + "/minimal.so"));
  REQUIRE(host.create("node-a zone-1 small 10.10.0.1\n").ok());
  CHECK((host.plugin().reconfigure == nullptr));
  CHECK(host.reconfigure("node-b zone-2 small 10.10.0.2\n").error().code() ==
        CCM_STATUS_UNIMPLEMENTED);
}
