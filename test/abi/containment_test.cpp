// The conformance kit, part two: plugins that hang in their lifecycle calls, declare nothing,
// carry a dirty version string or hand back inconsistent pointer/length pairs. Each must get
// a one-line reason naming the field or the call; none may hang or crash the host. (Crashes
// inside calls kill the process by design: test/cli/containment_test.py runs those through
// the binary.)
#include <doctest/doctest.h>

#include <chrono>
#include <stop_token>
#include <thread>

#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "test/host/plugin/test_plugins.hpp"
#include "test/support/provider_inputs.hpp"

using namespace ccm;
using namespace ccm::plugin;
using namespace ccm::testing;

namespace {

LoadOptions kit(const std::string& name) {
  LoadOptions o;
  o.plugin_dir = kitDir();
  o.name = name;
  return o;
}

void expectOneLine(const Status& s, Code code, const std::string& fragment) {
  CHECK(s.code() == code);
  CHECK_MESSAGE(s.message().find(fragment) != std::string::npos, s.message());
  CHECK_MESSAGE(s.message().find('\n') == std::string::npos, s.message());
}

// Requests stop from another thread; the wait it interrupts has no other way out (its
// deadline is far away and the plugin never returns), so the outcome does not depend on
// when the request lands.
class StopSoon {
 public:
  explicit StopSoon(std::stop_source& stop)
      : thread_([&stop] {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          stop.request_stop();
        }) {}

 private:
  std::jthread thread_;
};

}  // namespace

TEST_CASE("an entry point that never returns is given up on at the start-up deadline") {
  LoadOptions o = kit("hangs-in-entry");
  o.start_timeout = std::chrono::milliseconds(200);
  auto r = PluginLoader::load(o);
  REQUIRE_FALSE(r.ok());
  expectOneLine(r.status(), Code::DeadlineExceeded,
                "ccm_provider_entry_v1 did not return within the start-up deadline of 200ms "
                "(--provider-start-timeout)");
  CHECK(r.status().message().find("hangs-in-entry.so") != std::string::npos);
}

TEST_CASE("a stop request ends the wait for a hung entry point") {
  std::stop_source stop;
  LoadOptions o = kit("hangs-in-entry");
  o.start_timeout = std::chrono::minutes(10);
  o.stop = stop.get_token();
  StopSoon soon(stop);
  auto r = PluginLoader::load(o);
  REQUIRE_FALSE(r.ok());
  expectOneLine(r.status(), Code::Cancelled,
                "interrupted by a signal while in ccm_provider_entry_v1");
}

TEST_CASE("a create that never returns is given up on, or interrupted") {
  auto loaded = PluginLoader::load(kit("hangs-in-create"));
  REQUIRE(loaded.ok());
  ProviderOptions po;
  po.start_timeout = std::chrono::milliseconds(200);
  auto p = AbiProvider::create(*loaded, "", "", po);
  REQUIRE_FALSE(p.ok());
  expectOneLine(p.status(), Code::DeadlineExceeded,
                "provider hangs-in-create: create did not return within the start-up deadline "
                "of 200ms (--provider-start-timeout)");

  std::stop_source stop;
  po.start_timeout = std::chrono::minutes(10);
  po.stop = stop.get_token();
  StopSoon soon(stop);
  p = AbiProvider::create(*loaded, "", "", po);
  REQUIRE_FALSE(p.ok());
  expectOneLine(p.status(), Code::Cancelled,
                "provider hangs-in-create: interrupted by a signal while in create");
}

TEST_CASE("a plugin is refused for a version that is not clean printable text") {
  auto r = PluginLoader::load(kit("bad-version"));
  REQUIRE_FALSE(r.ok());
  // Shown escaped: the escape sequence and the newline never reach the terminal.
  expectOneLine(r.status(), Code::FailedPrecondition,
                "its version \"1.0\\x1b[2J\\n\" has a control character at byte 3");
  CHECK(r.status().message().find('\x1b') == std::string::npos);

  r = PluginLoader::load(kit("long-version"));
  REQUIRE_FALSE(r.ok());
  expectOneLine(r.status(), Code::FailedPrecondition,
                "its version is 1048576 bytes long (at most 64)");
  CHECK(r.status().message().size() < 400);
}

TEST_CASE("a plugin that provides no capability is refused at create") {
  auto loaded = PluginLoader::load(kit("no-capability"));
  REQUIRE(loaded.ok());
  auto p = AbiProvider::create(*loaded, "", "", ProviderOptions{});
  REQUIRE_FALSE(p.ok());
  expectOneLine(p.status(), Code::FailedPrecondition,
                "provider no-capability provides no capability: get_capability returned NULL "
                "for each of ccm.instances/1, ccm.instances.batch/1, ccm.loadbalancer/1 and "
                "ccm.routes/1");
}

TEST_CASE("inconsistent pointer/length pairs are invalid output, never read as empty") {
  metrics::Registry reg;
  TestNode n{"node-a"};
  TestService svc;

  auto data = makeProvider(kitDir(), "null-data", reg);
  auto md = data->instanceMetadata(n.ref());
  expectOneLine(md.status(), Code::Internal, "provider_id has data NULL with size 12");
  auto name = data->getLoadBalancerName("kubernetes", svc.ref());
  expectOneLine(name.status(), Code::Internal, "value has data NULL with size 5");
  auto st = data->ensureLoadBalancer("kubernetes", svc.ref(), {});
  expectOneLine(st.status(), Code::Internal, "ingress is NULL with ingress_count 1");

  auto arrays = makeProvider(kitDir(), "null-arrays", reg);
  md = arrays->instanceMetadata(n.ref());
  expectOneLine(md.status(), Code::Internal, "addresses is NULL with address_count 3");
  st = arrays->ensureLoadBalancer("kubernetes", svc.ref(), {});
  expectOneLine(st.status(), Code::Internal, "ingress[0].ports is NULL with port_count 2");
  CHECK(reg.valueForTest("ccm_provider_contract_violations_total", {"null-arrays", "invalid_output"}) >= 1);
}
