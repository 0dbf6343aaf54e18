// ControllerManager: everything that runs while this process leads — the shared node and
// service informers and the enabled controllers — started in order and stopped in reverse.
//
// THREAD: start() on the main thread; stop() from any thread (it interrupts a start() that
// is still waiting for the caches) and is idempotent.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "host/controllers/common/controller.hpp"
#include "host/kube/cache/informer.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "host/kube/write/event_recorder.hpp"
#include "host/server/health_checks.hpp"

namespace ccm::app {

class ControllerManager {
 public:
  ControllerManager(const options::Options& options, kube::KubeClient& client,
                    plugin::Provider& provider, kube::EventBroadcaster& events,
                    metrics::Registry& metrics, Clock& clock);
  ~ControllerManager();

  // Starts the informers, waits for them to sync, then creates and starts every controller
  // --controllers enables. Returns an error only for configuration the operator must fix
  // (the process exits 1); CANCELLED when stop() came first.
  Status start();
  void stop();

  // Names of the controllers running (for logs and tests).
  std::vector<std::string> running() const;
  // Where start() adds one health check per started controller, named by its canonical name
  // (under /healthz and /readyz; it fails when the controller's workers are stuck or gone);
  // stop() removes them. Call before start(); the checks must outlive neither.
  void setHealthChecks(server::HealthChecks* health) { health_ = health; }
  // Told every node deletion the node informer sees (name, uid), on the informer's thread;
  // set before start. With several providers the app prunes the routing memory with it.
  using NodeDeleted = std::function<void(std::string_view name, std::string_view uid)>;
  void setNodeDeleted(NodeDeleted hook) { node_deleted_ = std::move(hook); }

 private:
  const options::Options& options_;
  kube::KubeClient& client_;
  plugin::Provider& provider_;
  kube::EventBroadcaster& events_;
  metrics::Registry& metrics_;
  Clock& clock_;

  // What a controller's health check reads; emptied (under its own lock) before the
  // controller stops, so a check running meanwhile never touches a stopped controller.
  struct HealthSlot {
    std::mutex mu;
    const controllers::Controller* controller = nullptr;  // guarded by mu
  };
  void addHealthCheckLocked(const controllers::Controller& controller);

  server::HealthChecks* health_ = nullptr;
  NodeDeleted node_deleted_;
  std::stop_source term_;
  mutable std::mutex mu_;
  bool stopped_ = false;                                               // guarded by mu_
  std::unique_ptr<kube::NodeInformer> nodes_;                          // guarded by mu_
  std::unique_ptr<kube::ServiceInformer> services_;                    // guarded by mu_
  std::unique_ptr<controllers::ControllerContext> context_;            // guarded by mu_
  std::vector<std::unique_ptr<controllers::Controller>> controllers_;  // guarded by mu_
  std::vector<std::pair<std::string, std::shared_ptr<HealthSlot>>> health_slots_;  // mu_
};

}  // namespace ccm::app
