// ControllerManager implementation.
#include "host/app/controller_manager.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <functional>
#include <random>

#include "host/controllers/registry.hpp"
#include "host/log/log.hpp"
#include "host/runtime/memory.hpp"

namespace ccm::app {

ControllerManager::ControllerManager(const options::Options& options, kube::KubeClient& client,
                                     plugin::Provider& provider, kube::EventBroadcaster& events,
                                     metrics::Registry& metrics, Clock& clock)
    : options_(options),
      client_(client),
      provider_(provider),
      events_(events),
      metrics_(metrics),
      clock_(clock) {}

ControllerManager::~ControllerManager() {
  stop();
}

Status ControllerManager::start() {
  kube::NodeInformer* nodes = nullptr;
  kube::ServiceInformer* services = nullptr;
  {
    std::lock_guard lock(mu_);
    if (stopped_) {
      return Status(Code::Cancelled, "stopping");
    }
    kube::InformerOptions informer_options;
    informer_options.metrics = &metrics_;
    nodes_ = std::make_unique<kube::NodeInformer>(&client_, informer_options);
    // A Service's JSON goes only to load-balancer calls (ccm_service.object_json, set on
    // every call since ABI 1.0): without the capability nothing reads it.
    informer_options.keep_object_json = provider_.info().load_balancer.present;
    services_ = std::make_unique<kube::ServiceInformer>(&client_, informer_options);
    nodes = nodes_.get();
    services = services_.get();
    if (node_deleted_) {
      kube::EventHandlers<kube::Node> handlers;
      handlers.on_delete = [hook = node_deleted_](const std::shared_ptr<const kube::Node>& last,
                                                  bool) { hook(last->name(), last->uid()); };
      nodes->addEventHandler(std::move(handlers));
    }
    nodes->start();
    services->start();
  }
  log::info("Waiting for the node and service caches to sync");
  auto started = std::chrono::steady_clock::now();
  if (!kube::waitForCacheSync(term_.get_token(), {nodes, services})) {
    return Status(Code::Cancelled, "stopped before the caches synced");
  }
  // The first lists' pages and decode buffers are freed now; do not keep them resident.
  runtime::releaseFreeMemory();
  log::info("Caches synced", {{"nodes", nodes->size()},
                              {"services", services->size()},
                              {"took", std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - started)}});

  std::lock_guard lock(mu_);
  if (stopped_) {
    return Status(Code::Cancelled, "stopping");
  }
  context_ = std::make_unique<controllers::ControllerContext>(controllers::ControllerContext{
      options_, client_, *nodes_, *services_, provider_, events_, metrics_, clock_});
  for (const controllers::Registration& f : controllers::registry()) {
    if (!controllers::controllerEnabled(options_.controllers, f.name)) {
      log::info("Controller is disabled by --controllers", {{"controller", f.name}});
      continue;
    }
    auto made = f.make(*context_);
    if (!made.ok()) {
      return made.status().withPrefix(fmt::format("cannot start {}", f.name));
    }
    if (auto* skip = std::get_if<controllers::NotStarted>(&*made)) {
      log::warning("Skipping controller", {{"controller", f.name}, {"reason", skip->reason}});
      continue;
    }
    auto& controller = std::get<std::unique_ptr<controllers::Controller>>(*made);
    controller->start();
    addHealthCheckLocked(*controller);
    log::info("Started controller", {{"controller", f.name}});
    controllers_.push_back(std::move(controller));
    if (options_.controller_start_interval.count() > 0) {
      // Upstream waits jitter(interval, 1.0) between controllers: [interval, 2*interval).
      static thread_local std::mt19937_64 rng{std::random_device{}()};
      auto wait = options_.controller_start_interval +
                  std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(
                      0, options_.controller_start_interval.count())(rng));
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock l(m);
      cv.wait_for(l, term_.get_token(), wait, [] { return false; });
      if (term_.stop_requested()) {
        break;
      }
    }
  }
  return okStatus();
}

void ControllerManager::stop() {
  term_.request_stop();
  std::lock_guard lock(mu_);
  if (stopped_) {
    return;
  }
  stopped_ = true;
  // Provider calls in flight see is_cancelled and return; new ones fail fast.
  provider_.cancelAll();
  for (auto& [name, slot] : health_slots_) {
    health_->remove(name);
    std::lock_guard slot_lock(slot->mu);
    slot->controller = nullptr;
  }
  health_slots_.clear();
  // Informers first: no handler may run into a controller being torn down.
  if (nodes_) {
    nodes_->stop();
  }
  if (services_) {
    services_->stop();
  }
  for (auto it = controllers_.rbegin(); it != controllers_.rend(); ++it) {
    (*it)->stop();
  }
  controllers_.clear();
  context_.reset();
}

std::vector<std::string> ControllerManager::running() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& c : controllers_) {
    out.emplace_back(c->name());
  }
  return out;
}

void ControllerManager::addHealthCheckLocked(const controllers::Controller& controller) {
  if (health_ == nullptr) {
    return;
  }
  auto slot = std::make_shared<HealthSlot>();
  slot->controller = &controller;
  std::string name(controller.name());
  Status added = health_->add(
      name,
      [slot] {
        std::lock_guard lock(slot->mu);
        return slot->controller == nullptr ? okStatus() : slot->controller->healthy();
      },
      server::Probes::readiness());
  if (!added.ok()) {
    log::warning("Cannot add the controller's health check", {{"err", added.message()}});
    return;
  }
  health_slots_.emplace_back(std::move(name), std::move(slot));
}

}  // namespace ccm::app
