// PluginLoader's file checks: a plugin or plugin directory others can write is refused.
#include "host/plugin/plugin_loader.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "test/host/plugin/test_plugins.hpp"

namespace fs = std::filesystem;
using namespace ccm;
using namespace ccm::plugin;
using ccm::testing::kitDir;

TEST_CASE("loader refuses plugins others can write") {
  char tmpl[] = "/tmp/ccm-perm-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  fs::path dir(tmpl);
  fs::copy_file(fs::path(kitDir()) / "baseline.so", dir / "baseline.so");
  LoadOptions o;
  o.plugin_dir = dir.string();
  o.name = "baseline";

  ::chmod((dir / "baseline.so").c_str(), 0666);
  auto r = PluginLoader::load(o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::PermissionDenied);
  CHECK(r.status().message().find("writable by everyone (mode 0666)") != std::string::npos);

  ::chmod((dir / "baseline.so").c_str(), 0755);
  ::chmod(dir.c_str(), 0777);
  r = PluginLoader::load(o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::PermissionDenied);
  CHECK(r.status().message().find("the directory is writable by everyone") != std::string::npos);

  ::chmod(dir.c_str(), 0775);
  r = PluginLoader::load(o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("writable by its group") != std::string::npos);

  ::chmod(dir.c_str(), 0755);
  r = PluginLoader::load(o);
  CHECK_MESSAGE(r.ok(), r.status().toString());
  fs::remove_all(dir);
}
