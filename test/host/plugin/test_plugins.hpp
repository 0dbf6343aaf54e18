// Test helper: loads the plugins the host/plugin tests drive (echo.so, built beside the tests,
// and the conformance kit's), and creates providers from them the way the host does.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "test/support/wait.hpp"

namespace ccm::testing {

// The folder an environment variable names (set by meson).
inline std::string dirFromEnv(const char* variable) {
  const char* d = std::getenv(variable);
  REQUIRE_MESSAGE(d != nullptr, variable);
  return d;
}

inline std::string echoDir() {
  return dirFromEnv("CCM_ECHO_DIR");
}
inline std::string kitDir() {
  return dirFromEnv("CCM_CONFORMANCE_DIR");
}

// Creates provider `name` from dir with every capability's deadline set to timeout.
inline std::unique_ptr<plugin::AbiProvider> makeProvider(
    const std::string& dir, const std::string& name, metrics::Registry& reg,
    std::chrono::milliseconds timeout = std::chrono::seconds(5),
    std::chrono::milliseconds grace = std::chrono::milliseconds(100)) {
  plugin::LoadOptions lo;
  lo.plugin_dir = dir;
  lo.name = name;
  lo.registry = &reg;
  auto loaded = plugin::PluginLoader::load(lo);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().toString());
  plugin::ProviderOptions po;
  po.registry = &reg;
  po.instances_timeout = po.batch_timeout = po.load_balancer_timeout = po.routes_timeout = timeout;
  po.grace = grace;
  auto p = plugin::AbiProvider::create(*loaded, "", "", po);
  REQUIRE_MESSAGE(p.ok(), p.status().toString());
  return std::move(p).value();
}

}  // namespace ccm::testing
