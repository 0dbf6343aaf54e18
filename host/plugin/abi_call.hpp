// AbiCaller: the one call path into a provider plugin.
//
// Every ABI function is described once in abi_functions.hpp (its slot in the capability
// table, what it may emit, its out-parameter, how its typed result is read); AbiCaller::call
// does the rest, the same way for every function:
//   1. refuses the call when the capability is absent (UNIMPLEMENTED) or calls are cancelled;
//   2. registers the call's ID for the output sinks (HostServices::beginCall), with its
//      deadline;
//   3. copies the typed inputs into an arena the call owns (AbiInput::args, on the caller's
//      thread), so an abandoned call never reads the caller's freed memory;
//   4. runs the C function on the capability's CallRunner (slots, deadline + grace,
//      abandonment);
//   5. maps the outcome to a Status (abandoned, threw, not started, invalid output, unknown
//      status code, the plugin's message and retry-after), records metrics and logs failures;
//   6. hands what the call left (status, emitted outputs, out-parameter) to the descriptor's
//      read(), with the call's state locked.
//
// THREAD: call() and cancelAll() from any thread, concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ccm/provider_abi.h"
#include "host/plugin/abi_input.hpp"
#include "host/plugin/call_runner.hpp"
#include "host/plugin/host_services.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "host/plugin/provider.hpp"
#include "host/plugin/provider_options.hpp"
#include "host/runtime/clock.hpp"
#include "host/plugin/reconcile_metrics.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/status.hpp"

namespace ccm::plugin {

// The out-parameter type of a function that has none.
struct NoOut {};

// What a finished call left behind, as a descriptor's read() sees it.
template <typename Out>
struct Finished {
  const Status& status;       // OK, unless the descriptor reads failed calls too
  CallState* state;           // the emitted outputs, locked; null when the call never started
  const Out* out;             // the out-parameter as the plugin wrote it (null with NoOut)
  std::string_view provider;  // the provider's name, for messages
  ccm_host_handle plugin;     // the plugin, for contract violations

  void violation(std::string_view kind, std::string_view detail) const {
    HostServices::instance().violation(plugin, kind, detail);
  }
};

// One capability of a created provider, as its calls use it.
struct CallChannel {
  std::string_view id;                  // "ccm.instances/1": metrics label and messages
  CapabilityInfo declared;              // what the plugin declared (present, limits, flags)
  std::chrono::milliseconds timeout{};  // each call's deadline
  std::unique_ptr<CallRunner> runner;   // where its calls run
};

// A capability with its function table as fetched at create (zeroed when absent).
template <typename Table>
struct BoundCapability : CallChannel {
  Table table{};
};

class AbiCaller {
 public:
  AbiCaller(std::shared_ptr<const LoadedPlugin> plugin, const ProviderOptions& options);

  // Calls function F of capability cap on provider. Each typed input becomes the function's
  // next argument(s) through AbiInput::args, in order; F's out-parameter, if any, comes last.
  template <typename F, typename... In>
  typename F::Result call(const BoundCapability<typename F::Table>& cap, ccm_provider* provider,
                          const In&... in);

  // UNIMPLEMENTED, for a capability the provider does not offer.
  Status unimplemented(const CallChannel& cap) const;

  // Cancels every call in flight (is_cancelled turns true) and refuses new ones.
  void cancelAll();
  bool cancelled() const { return cancelled_; }

 private:
  struct Invocation {
    Status status;
    std::shared_ptr<CallState> state;  // the call's outputs (read after it returned)
    std::shared_ptr<AbiInput> input;   // the call's inputs and out-parameters
  };
  // Converts a call's inputs into the arena (on the caller's thread) and returns the closure
  // that makes the C call; the closure may only reference arena memory.
  using Prepare = std::function<std::function<ccm_status()>(AbiInput&, const ccm_call*)>;

  // Steps 2 to 5, alike for every function.
  Invocation invoke(const CallChannel& cap, std::string_view call_name, OutputKind output,
                    size_t items, const Prepare& prepare);
  // Step 6.
  template <typename F, typename... In>
  typename F::Result finish(Invocation& inv, const typename F::Out* out, const In&... in) const;

  std::shared_ptr<const LoadedPlugin> plugin_;
  std::chrono::milliseconds grace_;
  const Clock& clock_;
  std::atomic<bool> cancelled_{false};
  metrics::Family<metrics::Counter>* calls_total_ = nullptr;
  metrics::Family<metrics::Histogram>* call_seconds_ = nullptr;
  ReconcileMetrics reconcile_metrics_;
};

// ---- the templates ------------------------------------------------------------------------

namespace detail {
// How many nodes an input carries: a call emitting metadata accepts one item per node.
inline size_t nodeCount(const NodeRef& /*node*/) {
  return 1;
}
inline size_t nodeCount(std::span<const NodeRef> nodes) {
  return nodes.size();
}
template <typename T>
size_t nodeCount(const T& /*other*/) {
  return 0;
}
}  // namespace detail

template <typename F, typename... In>
typename F::Result AbiCaller::call(const BoundCapability<typename F::Table>& cap,
                                   ccm_provider* provider, const In&... in) {
  if (!cap.declared.present) {
    return unimplemented(cap);
  }
  using Out = typename F::Out;
  auto fn = cap.table.*F::kSlot;
  Out* out = nullptr;
  size_t items = F::kOutput == OutputKind::Metadata ? (detail::nodeCount(in) + ... + 0) : 0;
  Invocation inv =
      invoke(cap, F::kName, F::kOutput, items, [&](AbiInput& arena, const ccm_call* call) {
        auto args = std::tuple_cat(std::make_tuple(provider, call), arena.args(in)...);
        if constexpr (std::is_same_v<Out, NoOut>) {
          return std::function<ccm_status()>([fn, args] { return std::apply(fn, args); });
        } else {
          out = arena.array<Out>(1);
          auto with_out = std::tuple_cat(args, std::make_tuple(out));
          return std::function<ccm_status()>([fn, with_out] { return std::apply(fn, with_out); });
        }
      });
  return finish<F>(inv, out, in...);
}

template <typename F, typename... In>
typename F::Result AbiCaller::finish(Invocation& inv, const typename F::Out* out,
                                     const In&... in) const {
  Status status = std::move(inv.status);
  if (F::kAlsoSuccess != Code::Ok && status.code() == F::kAlsoSuccess) {
    status = okStatus();
  }
  if constexpr (std::is_same_v<typename F::Result, Status>) {
    return status;
  } else {
    if (!F::kReadsFailures && !status.ok()) {
      return status;
    }
    std::unique_lock<std::mutex> lock;
    if (inv.state) {
      lock = std::unique_lock(inv.state->mu);
    }
    Finished<typename F::Out> done{status, inv.state.get(), out, plugin_->name, plugin_->handle};
    if constexpr (requires { F::read(done, in...); }) {
      return F::read(done, in...);
    } else {
      return F::read(done);
    }
  }
}

}  // namespace ccm::plugin
