// BuildInfo and ccm_build_info: a gauge with the constant value 1 whose labels say which ccm
// build is running (like kubernetes_build_info for Kubernetes components).
//
//   ccm_build_info{version="0.1.0",major="0",minor="1",git_commit="<40 hex digits>",
//                  provider_abi="1.1",compiler="gcc 12.2.0",platform="linux/amd64"} 1
//
// THREAD: any thread.
#pragma once

#include <string>

#include "host/runtime/metrics.hpp"

namespace ccm::server {

struct BuildInfo {
  std::string version;       // semver, "0.1.0"
  std::string git_commit;    // "" reads "unknown"
  std::string provider_abi;  // the plugin ABI this host speaks, "1.0"
  std::string compiler;      // "gcc 12.2.0"
  std::string platform;      // "linux/amd64"

  // This build's values (version and ABI from meson, compiler and platform from the
  // preprocessor).
  static BuildInfo current();
};

// Registers ccm_build_info in registry and sets it to 1 for info.
void registerBuildInfo(metrics::Registry& registry, const BuildInfo& info);

}  // namespace ccm::server
