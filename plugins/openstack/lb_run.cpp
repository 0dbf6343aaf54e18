// LbRun: the state of one load-balancer call, its waits for Octavia and the change-and-wait
// step.
#include "plugins/openstack/lb_run.hpp"

#include <algorithm>
#include <thread>

namespace ccm::openstack {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kDeadlineMargin{2000};
constexpr milliseconds kFirstPollInterval{500};
constexpr milliseconds kLongestPollInterval{5000};
constexpr milliseconds kCancelCheckInterval{100};

// How a wait ends when the load balancer does not get where it should.
sdk::Status disappeared(const std::string& lb_id, const std::string& what) {
  return sdk::Status(CCM_STATUS_ABORTED, "load balancer " + lb_id + " disappeared while " + what);
}

sdk::Status wentIntoError(const std::string& lb_id, const std::string& what) {
  return sdk::Status(CCM_STATUS_UNAVAILABLE,
                "load balancer " + lb_id + " went into provisioning status ERROR while " + what);
}

sdk::Status stillWorking(const std::string& lb_id, const std::string& status, const std::string& what) {
  return busyError("load balancer " + lb_id + " is " + status + " (" + what +
                      "); Octavia is still working, try again later");
}

sdk::Status stillBeingDeleted(const std::string& lb_id, const std::string& status) {
  return busyError("load balancer " + lb_id + " is " + status +
                      " (being deleted); try again later");
}

}  // namespace

sdk::Status busyAware(const sdk::Status& st, const std::string& what) {
  if (st.code() == CCM_STATUS_ABORTED) {
    // Octavia's 409: the load balancer or the child being changed is PENDING_* ("... is
    // immutable and cannot be updated", which names the child). A Retry-After it sent is kept.
    return busyError(what + ": Octavia is busy with this load balancer (" + st.message() + ")",
                        st.retryAfter());
  }
  return st.ok() ? st : st.withPrefix(what);
}

sdk::Status pendingChild(const std::string& kind, const std::string& name, const std::string& id,
                    const std::string& provisioning_status, const std::string& lb_id) {
  if (provisioning_status.rfind("PENDING_", 0) != 0) {
    return {};
  }
  return busyError(kind + " " + name + " (" + id + ") of load balancer " + lb_id + " is " +
                      provisioning_status +
                      "; Octavia has not finished with it and refuses changes under it until "
                      "it has");
}

LbRun::LbRun(const LoadBalancerConfig& config, OctaviaClient& octavia, NeutronClient& neutron,
             const sdk::Call& call, LbSettings settings, OctaviaFeatures features)
    : config_(config),
      octavia_(octavia),
      neutron_(neutron),
      call_(call),
      settings_(std::move(settings)),
      features_(features),
      wait_until_(std::chrono::steady_clock::now() + config.active_wait_timeout) {}

sdk::Result<OctaviaLoadBalancer> LbRun::waitActive(const std::string& lb_id,
                                                const std::string& what) const {
  milliseconds interval = kFirstPollInterval;
  for (;;) {
    auto lb = octavia_.getLoadBalancer(call_, lb_id);
    if (!lb.ok()) {
      if (lb.status().code() == CCM_STATUS_NOT_FOUND) {
        return disappeared(lb_id, what);
      }
      return lb.status().withPrefix("waiting for load balancer " + lb_id);
    }
    const std::string& ps = lb->provisioning_status;
    if (ps == "ACTIVE") {
      return lb;
    }
    if (ps == "ERROR") {
      return wentIntoError(lb_id, what);
    }
    if (!canWait(interval)) {
      return stillWorking(lb_id, ps, what);
    }
    CCM_SDK_RETURN_IF_ERROR(sleepAndBackOff(interval));
  }
}

sdk::Status LbRun::waitDeleted(const std::string& lb_id) const {
  milliseconds interval = kFirstPollInterval;
  for (;;) {
    auto lb = octavia_.getLoadBalancer(call_, lb_id);
    if (!lb.ok()) {
      if (lb.status().code() == CCM_STATUS_NOT_FOUND) {
        return {};
      }
      return lb.status().withPrefix("waiting for load balancer " + lb_id + " to go");
    }
    if (lb->provisioning_status == "DELETED") {
      return {};
    }
    if (!canWait(interval)) {
      return stillBeingDeleted(lb_id, lb->provisioning_status);
    }
    CCM_SDK_RETURN_IF_ERROR(sleepAndBackOff(interval));
  }
}

sdk::Status LbRun::mutate(const std::string& lb_id, const std::string& what,
                     const sdk::Status& result) const {
  if (!result.ok()) {
    return busyAware(result, what);
  }
  call_.info("Changed load balancer", {{"lb", lb_id}, {"change", what}});
  auto lb = waitActive(lb_id, what);
  return lb.ok() ? sdk::Status() : lb.status();
}

sdk::Status LbRun::mutateDeletion(const std::string& lb_id, const std::string& what,
                             const sdk::Status& result) const {
  if (result.code() == CCM_STATUS_NOT_FOUND) {
    return {};
  }
  return mutate(lb_id, what, result);
}

bool LbRun::canWait(milliseconds next_sleep) const {
  auto now = std::chrono::steady_clock::now();
  if (now + next_sleep > wait_until_) {
    return false;
  }
  if (auto left = call_.timeLeft()) {
    if (*left <
        std::chrono::duration_cast<std::chrono::nanoseconds>(next_sleep + kDeadlineMargin)) {
      return false;
    }
  }
  return true;
}

sdk::Status LbRun::sleepAndBackOff(milliseconds& interval) const {
  auto until = std::chrono::steady_clock::now() + interval;
  while (std::chrono::steady_clock::now() < until) {
    CCM_SDK_RETURN_IF_ERROR(call_.checkAlive());
    auto left = until - std::chrono::steady_clock::now();
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, kCancelCheckInterval));
  }
  CCM_SDK_RETURN_IF_ERROR(call_.checkAlive());
  interval = std::min(kLongestPollInterval, interval * 3 / 2);
  return {};
}

}  // namespace ccm::openstack
