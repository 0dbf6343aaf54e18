// AbiProvider::reconfigure: hands new --cloud-config bytes to the plugin's ABI 1.1 reconfigure
// slot. The call runs on a runner of its own (one slot), so it has a deadline like every other
// call and a plugin that hangs in it is given up on without blocking the caller for ever; the
// bytes and the ccm_call live in memory the task owns, so an abandoned call never reads freed
// memory. reconfigure_mu_ keeps two reconfigures from ever overlapping.
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>

#include "host/plugin/abi_provider.hpp"
#include "host/plugin/crash_report.hpp"
#include "host/plugin/host_services.hpp"

namespace ccm::plugin {

Status AbiProvider::reconfigure(std::string_view config) {
  std::lock_guard lock(reconfigure_mu_);
  const ccm_plugin& table = plugin_->table;
  // A 1.0 plugin's table is copied short, so the slot reads NULL; the minor is checked too
  // so that a table that speaks 1.0 but is laid out longer is never called past its minor.
  if (table.abi_minor < 1 || table.reconfigure == nullptr) {
    return Status(Code::Unimplemented,
                  fmt::format("provider {} (ABI {}.{}) cannot apply a new configuration while "
                              "running",
                              plugin_->name, table.abi_major, table.abi_minor));
  }
  if (reconfigure_runner_ == nullptr) {
    reconfigure_runner_ =
        std::make_unique<CallRunner>("reconfigure", 1, options_.grace, options_.registry,
                                     info_.name);
  }
  if (reconfigure_runner_->abandonedInFlight() > 0) {
    return Status(Code::FailedPrecondition,
                  fmt::format("provider {}: an earlier reconfigure was given up on and has not "
                              "returned yet",
                              plugin_->name));
  }
  const Clock& clock = options_.clock != nullptr ? *options_.clock : Clock::real();
  const std::chrono::milliseconds timeout = options_.reconfigure_timeout;
  int64_t deadline_ns = clock.nowMonotonicNs() +
                        std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  HostServices& services = HostServices::instance();
  std::shared_ptr<CallState> state =
      services.beginCall(plugin_->handle, deadline_ns, OutputKind::None, 0);
  struct Input {
    std::string config;
    ccm_call call{};
  };
  auto input = std::make_shared<Input>();
  input->config.assign(config);
  input->call = ccm_call{sizeof(ccm_call), state->id, deadline_ns};
  auto fn = table.reconfigure;
  ccm_provider* provider = provider_;
  uint64_t call_id = state->id;
  CallOutcome outcome = reconfigure_runner_->run(
      std::chrono::steady_clock::now() + timeout,
      [input, fn, provider, plugin = plugin_] {
        PluginCallScope scope(plugin->name, "", "reconfigure");
        return fn(provider, &input->call, sdk::str(input->config));
      },
      [&services, state, call_id] {
        state->cancelled = true;
        services.endCall(call_id);
      });
  if (!outcome.abandoned) {
    services.endCall(call_id);
  }
  if (outcome.abandoned) {
    services.violation(plugin_->handle, "ignored_deadline",
                       fmt::format("reconfigure did not return within {}ms plus {}ms grace",
                                   timeout.count(), options_.grace.count()));
    return Status(Code::DeadlineExceeded,
                  fmt::format("provider {}: reconfigure did not return within its {}s deadline; "
                              "abandoned",
                              plugin_->name, static_cast<double>(timeout.count()) / 1000.0));
  }
  if (outcome.threw) {
    services.violation(plugin_->handle, "exception",
                       fmt::format("reconfigure threw across the ABI: {}", outcome.exception));
    return Status(Code::Internal,
                  fmt::format("provider {}: reconfigure threw an exception across the plugin "
                              "ABI: {}",
                              plugin_->name, outcome.exception));
  }
  if (outcome.status == CCM_STATUS_OK) {
    return okStatus();
  }
  std::string message;
  {
    std::lock_guard state_lock(state->mu);
    message = state->error_message;
  }
  if (outcome.status == CCM_STATUS_DEADLINE_EXCEEDED && !outcome.exception.empty()) {
    message = fmt::format("reconfigure not started: {}", outcome.exception);
  }
  Code code = codeFromInt(outcome.status);
  if (message.empty()) {
    message = fmt::format("reconfigure failed with {}", codeName(code));
  }
  return Status(code, message);
}

}  // namespace ccm::plugin
