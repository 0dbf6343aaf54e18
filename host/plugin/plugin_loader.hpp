// PluginLoader: finds <plugin-dir>/<name>.so, refuses unsafe files, loads it with Boost.DLL
// (local binding, every symbol resolved at load), checks the entry symbol and negotiates the
// ABI. Every failure is one line naming the file and the cause.
//
// A loaded library is kept for the life of the process (plugins are never unloaded) and
// loading the same file twice returns the same negotiated plugin.
//
// THREAD: main thread (lifecycle calls never overlap other calls into a plugin).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/provider_abi.h"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/status.hpp"

namespace ccm::plugin {

// A negotiated plugin library.
struct LoadedPlugin {
  std::string name;  // the provider name the plugin declared (equals the file name)
  std::string path;  // canonical path of the .so
  ccm_plugin table{};  // the plugin's table, copied (min of both sizes)
  ccm_host_handle handle = 0;
  // Declared since ABI 1.1 (empty for a 1.0 plugin or when not declared), validated at load.
  std::string provider_id_prefix;
  std::string annotation_domain;
  std::string metric_namespace;
};

struct LoadOptions {
  std::string plugin_dir;
  std::string name;
  metrics::Registry* registry = nullptr;  // where the plugin's metrics go
  const Clock* clock = nullptr;           // the plugin's clock (default: the real one)
  bool check_permissions = true;          // refuse files/directories writable by others
  // The start-up deadline of the entry point (0: none) and what interrupts the wait for it
  // (the process's stop token: SIGTERM/SIGINT). See lifecycle_call.hpp.
  std::chrono::milliseconds start_timeout{0};
  std::stop_token stop;
};

class PluginLoader {
 public:
  // Loads and negotiates. Errors: NotFound (unknown provider; lists what the directory has),
  // PermissionDenied (unsafe permissions), FailedPrecondition (not a library, no entry
  // symbol, ABI mismatch, struct too short, NULL slot, refused negotiation, a name or
  // version that is not clean printable text, a malformed 1.1 declaration: provider_id_prefix,
  // annotation_domain or metric_namespace), DeadlineExceeded (the entry point did not
  // return within start_timeout) and Cancelled (a stop was requested while it ran): after
  // those two the entry point is still running and the process should exit.
  static StatusOr<std::shared_ptr<const LoadedPlugin>> load(const LoadOptions& options);

  // Provider names (file names without .so) found in dir, sorted.
  static std::vector<std::string> available(const std::string& dir);

  // Checks that path and the directories above it cannot be changed by other users: the
  // file and its directory not group/world-writable and owned by root or us; ancestors not
  // world-writable unless sticky.
  static Status checkPermissions(const std::filesystem::path& path);
};

}  // namespace ccm::plugin
