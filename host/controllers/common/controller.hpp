// The controller framework: what every controller gets (ControllerContext) and how the host
// starts and stops it (Controller).
//
// The host builds one context after it wins leadership (or at start-up without leader
// election): the shared Kubernetes client, the shared node and service informers (started by
// the host, synced before controllers start), the provider, the event broadcaster, the
// metrics registry and the clock. Each controller owns its queues and worker threads.
#pragma once

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>

#include "host/kube/api/kube_api.hpp"
#include "host/kube/cache/informer.hpp"
#include "host/kube/write/event_recorder.hpp"
#include "host/options/options.hpp"
#include "host/plugin/provider.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/status.hpp"

namespace ccm::controllers {

struct ControllerContext {
  const options::Options& options;
  kube::KubeApi& api;
  kube::Informer<kube::Node>& nodes;
  kube::Informer<kube::Service>& services;
  plugin::Provider& provider;
  kube::EventBroadcaster& events;
  metrics::Registry& metrics;
  Clock& clock;
};

// How long one work item may stay in work, or ready work may wait for a worker, before a
// controller's health check fails. Provider calls are bound by deadlines of minutes at most,
// so a worker past this is stuck (or gone).
inline constexpr std::chrono::minutes kStuckAfter{10};

class Controller {
 public:
  virtual ~Controller() = default;

  // The canonical name (cloud-node-controller, ...).
  virtual std::string_view name() const = 0;
  // Starts the controller's threads; returns at once. THREAD: main.
  virtual void start() = 0;
  // Stops taking work, lets in-flight work finish (provider calls stay bound by their
  // deadlines) and joins the threads. Idempotent. THREAD: main.
  virtual void stop() = 0;
  // For /healthz/<name>: OK unless the controller's workers are stuck or gone (an item in
  // work, or ready work not taken, for longer than kStuckAfter).
  virtual Status healthy() const { return okStatus(); }
};

// Why a controller was not started (logged by the host; not an error).
struct NotStarted {
  std::string reason;
};

// What a controller factory returns: the controller, or why it is not started. A factory
// returns an error Status only for configuration the operator must fix (the host exits 1),
// e.g. an invalid --cluster-cidr.
//   StatusOr<ControllerOrSkip> makeXController(ControllerContext& context);
using ControllerOrSkip = std::variant<std::unique_ptr<Controller>, NotStarted>;

// "running_managed_controllers{name, manager}" (BETA upstream): 1 while running.
void setControllerRunning(metrics::Registry& registry, std::string_view metric_name, bool running);

}  // namespace ccm::controllers
