// LoadBalancers: Octavia load balancers for Services of type LoadBalancer, with OCCM's names,
// annotations and ownership rules. Every entry point reconciles from what the cloud holds, so
// it is idempotent and resumable: when Octavia is still provisioning after a bounded in-call
// wait it answers FAILED_PRECONDITION with a retry-after, and the next call carries on. The
// steps live in lb_*.hpp (creation, listeners, pools, members, monitors, floating IPs,
// deletion); this class finds the load balancer and runs them in order.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/backoff.hpp"
#include "plugins/openstack/config.hpp"
#include "plugins/openstack/lb_security_groups.hpp"
#include "plugins/openstack/lb_settings.hpp"
#include "plugins/openstack/neutron_client.hpp"
#include "plugins/openstack/octavia_client.hpp"
#include "plugins/openstack/octavia_features.hpp"

namespace ccm::openstack {

class LbRun;

// THREAD: any worker; the host never runs two calls for the same Service at once.
class LoadBalancers {
 public:
  LoadBalancers(const Config& config, OctaviaClient& octavia, NeutronClient& neutron)
      : config_(config), octavia_(octavia), neutron_(neutron) {}

  // nullopt when nothing of the Service's load balancer exists.
  sdk::Result<std::optional<sdk::LoadBalancerStatus>> get(const sdk::Call& call,
                                                          const std::string& cluster,
                                                          const sdk::Service& svc);
  std::string name(const std::string& cluster, const sdk::Service& svc) const;
  sdk::Result<sdk::LoadBalancerStatus> ensure(const sdk::Call& call, const std::string& cluster,
                                              const sdk::Service& svc,
                                              const std::vector<sdk::Node>& nodes);
  sdk::Status update(const sdk::Call& call, const std::string& cluster, const sdk::Service& svc,
                     const std::vector<sdk::Node>& nodes);
  sdk::Status remove(const sdk::Call& call, const std::string& cluster, const sdk::Service& svc);

 private:
  struct Found {
    std::optional<OctaviaLoadBalancer> lb;
    bool owner = false;
    // Found through load-balancer-id and named for this Service under this other cluster name
    // (not set when lenient).
    std::string former_cluster;
  };

  sdk::Result<OctaviaFeatures> features(const sdk::Call& call);
  // The state of this call for the Service with these settings (LbRun, lb_run.hpp).
  sdk::Result<LbRun> startRun(const sdk::Call& call, LbSettings settings);
  // The Service's settings, or (when an annotation is invalid) the names and the few
  // annotations that lookup and deletion need, so that a bad annotation never blocks them.
  LbSettings lenientSettings(const sdk::Call& call, const std::string& cluster,
                             const sdk::Service& svc) const;
  sdk::Result<Found> find(const sdk::Call& call, const LbSettings& s, bool lenient);
  // One load balancer with these settings (the Service's, or its IPv6 one when dual-stack
  // needs two): created when `found` has none, then its children and its address; `side` is
  // what the security group needs of its members (the caller ensures the group once for all
  // of the Service's load balancers).
  struct Placed {
    OctaviaLoadBalancer lb;
    sdk::LoadBalancerStatus status;  // with the annotations written back (writeBack)
    MemberSide side;
    std::string address;  // the floating IP, else the VIP
  };
  sdk::Result<Placed> ensurePlaced(const sdk::Call& call, const sdk::Service& svc,
                                   const std::vector<sdk::Node>& nodes, LbSettings settings,
                                   Found found);
  // The members of one load balancer towards `nodes`; its side for the security group.
  sdk::Result<MemberSide> updateMembers(const sdk::Call& call, const sdk::Service& svc,
                                        const std::vector<sdk::Node>& nodes, LbSettings settings,
                                        const Found& found);
  // A load balancer found under a former cluster name is renamed (lb_cluster_rename.hpp) and
  // becomes the Service's own, or the call is refused.
  sdk::Status renameIfFormerCluster(const LbRun& run, const std::vector<sdk::Node>& nodes,
                                    Found& found);
  // Deletes the Service's IPv6 load balancer (lb_dual_stack.hpp) when there is one.
  sdk::Status retireIpv6LoadBalancer(const sdk::Call& call, const LbSettings& primary);
  sdk::Result<sdk::LoadBalancerStatus> ensureOnce(const sdk::Call& call, const std::string& cluster,
                                                  const sdk::Service& svc,
                                                  const std::vector<sdk::Node>& nodes);
  sdk::Status updateOnce(const sdk::Call& call, const std::string& cluster, const sdk::Service& svc,
                         const std::vector<sdk::Node>& nodes);
  sdk::Status removeOnce(const sdk::Call& call, const std::string& cluster,
                         const sdk::Service& svc);
  // A call's result for the load balancer `key`: while Octavia is busy with it (and said
  // nothing of when to come back) the retry-after grows with each busy answer in a row,
  // jittered; any success starts over.
  sdk::Status paced(const std::string& key, const sdk::Status& st);

  const Config& config_;
  OctaviaClient& octavia_;
  NeutronClient& neutron_;

  std::mutex mu_;
  std::optional<OctaviaFeatures> features_;                // guarded by mu_
  std::chrono::steady_clock::time_point features_time_{};  // guarded by mu_
  BackoffTable busy_backoff_{std::chrono::seconds(5), std::chrono::minutes(5)};
  PortSecurityOffMemo port_security_off_;  // manage-security-groups
};

}  // namespace ccm::openstack
