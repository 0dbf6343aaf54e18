// FakeCloud: the in-memory cloud behind the fake-cloud provider. Instances come from the
// config (re-read from cloudFile when it changes); load balancers and routes live in memory
// and, with stateFile, on disk (read-modify-write under an flock, so several host processes
// and tests see one cloud). Latency, errors and throttling are injected per operation.
//
// THREAD: every public method may be called from any thread, concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/provider.hpp"
#include "plugins/fake-cloud/config.hpp"

namespace ccm::fakecloud {

struct LbPort {
  std::string name;
  std::string protocol;
  int32_t port = 0;
  int32_t node_port = 0;
};

struct LoadBalancerRecord {
  std::string name;        // the cloud name (upstream's default: "a" + UID without dashes)
  std::string cluster;
  std::string namespace_name;
  std::string service;
  std::string uid;
  std::string ip;
  std::string hostname;
  std::vector<LbPort> ports;
  std::vector<std::string> nodes;  // backend node names
  std::vector<std::string> source_ranges;
  int64_t ensures = 0;
  int64_t host_updates = 0;
};

struct RouteRecord {
  std::string name;
  std::string cluster;
  std::string target_node;
  std::string destination_cidr;
  std::string name_hint;
};

// What the cloud has created, and counters tests read.
struct CloudState {
  std::map<std::string, LoadBalancerRecord> load_balancers;  // by name
  std::map<std::string, RouteRecord> routes;                 // by destination CIDR
  int64_t lb_creates = 0;
  int64_t lb_deletes = 0;
  int64_t route_creates = 0;
  int64_t route_deletes = 0;
  int64_t duplicate_route_creates = 0;  // creates for a route that already existed as asked
};

class FakeCloud {
 public:
  // Throws ConfigError when the config is unusable (bad pool, unreadable files).
  FakeCloud(Config config, const sdk::Host& host);

  sdk::Result<sdk::Existence> exists(const sdk::Call& call, const sdk::NodeView& node);
  sdk::Result<sdk::Power> shutdown(const sdk::Call& call, const sdk::NodeView& node);
  sdk::Result<std::optional<sdk::InstanceMetadata>> metadata(const sdk::Call& call,
                                                             const sdk::NodeView& node);
  sdk::Result<std::vector<sdk::Result<sdk::InstanceMetadata>>> metadataBatch(
      const sdk::Call& call, std::span<const sdk::NodeView> nodes);

  sdk::Result<std::optional<sdk::LoadBalancerStatus>> getLoadBalancer(
      const sdk::Call& call, std::string_view cluster, const sdk::ServiceView& svc);
  sdk::Result<std::string> loadBalancerName(const sdk::Call& call, std::string_view cluster,
                                            const sdk::ServiceView& svc);
  sdk::Result<sdk::LoadBalancerStatus> ensureLoadBalancer(const sdk::Call& call,
                                                          std::string_view cluster,
                                                          const sdk::ServiceView& svc,
                                                          std::span<const sdk::NodeView> nodes);
  sdk::Status updateLoadBalancer(const sdk::Call& call, std::string_view cluster,
                                 const sdk::ServiceView& svc,
                                 std::span<const sdk::NodeView> nodes);
  sdk::Status deleteLoadBalancer(const sdk::Call& call, std::string_view cluster,
                                 const sdk::ServiceView& svc);

  sdk::Result<std::vector<sdk::Route>> listRoutes(const sdk::Call& call, std::string_view cluster);
  sdk::Status createRoute(const sdk::Call& call, std::string_view cluster,
                          std::string_view name_hint, const sdk::Route& route);
  sdk::Status deleteRoute(const sdk::Call& call, std::string_view cluster,
                          const sdk::Route& route);

  const Config& config() const { return config_; }
  // A copy of the current state (loaded from stateFile when it changed).
  CloudState snapshotState();

  // Upstream's default load balancer name: "a" + UID without dashes, at most 32 bytes.
  static std::string defaultLoadBalancerName(std::string_view uid);

 private:
  struct Resolved {
    bool listed = false;  // matched an explicit or automatic instance
    InstanceSpec spec;
  };

  std::shared_ptr<const World> world();
  std::optional<sdk::Error> enter(const sdk::Call& call, std::string_view op,
                                  std::string_view node,
                                  const std::shared_ptr<const World>& world_ptr);
  Resolved resolve(const World& w, const sdk::NodeView& node) const;
  sdk::Result<sdk::InstanceMetadata> metadataFor(const World& w, const sdk::NodeView& node) const;

  // Runs fn on the state under the lock: loads the state file first if it changed, saves
  // it afterwards when fn returns true.
  template <typename Fn>
  auto withState(Fn&& fn);
  void loadStateLocked();
  void saveStateLocked();
  std::optional<std::string> allocateIpLocked(std::string_view wanted);
  sdk::LoadBalancerStatus statusOf(const LoadBalancerRecord& lb) const;

  Config config_;
  const sdk::Host& host_;

  std::mutex world_mu_;
  std::shared_ptr<const World> world_;  // guarded by world_mu_
  std::chrono::steady_clock::time_point world_checked_{};  // guarded by world_mu_
  int64_t world_mtime_ns_ = -1;                             // guarded by world_mu_

  std::mutex faults_mu_;
  std::map<size_t, int64_t> fault_hits_;  // guarded by faults_mu_ (index -> calls failed)
  std::mt19937_64 rng_{42};               // guarded by faults_mu_
  std::shared_ptr<const World> fault_world_;  // guarded by faults_mu_: world hits refer to
  double tokens_ = 0;                     // guarded by faults_mu_
  std::chrono::steady_clock::time_point tokens_at_{};  // guarded by faults_mu_

  std::mutex state_mu_;
  CloudState state_;            // guarded by state_mu_
  int64_t state_mtime_ns_ = -1;  // guarded by state_mu_
  int64_t state_size_ = -1;      // guarded by state_mu_
  uint32_t pool_base_ = 0;
  uint32_t pool_size_ = 0;
};

}  // namespace ccm::fakecloud
