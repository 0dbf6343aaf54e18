// IsolatedProvider: --provider-isolation=process. A Provider whose plugin runs in a child
// process (child.hpp) that this object starts, supervises and restarts.
//
// Each call is sent to the child as one Call frame with a fresh id and answered by the Reply
// with that id, so any number of calls are in flight at once (the child's adapter enforces
// the plugin's declared concurrency and deadlines, as in-process).
//
// When the child dies (a crash: its crash line is in the log, as it shares the host's
// stderr), the calls in flight and every new call answer UNAVAILABLE saying so, and the
// child is started again after a growing, jittered back-off (first_backoff doubling up to
// max_backoff; back to first_backoff once a child has run healthy_after). A call with no
// answer by its deadline + grace + answer_bound means the child stopped answering: it is
// killed (then restarted) and the call answers DEADLINE_EXCEEDED. A restarted child is
// created with the last configuration the provider accepted (reconfigure).
//
// The first start (load, then create, in the child, under --provider-start-timeout) is
// reported to start()'s caller as the in-process path reports it; later starts are logged.
//
// Stopping (the destructor): SIGTERM to the child, SIGKILL after stop_grace; a child the
// supervisor spawns while the destructor runs is stopped the same way. A stop requested
// (options.stop) before or during the first start ends that start as Cancelled.
//
// Requests are built and sent at most kRequestSlots at a time, and each is freed once sent:
// a load-balancer call's request holds every host, and --concurrent-service-syncs workers
// each building one at once (then waiting for the answer) made the host's peak grow with
// workers x nodes. Sends are one at a time anyway (one socket), so the bound costs no
// throughput. A load-balancer call given a shared host set (ensureLoadBalancerShared,
// updateLoadBalancerShared) does not encode its hosts at all: the set's hosts are encoded
// once, kept in the set's HostForms, and sent from there as the end of each call's frame, so
// a wave of calls with one set (every load balancer ensured after a start) costs the host one
// encoding of the hosts, not one per load balancer.
//
// Every frame to the child is sent within write_bound; a child that does not take one in time
// is killed and restarted, so one stuck child never blocks callers for longer than that.
//
// THREAD: start() and the destructor on the main thread; every Provider method from any
// thread. The children are started by the supervisor thread this object owns (their
// parent-death signal is tied to the thread that started them, which lives as long as this).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "host/plugin/isolation/counter_carry.hpp"
#include "host/plugin/isolation/process.hpp"
#include "host/plugin/isolation/wire.hpp"
#include "host/plugin/provider.hpp"
#include "host/plugin/provider_options.hpp"
#include "host/runtime/metrics.hpp"

namespace ccm::plugin::isolation {

struct IsolationOptions {
  std::string provider;           // the provider's name (the `provider` label of its metrics)
  std::string executable;         // the host binary
  std::vector<std::string> argv;  // the host's own arguments (argv[0] included)
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{300000};
  std::chrono::milliseconds healthy_after{600000};
  std::chrono::milliseconds answer_bound{10000};
  std::chrono::milliseconds stop_grace{5000};
  // How long one frame to the child may take to be sent. A child that does not take it in
  // time (stopped, or not reading) is killed and restarted; the call fails.
  std::chrono::milliseconds write_bound{10000};
  // Test seam: called by the supervisor thread with each child's pid right after it was
  // spawned, before anything else sees the pid.
  std::function<void(pid_t)> spawned_for_test;
};

enum class StartStep { Load, Create };

struct StartFailure {
  StartStep step = StartStep::Load;
  Status status;
};

class IsolatedProvider final : public Provider {
 public:
  using StartResult = std::variant<std::unique_ptr<IsolatedProvider>, StartFailure>;
  // Starts the child and waits for its provider to be created with config.
  static StartResult start(IsolationOptions isolation, ProviderOptions options,
                           std::string config, std::string config_source);
  ~IsolatedProvider() override;
  IsolatedProvider(const IsolatedProvider&) = delete;
  IsolatedProvider& operator=(const IsolatedProvider&) = delete;

  const ProviderInfo& info() const override { return info_; }

  StatusOr<Existence> instanceExists(const NodeRef& node) override;
  StatusOr<Power> instanceShutdown(const NodeRef& node) override;
  StatusOr<std::optional<InstanceMetadata>> instanceMetadata(const NodeRef& node) override;
  StatusOr<std::vector<MetadataResult>> instanceMetadataBatch(
      std::span<const NodeRef> nodes) override;
  StatusOr<std::optional<LoadBalancerStatus>> getLoadBalancer(std::string_view cluster_name,
                                                              const ServiceRef& service) override;
  StatusOr<std::string> getLoadBalancerName(std::string_view cluster_name,
                                            const ServiceRef& service) override;
  StatusOr<LoadBalancerStatus> ensureLoadBalancer(std::string_view cluster_name,
                                                  const ServiceRef& service,
                                                  std::span<const NodeRef> nodes) override;
  Status updateLoadBalancer(std::string_view cluster_name, const ServiceRef& service,
                            std::span<const NodeRef> nodes) override;
  // With a shared host set: its hosts are encoded for the wire once per set (kept in its
  // HostForms) and that block ends every call's frame, instead of each call encoding them.
  StatusOr<LoadBalancerStatus> ensureLoadBalancerShared(std::string_view cluster_name,
                                                        const ServiceRef& service,
                                                        const SharedHosts& hosts) override;
  Status updateLoadBalancerShared(std::string_view cluster_name, const ServiceRef& service,
                                  const SharedHosts& hosts) override;
  Status ensureLoadBalancerDeleted(std::string_view cluster_name,
                                   const ServiceRef& service) override;
  StatusOr<std::vector<Route>> listRoutes(std::string_view cluster_name) override;
  Status createRoute(std::string_view cluster_name, std::string_view name_hint,
                     const Route& route) override;
  Status deleteRoute(std::string_view cluster_name, const Route& route) override;
  void cancelAll() override;
  Status reconfigure(std::string_view config) override;

  // The `provider-<name>` health check: OK while the child serves; else what it is waiting
  // for.
  Status health() const override;

  // The child's metrics in the exposition format (the adapter's and the plugin's), asked for
  // on each call and waited for at most kMetricsWait; empty while the child is not serving.
  std::string childMetrics();

  // Host sets encoded for the wire so far (a test seam: once per shared set, not per call).
  uint64_t hostSetEncodings() const { return host_set_encodings_.load(); }

 private:
  enum class State { Starting, Up, Down, Stopped };
  struct Pending {
    std::condition_variable cv;
    bool done = false;
    std::string reply;  // the Reply (or Metrics) payload, when answered
    Status failure;     // when the child went away first
  };
  // Writes a call's arguments after its id and method.
  using Args = std::function<void(Writer&)>;

  IsolatedProvider(IsolationOptions isolation, ProviderOptions options, std::string config,
                   std::string config_source);
  void supervise();
  void superviseUntilStopped();
  // Sends one frame to the current child within write_bound; kills the child when it does
  // not take the frame in time.
  Status send(std::string_view payload, std::string_view tail = {});
  // Runs one child until it exits; returns how long it had served (0 if it never did).
  std::chrono::steady_clock::duration runOnce(bool first);
  void readLoop(int fd);
  void killChild(std::string_view why);
  // `tail` (bytes the caller keeps alive) ends the call's frame after what `args` wrote.
  StatusOr<std::string> roundTrip(Method method, std::string_view call_name,
                                  std::chrono::milliseconds timeout, const Args& args,
                                  std::string_view tail = {});
  // A load-balancer call (ensure or update): the cluster, the Service, then the hosts, encoded
  // here from `nodes`, or, when `encoded` is given (a shared set's block, kept alive by the
  // caller), sent from that block as the frame's tail.
  StatusOr<std::string> hostsCall(Method method, std::string_view call_name,
                                  std::string_view cluster_name, const ServiceRef& service,
                                  std::span<const NodeRef> nodes, const std::string* encoded);
  // The set's hosts as putNodes writes them, built once per set; null when the set has no
  // forms (or they belong to other refs): the call then encodes its hosts itself.
  std::shared_ptr<const std::string> encodedHosts(const SharedHosts& hosts);
  std::string downMessageLocked() const;

  IsolationOptions isolation_;
  ProviderOptions options_;
  std::string config_source_;
  ProviderInfo info_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // state, start result and stop changes
  State state_ = State::Starting;                 // guarded by mu_
  std::string config_;                            // guarded by mu_: the last accepted one
  pid_t pid_ = -1;                                // guarded by mu_: -1 once reaped
  uint64_t generation_ = 0;                       // guarded by mu_: children started so far
  std::optional<StartFailure> start_failure_;     // guarded by mu_ (the current child's)
  std::optional<ProviderInfo> ready_info_;        // guarded by mu_ (the current child's)
  bool stopping_ = false;                         // guarded by mu_
  bool cancelled_ = false;                        // guarded by mu_
  bool first_done_ = false;                       // guarded by mu_
  bool start_cancelled_ = false;                  // guarded by mu_: a stop during start()
  bool channel_open_ = false;                     // guarded by mu_: the reader still reads
  bool supervisor_done_ = false;                  // guarded by mu_
  std::string last_exit_;                         // guarded by mu_
  uint64_t restarts_ = 0;                         // guarded by mu_
  std::chrono::steady_clock::time_point next_start_;  // guarded by mu_
  uint64_t next_id_ = 1;                                      // guarded by mu_
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;      // guarded by mu_

  // Requests being built or sent (see the top of this file).
  static constexpr std::ptrdiff_t kRequestSlots = 2;
  std::counting_semaphore<kRequestSlots> request_slots_{kRequestSlots};
  std::atomic<uint64_t> host_set_encodings_{0};

  std::mutex write_mu_;
  int fd_ = -1;  // guarded by write_mu_: the host's end of the current child's socket

  metrics::Counter* restarts_metric_ = nullptr;
  metrics::Gauge* up_metric_ = nullptr;
  metrics::Registry::SourceId metrics_source_ = 0;
  CounterCarry carry_;  // the earlier children's counters, added to the current one's
  std::thread supervisor_;
};

}  // namespace ccm::plugin::isolation
