// LbRun: one load-balancer call for one Service — its settings, Octavia's features, the
// clients and the budget for waiting on Octavia — with the waits and the "change, then wait
// for ACTIVE" step that every change to a load balancer goes through.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/config.hpp"
#include "plugins/openstack/lb_settings.hpp"
#include "plugins/openstack/neutron_client.hpp"
#include "plugins/openstack/octavia_client.hpp"
#include "plugins/openstack/octavia_features.hpp"

namespace ccm::openstack {

// How long to wait before trying again after deleting a load balancer in ERROR.
inline constexpr std::chrono::milliseconds kRetryAfterCreate{10000};

// FAILED_PRECONDITION because Octavia is merely busy with the object (a load balancer or one
// of its children still PENDING_*): normal progress, retried later, tagged with the reason
// kBusyReason. retry_after is what the cloud said (0 when it said nothing; LoadBalancers then
// picks a growing delay).
inline constexpr std::string_view kBusyReason = "busy";
inline sdk::Error busyError(std::string message, std::chrono::milliseconds retry_after = {}) {
  return sdk::Error::failedPrecondition(std::move(message), retry_after)
      .withReason(std::string(kBusyReason));
}
inline bool isBusy(const sdk::Status& st) {
  return st.reason() == kBusyReason;
}

// Octavia answers 409 while a load balancer (or the child changed) is PENDING_*: that is
// "busy" (busyError, paced per load balancer by LoadBalancers). Other errors get `what`
// as a prefix.
sdk::Status busyAware(const sdk::Status& st, const std::string& what);

// Busy (naming the child) when a listener, pool or member this call would change is still
// PENDING_* although its load balancer is ACTIVE: Octavia refuses any change under it with
// 409 "... is immutable" until it has finished. OK otherwise.
sdk::Status pendingChild(const std::string& kind, const std::string& name, const std::string& id,
                    const std::string& provisioning_status, const std::string& lb_id);

// THREAD: the worker running the call; one LbRun lives for one call.
class LbRun {
 public:
  LbRun(const LoadBalancerConfig& config, OctaviaClient& octavia, NeutronClient& neutron,
        const sdk::Call& call, LbSettings settings, OctaviaFeatures features);

  const LbSettings& settings() const { return settings_; }
  const OctaviaFeatures& features() const { return features_; }
  const LoadBalancerConfig& config() const { return config_; }
  const sdk::Call& call() const { return call_; }
  OctaviaClient& octavia() const { return octavia_; }
  NeutronClient& neutron() const { return neutron_; }

  // Polls until the load balancer is ACTIVE, within this call's wait budget.
  sdk::Result<OctaviaLoadBalancer> waitActive(const std::string& lb_id, const std::string& what) const;
  // Polls until the load balancer is gone (404).
  sdk::Status waitDeleted(const std::string& lb_id) const;
  // A change (`result` is what Octavia answered) followed by the wait for ACTIVE; 409 reads
  // as "busy".
  sdk::Status mutate(const std::string& lb_id, const std::string& what, const sdk::Status& result) const;
  // The same for a deletion, where 404 means it is gone already: done, nothing to wait for.
  sdk::Status mutateDeletion(const std::string& lb_id, const std::string& what,
                        const sdk::Status& result) const;
  // The same for a creation: the new object once the load balancer is ACTIVE again.
  template <typename T>
  sdk::Result<T> created(const std::string& lb_id, const std::string& what, sdk::Result<T> result) const {
    if (!result.ok()) {
      return busyAware(result.status(), what);
    }
    CCM_SDK_RETURN_IF_ERROR(mutate(lb_id, what, sdk::Status()));
    return result;
  }

 private:
  // Whether the wait budget and the call's deadline leave room for another sleep.
  bool canWait(std::chrono::milliseconds next_sleep) const;
  // Sleeps `interval` (waking early when the call is cancelled), then lengthens it.
  sdk::Status sleepAndBackOff(std::chrono::milliseconds& interval) const;

  const LoadBalancerConfig& config_;
  OctaviaClient& octavia_;
  NeutronClient& neutron_;
  const sdk::Call& call_;
  LbSettings settings_;
  OctaviaFeatures features_;
  std::chrono::steady_clock::time_point wait_until_;
};

}  // namespace ccm::openstack
