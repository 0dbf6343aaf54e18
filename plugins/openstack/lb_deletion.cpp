// Deletion of a Service's load balancer, or of its part of a shared one.
#include "plugins/openstack/lb_deletion.hpp"

#include <optional>
#include <vector>

#include "plugins/openstack/lb_floating_ips.hpp"
#include "plugins/openstack/lb_listeners.hpp"
#include "plugins/openstack/lb_tags.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

// Waits out a provisioning in progress: the load balancer as it is then, in ERROR when it
// went there; nullopt when it was being deleted and is gone now.
sdk::Result<std::optional<OctaviaLoadBalancer>> settle(const LbRun& run, OctaviaLoadBalancer lb) {
  if (lb.provisioning_status == "PENDING_DELETE") {
    CCM_SDK_RETURN_IF_ERROR(run.waitDeleted(lb.id));
    return std::optional<OctaviaLoadBalancer>();
  }
  if (startsWith(lb.provisioning_status, "PENDING_")) {
    auto active = run.waitActive(lb.id, "waiting before deleting it");
    if (active.ok()) {
      lb = *active;
    } else if (active.status().code() == CCM_STATUS_UNAVAILABLE) {
      lb.provisioning_status = "ERROR";
    } else {
      return active.status();
    }
  }
  return std::optional<OctaviaLoadBalancer>(std::move(lb));
}

// Deletes the load balancer with its floating IP. Without cascade delete (configured, or
// forced by the ERROR state) the listeners and pools go first, one by one.
sdk::Status deleteWholeLoadBalancer(const LbRun& run, const OctaviaLoadBalancer& lb) {
  OctaviaClient& oct = run.octavia();
  const sdk::Call& call = run.call();
  CCM_SDK_RETURN_IF_ERROR(deleteVipFloatingIps(run, lb));
  bool cascade = run.config().cascade_delete || lb.provisioning_status == "ERROR";
  if (!cascade) {
    CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaListener> listeners, oct.listListeners(call, lb.id));
    CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaPool> pools, oct.listPools(call, lb.id));
    for (const OctaviaListener& l : listeners) {
      CCM_SDK_RETURN_IF_ERROR(deleteListenerAndPool(run, lb.id, l, pools, true));
    }
  }
  sdk::Status del = oct.deleteLoadBalancer(call, lb.id, cascade);
  if (!del.ok() && del.code() != CCM_STATUS_NOT_FOUND) {
    return busyAware(del, "deleting load balancer " + lb.id);
  }
  call.info("Deleting load balancer", {{"lb", lb.id}, {"name", lb.name}});
  return run.waitDeleted(lb.id);
}

// Shared or adopted: removes only what this Service added, its listeners and its tag.
sdk::Status withdrawFromLoadBalancer(const LbRun& run, const OctaviaLoadBalancer& lb) {
  OctaviaClient& oct = run.octavia();
  const sdk::Call& call = run.call();
  const std::string& lb_name = run.settings().lb_name;
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaListener> listeners, oct.listListeners(call, lb.id));
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaPool> pools, oct.listPools(call, lb.id));
  for (const OctaviaListener& l : listeners) {
    if (!ownsListener(l, lb_name, false)) {
      continue;
    }
    CCM_SDK_RETURN_IF_ERROR(deleteListenerAndPool(run, lb.id, l, pools, false));
  }
  if (!contains(lb.tags, lb_name)) {
    return {};
  }
  return run.mutate(
      lb.id, "removing this Service's tag",
      oct.updateLoadBalancer(call, lb.id, loadBalancerTagsBody(withoutTag(lb.tags, lb_name))));
}

}  // namespace

sdk::Status deleteServiceLoadBalancer(const LbRun& run, const OctaviaLoadBalancer& found, bool owner) {
  CCM_SDK_ASSIGN_OR_RETURN(std::optional<OctaviaLoadBalancer> lb, settle(run, found));
  if (!lb) {
    return {};
  }
  if (owner && otherServiceTags(*lb, run.settings().lb_name) == 0) {
    return deleteWholeLoadBalancer(run, *lb);
  }
  return withdrawFromLoadBalancer(run, *lb);
}

}  // namespace ccm::openstack
