// ProviderOptions: how the host calls a provider plugin — the deadline of each capability's
// calls, the grace before a late call is abandoned, the concurrency when the plugin declares
// none, and where metrics and time come from.
#pragma once

#include <chrono>
#include <cstdint>
#include <stop_token>

#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"

namespace ccm::plugin {

struct ProviderOptions {
  // How long one provider call may take (per capability).
  std::chrono::milliseconds instances_timeout{30000};
  std::chrono::milliseconds batch_timeout{60000};
  std::chrono::milliseconds load_balancer_timeout{120000};
  std::chrono::milliseconds routes_timeout{60000};
  // How long a reconfigure (new --cloud-config bytes) may take.
  std::chrono::milliseconds reconfigure_timeout{60000};
  // How long past its deadline a call may still finish before it is abandoned.
  std::chrono::milliseconds grace{1000};
  // Concurrency when the plugin declares no limit.
  uint32_t default_concurrency = 256;
  metrics::Registry* registry = nullptr;
  const Clock* clock = nullptr;  // the real clock when null
  // The start-up deadline of create (0: none) and what interrupts the wait for it (the
  // process's stop token: SIGTERM/SIGINT). See lifecycle_call.hpp.
  std::chrono::milliseconds start_timeout{0};
  std::stop_token stop;
};

}  // namespace ccm::plugin
