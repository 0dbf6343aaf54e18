// HostServices: the host side of ccm_host_services — the C functions a plugin calls back
// into (logging, clocks, cancellation, metrics, secrets, and the emit_* output channels).
//
// Plugins only ever hold IDs: a ccm_host_handle per loaded plugin and a call_id per running
// call. Every service validates the ID first, so a plugin that emits after its call ended, or
// from a thread it forgot about, gets `false` and a counted contract violation instead of
// a use-after-free. Output is copied and validated at once.
//
// THREAD: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ccm/output_checks.hpp"
#include "ccm/provider_abi.h"
#include "ccm/types.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/status.hpp"

namespace ccm::plugin {

// What kind of output a call may emit (anything else is a contract violation): the SDK's, so
// that the fake host checks it the same way.
using sdk::OutputKind;

// The host's record of one call into a plugin while it runs.
struct CallState {
  uint64_t id = 0;
  ccm_host_handle handle = 0;
  int64_t deadline_ns = 0;  // on the plugin's clock (monotonic); 0 = none
  std::atomic<bool> cancelled{false};
  OutputKind output = OutputKind::None;
  size_t expected_items = 1;  // metadata indexes accepted: [0, expected_items)

  std::mutex mu;  // guards everything below
  bool has_error = false;
  std::string error_message;
  int64_t retry_after_ms = 0;
  std::vector<std::optional<sdk::InstanceMetadata>> metadata;  // by index
  std::vector<std::optional<Status>> item_errors;              // by index
  std::optional<sdk::LoadBalancerStatus> lb_status;
  std::vector<sdk::Route> routes;
  std::optional<std::string> string_value;
  std::string violation;  // first invalid output; turns the call into INTERNAL
};

// Per loaded plugin: where its logs, metrics and clock go.
struct PluginContext {
  std::string name;
  metrics::Registry* registry = nullptr;
  const Clock* clock = nullptr;
  metrics::Family<metrics::Counter>* violations = nullptr;
  // What the plugin negotiated and declared (ABI 1.1; empty for a 1.0 plugin).
  uint32_t abi_minor = 0;
  std::string provider_id_prefix;
  std::string annotation_domain;
  std::string metric_namespace;

  // A context whose metrics, contract violations included, go to registry (may be null).
  static PluginContext make(std::string name, metrics::Registry* registry, const Clock* clock);
};

class HostServices {
 public:
  // The one process-wide instance (the C table has no closure, so it must be reachable).
  static HostServices& instance();

  // The table passed to plugins at negotiation; valid for the process.
  const ccm_host_services* table() const { return &table_; }

  // Registers a loaded plugin; the handle goes into ccm_host_info.
  ccm_host_handle addPlugin(PluginContext context);
  // Updates where a plugin's logs and metrics go (the name is known only after negotiation;
  // the registry and clock belong to the provider instance using it).
  void updatePlugin(ccm_host_handle handle, PluginContext context);
  // Stops sending the plugin's metrics to registry (its owner is going away).
  void detachRegistry(ccm_host_handle handle, const metrics::Registry* registry);

  // Starts tracking a call; its id goes into ccm_call. The state stays registered until
  // endCall, after which every emit for it is refused.
  std::shared_ptr<CallState> beginCall(ccm_host_handle handle, int64_t deadline_ns,
                                       OutputKind output, size_t expected_items);
  void endCall(uint64_t call_id);

  // Marks every running call of a plugin cancelled (is_cancelled turns true).
  void cancelAll(ccm_host_handle handle);

  // Records a contract violation by a plugin (logged once per kind, counted always).
  void violation(ccm_host_handle handle, std::string_view kind, std::string_view detail);

 private:
  HostServices();

  std::shared_ptr<CallState> findCall(uint64_t call_id);
  std::string pluginName(ccm_host_handle handle);
  // A copy of the plugin's context without its registry, clock and counters (for the
  // declarations), or nullopt for an unknown handle.
  std::optional<PluginContext> declarations(ccm_host_handle handle);
  int64_t pluginNowNs(ccm_host_handle handle, bool monotonic);

  // The C entry points of the table.
  static void log(ccm_host_handle host, ccm_log_level level, ccm_str message);
  static void logFields(ccm_host_handle host, ccm_log_level level, ccm_str message,
                        const ccm_kv* fields, size_t field_count);
  static bool isCancelled(ccm_host_handle host, uint64_t call_id);
  static int64_t nowMonotonicNs(ccm_host_handle host);
  static int64_t nowUnixNs(ccm_host_handle host);
  static bool setError(ccm_host_handle host, uint64_t call_id, ccm_str message,
                       int64_t retry_after_ms);
  static void metric(ccm_host_handle host, ccm_metric_kind kind, ccm_str name, ccm_str help,
                     const ccm_kv* labels, size_t label_count, double value);
  static void registerSecret(ccm_host_handle host, ccm_str value);
  static bool emitInstanceMetadata(ccm_host_handle host, uint64_t call_id, size_t index,
                                   const ccm_instance_metadata* metadata);
  static bool emitItemError(ccm_host_handle host, uint64_t call_id, size_t index,
                            ccm_status status, ccm_str message);
  static bool emitLbStatus(ccm_host_handle host, uint64_t call_id, const ccm_lb_status* status);
  static bool emitRoute(ccm_host_handle host, uint64_t call_id, const ccm_route* route);
  static bool emitString(ccm_host_handle host, uint64_t call_id, ccm_str value);

  // Looks up a live call of this plugin expecting `kind`; records a violation otherwise.
  std::shared_ptr<CallState> callFor(ccm_host_handle host, uint64_t call_id, OutputKind kind,
                                     std::string_view service);

  ccm_host_services table_{};
  std::atomic<uint64_t> next_call_id_{1};
  std::atomic<ccm_host_handle> next_handle_{1};

  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<CallState>> calls_;  // guarded by mu_
  std::unordered_map<std::string, bool> logged_violations_;         // guarded by mu_
  // Held shared while a service uses a context's registry or clock, exclusively to change
  // one, so a registry is never used after its owner detached it.
  std::shared_mutex plugins_mu_;
  std::unordered_map<ccm_host_handle, PluginContext> plugins_;  // guarded by plugins_mu_
};

}  // namespace ccm::plugin
