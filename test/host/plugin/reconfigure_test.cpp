// The host's reconfigure call path (AbiProvider::reconfigure): the plugin's message on a
// refusal, a call held past its deadline given up on, and no second reconfigure while the
// abandoned one has not returned.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "test/host/plugin/test_plugins.hpp"

using namespace ccm;
using namespace ccm::plugin;

TEST_CASE("reconfigure: refusal message, deadline, and never two at once") {
  metrics::Registry reg;
  LoadOptions lo;
  lo.plugin_dir = ccm::testing::echoDir();
  lo.name = "reconfigurable";
  lo.registry = &reg;
  auto loaded = PluginLoader::load(lo);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().toString());
  ProviderOptions po;
  po.registry = &reg;
  po.reconfigure_timeout = std::chrono::milliseconds(100);
  po.grace = std::chrono::milliseconds(100);
  auto created = AbiProvider::create(*loaded, "", "", po);
  REQUIRE_MESSAGE(created.ok(), created.status().toString());
  AbiProvider& p = **created;

  CHECK(p.reconfigure("new settings").ok());
  Status refused = p.reconfigure("refuse [Global] password: empty");
  CHECK(refused.code() == Code::InvalidArgument);
  CHECK(refused.message() == "[Global] password: empty");

  char tmpl[] = "/tmp/ccm-reconf-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  std::filesystem::path go = std::filesystem::path(tmpl) / "go";
  Status late = p.reconfigure("wait " + go.string());
  CHECK(late.code() == Code::DeadlineExceeded);
  // The abandoned call has not returned (it waits for `go`): no second reconfigure.
  Status busy = p.reconfigure("after");
  CHECK(busy.code() == Code::FailedPrecondition);
  CHECK(busy.message().find("has not returned yet") != std::string::npos);
  std::ofstream(go.string()) << "";
  // Once it returned, reconfigure works again (bounded wait: the plugin polls every 10 ms).
  Status again = busy;
  for (int i = 0; i < 3000 && !again.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    again = p.reconfigure("after");
  }
  CHECK(again.ok());
  std::filesystem::remove_all(tmpl);
}
