// AbiCaller implementation: the part of the call path that is alike for every ABI function —
// deadline, call ID, runner, outcome-to-Status mapping, metrics and logging.
#include "host/plugin/abi_call.hpp"

#include <fmt/format.h>

#include "host/log/log.hpp"
#include "host/plugin/crash_report.hpp"

namespace ccm::plugin {
namespace {

std::chrono::milliseconds toMs(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

}  // namespace

AbiCaller::AbiCaller(std::shared_ptr<const LoadedPlugin> plugin, const ProviderOptions& options)
    : plugin_(std::move(plugin)),
      grace_(options.grace),
      clock_(options.clock != nullptr ? *options.clock : Clock::real()),
      reconcile_metrics_(options.registry, plugin_->metric_namespace) {
  if (options.registry != nullptr) {
    calls_total_ =
        options.registry->counter("ccm_provider_calls_total",
                                  "Calls into the provider plugin, by provider, capability, call "
                                  "and result.",
                                  {"provider", "capability", "call", "code"});
    call_seconds_ = options.registry->histogram(
        "ccm_provider_call_duration_seconds", "Latency of calls into the provider plugin.",
        metrics::exponentialBuckets(0.001, 2, 16), {"provider", "capability", "call"});
  }
}

Status AbiCaller::unimplemented(const CallChannel& cap) const {
  return Status(Code::Unimplemented,
                fmt::format("provider {} does not implement {}", plugin_->name, cap.id));
}

void AbiCaller::cancelAll() {
  cancelled_ = true;
  HostServices::instance().cancelAll(plugin_->handle);
}

AbiCaller::Invocation AbiCaller::invoke(const CallChannel& cap, std::string_view call_name,
                                        OutputKind output, size_t items, const Prepare& prepare) {
  Invocation inv;
  if (cancelled_) {
    inv.status = Status(Code::Cancelled, "the host is shutting down or lost leadership");
    return inv;
  }
  const std::chrono::milliseconds timeout = cap.timeout;
  HostServices& services = HostServices::instance();
  int64_t deadline_ns = clock_.nowMonotonicNs() +
                        std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  inv.input = std::make_shared<AbiInput>(cap.declared.wants_object_json);
  inv.state = services.beginCall(plugin_->handle, deadline_ns, output, items);
  auto* call = inv.input->array<ccm_call>(1);
  *call = ccm_call{sizeof(ccm_call), inv.state->id, deadline_ns};
  // Inputs are converted here, on the caller's thread, into memory the task owns.
  std::function<ccm_status()> fn = prepare(*inv.input, call);
  auto started = std::chrono::steady_clock::now();
  std::shared_ptr<CallState> state = inv.state;
  uint64_t call_id = state->id;
  CallOutcome outcome = cap.runner->run(
      started + timeout,
      // The crash line names this call while it runs: the names live as long as the plugin
      // (capability IDs and call names are static; the LoadedPlugin is held here).
      [input = inv.input, fn = std::move(fn), plugin = plugin_, id = cap.id, call_name] {
        PluginCallScope scope(plugin->name, id, call_name);
        return fn();
      },
      [&services, state, call_id] {
        state->cancelled = true;
        services.endCall(call_id);
      });
  if (!outcome.abandoned) {
    services.endCall(call_id);
  }
  std::string label = fmt::format("{}.{}", cap.id, call_name);
  if (outcome.abandoned) {
    services.violation(plugin_->handle, "ignored_deadline",
                       fmt::format("{} did not return within {}ms plus {}ms grace", label,
                                   timeout.count(), grace_.count()));
    inv.status = Status(Code::DeadlineExceeded,
                        fmt::format("provider call {} did not return within its {}s deadline; "
                                    "abandoned",
                                    label, static_cast<double>(timeout.count()) / 1000.0));
  } else if (outcome.threw) {
    services.violation(plugin_->handle, "exception",
                       fmt::format("{} threw across the ABI: {}", label, outcome.exception));
    inv.status = Status(Code::Internal,
                        fmt::format("provider call {} threw an exception across the plugin ABI: "
                                    "{}",
                                    label, outcome.exception));
  } else if (outcome.status == CCM_STATUS_DEADLINE_EXCEEDED && !outcome.exception.empty()) {
    inv.status = Status(Code::DeadlineExceeded,
                        fmt::format("provider call {} not started: {}", label, outcome.exception));
  } else {
    std::lock_guard lock(state->mu);
    if (!state->violation.empty()) {
      services.violation(plugin_->handle, "invalid_output",
                         fmt::format("{}: {}", label, state->violation));
      inv.status = Status(Code::Internal, fmt::format("provider call {} returned invalid output: "
                                                      "{}",
                                                      label, state->violation));
    } else if (outcome.status != CCM_STATUS_OK) {
      Code code = codeFromInt(outcome.status);
      std::string message = state->error_message;
      if (code == Code::Internal && outcome.status != CCM_STATUS_INTERNAL) {
        services.violation(plugin_->handle, "unknown_status",
                           fmt::format("{} returned status code {}", label, outcome.status));
        message = fmt::format("unknown status code {}{}{}", outcome.status,
                              message.empty() ? "" : ": ", message);
      }
      if (message.empty()) {
        message = fmt::format("{} failed", label);
      }
      inv.status = Status(code, message, std::chrono::milliseconds(state->retry_after_ms));
    }
  }
  auto elapsed = std::chrono::steady_clock::now() - started;
  if (calls_total_ != nullptr) {
    calls_total_
        ->labels(
            {plugin_->name, std::string(cap.id), std::string(call_name),
             std::string(codeName(inv.status.code()))})
        .inc();
  }
  if (call_seconds_ != nullptr) {
    call_seconds_->labels({plugin_->name, std::string(cap.id), std::string(call_name)})
        .observe(std::chrono::duration<double>(elapsed).count());
  }
  reconcile_metrics_.record(call_name, inv.status, std::chrono::duration<double>(elapsed).count());
  if (!inv.status.ok()) {
    log::infoV(4, "Provider call failed",
               {{"call", label}, {"error", inv.status.toString()}, {"elapsed", toMs(elapsed)}});
  }
  return inv;
}

}  // namespace ccm::plugin
