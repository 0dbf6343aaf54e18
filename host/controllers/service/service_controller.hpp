// The service controller (service-lb-controller, alias "service"): gives every Service of
// type LoadBalancer without a loadBalancerClass (or of a class claimed with
// --load-balancer-class) a cloud load balancer through the provider's
// ccm.loadbalancer/1 capability, writes its status.loadBalancer.ingress, keeps its host set in
// step with the Nodes, and tears it down when the Service stops wanting one or is deleted.
//
// Safety: the service.kubernetes.io/load-balancer-cleanup finalizer is added before the first
// EnsureLoadBalancer and removed only after the load balancer is gone, so a Service cannot
// vanish with its load balancer still in the cloud. Services that vanish anyway (finalizer
// stripped, or created before the finalizer era) are caught by a delete handler and cleaned up
// from the controller's cache.
//
// Work flow: informer handlers only enqueue. `service` queue keys ("namespace/name") are
// processed by --concurrent-service-syncs workers; a key is never handled by two workers at
// once, so one Service never has two provider calls in flight. The `node` queue's single
// worker turns a change of the load balancers' host set into a host update of every affected
// Service, which runs on the service workers (one UpdateLoadBalancer per Service and change).
//
// Docs: docs/controllers/service.md.
// THREAD: start()/stop() from the owner's thread; the test hooks from a test thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host/controllers/common/controller.hpp"
#include "host/controllers/service/node_set.hpp"
#include "host/controllers/service/service_cache.hpp"
#include "host/controllers/service/service_predicates.hpp"
#include "host/runtime/burst_release.hpp"
#include "host/runtime/work_queue.hpp"

namespace ccm::controllers::service {

// Not started (NotStarted) when the provider lacks ccm.loadbalancer/1 or answers UNIMPLEMENTED.
StatusOr<ControllerOrSkip> makeServiceController(ControllerContext& context);

class ServiceController final : public Controller {
 public:
  static constexpr std::string_view kName = "service-lb-controller";
  static constexpr std::string_view kMetricName = "service";  // running_managed_controllers
  static constexpr std::string_view kComponent = "service-controller";  // event source

  // Host entries handed to the provider since the last release before a drain releases
  // again (two load balancers' host sets at 5,000 nodes), and the shortest time between two.
  static constexpr size_t kBurstReleaseHosts = 10000;
  static constexpr std::chrono::milliseconds kBurstReleaseInterval{2000};

  // `release` gives freed heap back after a burst; it defaults to runtime::releaseFreeMemory
  // (tests pass a counter).
  explicit ServiceController(const ControllerContext& context,
                             std::function<bool()> release = {});
  ~ServiceController() override;

  std::string_view name() const override { return kName; }
  void start() override;
  void stop() override;
  // Fails when a queue's workers are stuck or gone.
  Status healthy() const override;

  // ---- Seams for tests (start() uses the first one and runs the rest on its threads) ----
  // Adds the informer handlers (once).
  void registerHandlers();
  // One service worker iteration: takes a key (blocking), syncs it, requeues on failure.
  // False once the queue is shut down.
  bool processNextServiceItem();
  // One node worker iteration.
  bool processNextNodeItem();
  // Syncs one Service key (no queue bookkeeping).
  Status syncService(const std::string& key);
  // One node pass: queues a host update for every load-balanced Service whose host set differs
  // from the current one.
  void syncNodes();
  // The current host set: the one held, or built from the node cache when a relevant Node
  // changed since or none is held (the set is dropped when the service queue drains).
  std::shared_ptr<const NodeSet> currentNodeSet();
  // The set held now, without building one (null between waves of load-balancer calls).
  std::shared_ptr<const NodeSet> heldNodeSet();
  // The current host set's members, computed from the node cache when no set of the current
  // node generation is held (once per generation).
  Membership currentMembers();

  WorkQueue& serviceQueue() { return *service_queue_; }
  WorkQueue& nodeQueue() { return *node_queue_; }
  const ServiceCache& cache() const { return cache_; }
  // Releases of freed heap so far (after the service queue drained).
  uint64_t burstReleases() const { return burst_release_.releases(); }

 private:
  enum class Op { None, Ensure, Delete };
  struct NodePass;
  struct Pending {
    bool full = false;
    bool hosts = false;
    std::shared_ptr<NodePass> pass;
  };
  struct HandlerGuard {
    std::mutex mu;
    ServiceController* self = nullptr;  // guarded by mu; null once stopped
  };

  // Informer handlers (informer threads; they only enqueue).
  void onServiceAdd(const std::shared_ptr<const kube::Service>& svc);
  void onServiceUpdate(const std::shared_ptr<const kube::Service>& old_svc,
                       const std::shared_ptr<const kube::Service>& new_svc);
  void onServiceDelete(const std::shared_ptr<const kube::Service>& last);
  void onNodeAdd(const std::shared_ptr<const kube::Node>& node);
  void onNodeUpdate(const std::shared_ptr<const kube::Node>& old_node,
                    const std::shared_ptr<const kube::Node>& new_node);
  void onNodeDelete(const std::shared_ptr<const kube::Node>& node);

  void enqueueFull(const std::string& key);
  void enqueueHosts(const std::string& key, std::shared_ptr<NodePass> pass);
  Pending takePending(const std::string& key);
  void handleResult(const std::string& key, const Status& st);
  // A service key is done: releases freed heap when it was the last in work and none is
  // ready (after enough host entries were handed to the provider).
  void noteSyncDone();
  // Exports the held set's size (null: none held, its bytes are 0).
  void noteHostSet(const NodeSet* set);

  Status processServiceDeletion(const std::string& key);
  Status processServiceCreateOrUpdate(const std::string& key,
                                      const std::shared_ptr<const kube::Service>& svc);
  std::pair<Op, Status> syncLoadBalancerIfNeeded(const std::string& key,
                                                 const std::shared_ptr<const kube::Service>& svc);
  std::pair<Op, Status> ensurePath(const std::string& key,
                                   const std::shared_ptr<const kube::Service>& svc);
  std::pair<Op, Status> deletePath(const std::string& key,
                                   const std::shared_ptr<const kube::Service>& svc);
  // Deletes the load balancer of a Service that is gone or was replaced (no finalizer).
  Status deleteVanished(const std::shared_ptr<const kube::Service>& svc);
  // The host update of one Service; nullopt when a full sync is needed instead.
  std::optional<Status> syncHosts(const std::string& key,
                                  const std::shared_ptr<const kube::Service>& svc);
  // After a successful Ensure/Update with `used`: queue another host update if the host set
  // moved on meanwhile.
  void recheckHosts(const std::string& key, const std::shared_ptr<const NodeSet>& used);

  Status addFinalizer(const std::string& key, const kube::Service& svc);
  Status removeFinalizer(const kube::Service& svc);
  Status patchStatus(const std::string& key, const kube::Service& svc,
                     const std::vector<kube::IngressSpec>& desired);
  // Sets and removes the provider's annotations (ABI 1.1, inside its declared domain) with
  // one merge patch, only where they differ from the Service as cached.
  Status patchAnnotations(const std::string& key, const kube::Service& svc,
                          const plugin::LoadBalancerStatus& status);

  void serviceWorker(int index);
  void nodeWorker();

  ControllerContext context_;  // a copy: a bundle of references to the host's objects
  const std::string cluster_name_;
  kube::EventRecorder recorder_;
  const int workers_;
  const ClassSelection classes_;  // the Services this controller handles, by class

  std::unique_ptr<WorkQueue> service_queue_;
  std::unique_ptr<WorkQueue> node_queue_;
  ServiceCache cache_;

  std::mutex pending_mu_;
  std::unordered_map<std::string, Pending> pending_;  // guarded by pending_mu_

  // Set when the API server answered a status write without the ipMode it was sent: a
  // server before Kubernetes 1.29 (the field is unknown there) or 1.29 with the
  // LoadBalancerIPMode gate off. From then on ingress is written and compared without ipMode,
  // instead of rewriting a status the server can never show.
  std::atomic<bool> server_drops_ip_mode_{false};

  runtime::BurstRelease burst_release_;
  std::atomic<int> syncs_in_work_{0};  // service keys taken and not yet done

  std::atomic<uint64_t> node_generation_{1};
  std::mutex node_set_mu_;
  std::shared_ptr<const NodeSet> node_set_;  // guarded by node_set_mu_; null between waves
  Membership members_;                       // guarded by node_set_mu_: of members_generation_
  uint64_t members_generation_ = 0;          // guarded by node_set_mu_ (0: none yet)

  metrics::Family<metrics::Counter>* lb_sync_total_ = nullptr;
  metrics::Family<metrics::Counter>* nodesync_error_total_ = nullptr;
  metrics::Family<metrics::Histogram>* nodesync_latency_ = nullptr;
  metrics::Family<metrics::Histogram>* host_update_latency_ = nullptr;
  metrics::Gauge* host_set_text_bytes_ = nullptr;  // ccm_service_host_set_bytes{part="text"}
  metrics::Gauge* host_set_ref_bytes_ = nullptr;   // ccm_service_host_set_bytes{part="refs"}
  metrics::Gauge* host_set_nodes_ = nullptr;       // ccm_service_host_set_nodes

  std::shared_ptr<HandlerGuard> guard_;
  std::once_flag handlers_once_;
  std::vector<std::jthread> threads_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace ccm::controllers::service
