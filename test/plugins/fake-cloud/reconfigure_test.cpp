// Reconfigure (ABI 1.1) end to end inside one process: the host's ConfigReloader reads a
// changed --cloud-config file and hands it, through AbiProvider and the SDK, to the real
// fake-cloud.so; a 1.0 plugin without the slot (echo.so) is told apart.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "host/app/config_reloader.hpp"
#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "test/support/log_capture.hpp"
#include "test/support/provider_inputs.hpp"

namespace fs = std::filesystem;
using namespace ccm;
using namespace ccm::plugin;
using ccm::app::ConfigReloader;
using ccm::testing::TestNode;
using Outcome = ConfigReloader::Outcome;

namespace {

std::string envDir(const char* name) {
  const char* d = std::getenv(name);
  REQUIRE_MESSAGE(d != nullptr, name);
  return d;
}

std::unique_ptr<AbiProvider> load(const std::string& dir, const std::string& name,
                                  const std::string& config, metrics::Registry& reg) {
  LoadOptions lo;
  lo.plugin_dir = dir;
  lo.name = name;
  lo.registry = &reg;
  auto loaded = PluginLoader::load(lo);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().toString());
  ProviderOptions po;
  po.registry = &reg;
  po.reconfigure_timeout = std::chrono::seconds(30);
  auto p = AbiProvider::create(*loaded, config, "cloud.yaml", po);
  REQUIRE_MESSAGE(p.ok(), p.status().toString());
  return std::move(p).value();
}

// A folder laid out as the kubelet lays out a mounted Secret: cloud.yaml -> ..data/cloud.yaml,
// ..data -> a versioned folder, swapped atomically by renaming a new ..data symlink over it.
struct SecretVolume {
  fs::path dir;
  int version = 0;
  SecretVolume() {
    char tmpl[] = "/tmp/ccm-reconfigure-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
  }
  ~SecretVolume() { fs::remove_all(dir); }
  SecretVolume(const SecretVolume&) = delete;
  SecretVolume& operator=(const SecretVolume&) = delete;

  std::string path() const { return (dir / "cloud.yaml").string(); }

  void publish(const std::string& text) {
    std::string name = "..v" + std::to_string(++version);
    fs::create_directory(dir / name);
    std::ofstream(dir / name / "cloud.yaml") << text;
    fs::create_directory_symlink(name, dir / "..data_tmp");
    fs::rename(dir / "..data_tmp", dir / "..data");
    if (!fs::is_symlink(dir / "cloud.yaml")) {
      fs::create_symlink("..data/cloud.yaml", dir / "cloud.yaml");
    }
  }
};

std::string regionOf(AbiProvider& p, const std::string& node) {
  TestNode n(node);
  auto md = p.instanceMetadata(n.ref());
  REQUIRE_MESSAGE(md.ok(), md.status().toString());
  REQUIRE(md->has_value());
  return (*md)->region;
}

}  // namespace

TEST_CASE("a changed cloud config reaches fake-cloud; a broken one is refused and the old stays") {
  ccm::testing::LogCapture logs;
  metrics::Registry reg;
  SecretVolume secret;
  const std::string first = "region: r1\nautoInstances: {zones: [z1]}\n";
  secret.publish(first);
  auto p = load(envDir("CCM_PLUGIN_DIR"), "fake-cloud", first, reg);
  ConfigReloader reloader(*p, secret.path(), first, &reg);

  CHECK(reloader.checkNow() == Outcome::Unchanged);
  CHECK(regionOf(*p, "node-1") == "r1");

  secret.publish("region: r2\nautoInstances: {zones: [z1]}\n");
  CHECK(reloader.checkNow() == Outcome::Applied);
  CHECK(regionOf(*p, "node-1") == "r2");
  CHECK(reg.valueForTest("ccm_provider_reconfigure_total", {"fake-cloud", "ok"}) == 1);
  CHECK(logs.count("Provider reconfigured from the changed cloud config") == 1);
  CHECK(reloader.checkNow() == Outcome::Unchanged);

  // A typo: refused with the key named, the running settings keep working.
  secret.publish("regoin: r3\nautoInstances: {zones: [z1]}\n");
  CHECK(reloader.checkNow() == Outcome::Refused);
  CHECK(regionOf(*p, "node-1") == "r2");
  CHECK(reg.valueForTest("ccm_provider_reconfigure_total", {"fake-cloud", "refused"}) == 1);
  CHECK(logs.count("Provider refused the changed cloud config") == 1);
  CHECK(logs.get().find("regoin") != std::string::npos);
  // Not offered again until the file changes.
  CHECK(reloader.checkNow() == Outcome::Unchanged);
  CHECK(reg.valueForTest("ccm_provider_reconfigure_total", {"fake-cloud", "refused"}) == 1);

  // A setting fixed at creation: refused, naming it.
  secret.publish("region: r4\nmaxConcurrency: 3\nautoInstances: {zones: [z1]}\n");
  CHECK(reloader.checkNow() == Outcome::Refused);
  CHECK(logs.get().find("maxConcurrency: cannot change while the provider runs") !=
        std::string::npos);
  CHECK(regionOf(*p, "node-1") == "r2");

  // Fixed again: applied.
  secret.publish("region: r5\nautoInstances: {zones: [z1]}\n");
  CHECK(reloader.checkNow() == Outcome::Applied);
  CHECK(regionOf(*p, "node-1") == "r5");
  CHECK(reg.valueForTest("ccm_provider_reconfigure_total", {"fake-cloud", "ok"}) == 2);

  // The file disappearing (a volume unmounted) is only a warning; the provider is untouched.
  fs::remove(secret.dir / "cloud.yaml");
  CHECK(reloader.checkNow() == Outcome::Unreadable);
  CHECK(reloader.checkNow() == Outcome::Unreadable);
  CHECK(logs.count("Cannot read --cloud-config") == 1);
  CHECK(regionOf(*p, "node-1") == "r5");
}

TEST_CASE("a plugin without the reconfigure slot: the change waits for a restart, said once") {
  ccm::testing::LogCapture logs;
  metrics::Registry reg;
  SecretVolume secret;
  secret.publish("one");
  auto p = load(envDir("CCM_ECHO_DIR"), "echo", "one", reg);
  REQUIRE(p->info().abi_minor == 0);
  CHECK(p->reconfigure("two").code() == Code::Unimplemented);
  ConfigReloader reloader(*p, secret.path(), "one", &reg);
  secret.publish("two");
  CHECK(reloader.checkNow() == Outcome::Unsupported);
  secret.publish("three");
  CHECK(reloader.checkNow() == Outcome::Unsupported);
  CHECK(reg.valueForTest("ccm_provider_reconfigure_total", {"echo", "unsupported"}) == 2);
  CHECK(logs.count("the change takes effect at the next restart") == 1);
}

TEST_CASE("the reloader's own thread picks up a change") {
  metrics::Registry reg;
  SecretVolume secret;
  const std::string first = "region: t1\nautoInstances: {zones: [z1]}\n";
  secret.publish(first);
  auto p = load(envDir("CCM_PLUGIN_DIR"), "fake-cloud", first, reg);
  {
    ConfigReloader reloader(*p, secret.path(), first, &reg);
    reloader.start(std::chrono::milliseconds(20));
    secret.publish("region: t2\nautoInstances: {zones: [z1]}\n");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (regionOf(*p, "node-1") != "t2" && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(regionOf(*p, "node-1") == "t2");
  }  // stops the thread before the provider goes
}

TEST_CASE("a reconfigure that leaves the cloud as it was does not restart counted faults") {
  metrics::Registry reg;
  const std::string config =
      "autoInstances: {zones: [z1]}\nfaults: [{op: exists, code: UNAVAILABLE, count: 1}]\n";
  auto p = load(envDir("CCM_PLUGIN_DIR"), "fake-cloud", config, reg);
  TestNode n("node-1");
  CHECK(p->instanceExists(n.ref()).status().code() == Code::Unavailable);
  CHECK(p->instanceExists(n.ref()).ok());
  // Other bytes (a comment), the same cloud: the spent fault stays spent.
  REQUIRE(p->reconfigure("# rotated\n" + config).ok());
  CHECK(p->instanceExists(n.ref()).ok());
  // A real change of the faults starts them again.
  REQUIRE(p->reconfigure(config + "region: other\n").ok());
  CHECK(p->instanceExists(n.ref()).status().code() == Code::Unavailable);
}
