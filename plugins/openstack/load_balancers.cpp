// The load-balancer entry points (get, ensure, update, remove): find the Service's load
// balancer, then create, reconcile or delete it through the lb_* steps, and report its
// address.
#include "plugins/openstack/load_balancers.hpp"

#include <algorithm>

#include "plugins/openstack/lb_cluster_rename.hpp"
#include "plugins/openstack/lb_creation.hpp"
#include "plugins/openstack/lb_deletion.hpp"
#include "plugins/openstack/lb_desired.hpp"
#include "plugins/openstack/lb_dual_stack.hpp"
#include "plugins/openstack/lb_floating_ips.hpp"
#include "plugins/openstack/lb_health_monitors.hpp"
#include "plugins/openstack/lb_listeners.hpp"
#include "plugins/openstack/lb_members.hpp"
#include "plugins/openstack/lb_pools.hpp"
#include "plugins/openstack/lb_provider_limits.hpp"
#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/lb_security_groups.hpp"
#include "plugins/openstack/lb_tags.hpp"
#include "plugins/openstack/lb_tls.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr auto kFeaturesTtl = std::chrono::hours(1);

// A Service with a loadBalancerClass is some other controller's.
// What this provider cannot build for a Service.
sdk::Status checkSupported(const LbSettings& s, const sdk::Service& svc) {
  if (svc.ports.empty()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "the Service has no ports");
  }
  CCM_SDK_RETURN_IF_ERROR(checkTlsPorts(s, svc));
  for (const sdk::ServicePort& p : svc.ports) {
    if (s.x_forwarded_for && p.protocol != "TCP" && !p.protocol.empty()) {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "x-forwarded-for needs TCP ports; port " +
                                               std::to_string(p.port) + " is " + p.protocol);
    }
  }
  return {};
}

void warnIfSourceRangesIgnored(const LbRun& run, const sdk::Service& svc) {
  if (!run.settings().source_ranges.empty() && !run.features().allowedCidrs()) {
    run.call().warning(
        "Octavia cannot restrict source ranges here (needs API 2.12 and not ovn); "
        "loadBalancerSourceRanges are ignored",
        {{"service", svc.namespace_ + "/" + svc.name}});
  }
}

// The Service's load balancer went into ERROR: one it owns is deleted so that the next
// attempt creates it again; one it adopted must be repaired by hand. Always an error.
sdk::Status handleErrorState(const LbRun& run, const OctaviaLoadBalancer& lb, bool owner) {
  if (!owner) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "load balancer " + lb.id + " (from annotation " + kAnnotationPrefix +
                      "load-balancer-id) is in provisioning status ERROR; repair it in Octavia");
  }
  run.call().error("Load balancer is in ERROR state; deleting it so that it is created again",
                   {{"lb", lb.id}, {"name", lb.name}});
  sdk::Status del = run.octavia().deleteLoadBalancer(run.call(), lb.id, true);
  if (!del.ok() && del.code() != CCM_STATUS_NOT_FOUND) {
    return busyAware(del, "deleting load balancer " + lb.id + " in ERROR state");
  }
  return sdk::Status(CCM_STATUS_UNAVAILABLE,
                "load balancer " + lb.id +
                    " went into provisioning status ERROR; it is being "
                    "deleted and will be created again on the next attempt",
                kRetryAfterCreate);
}

sdk::Result<OctaviaLoadBalancer> activeLoadBalancer(const LbRun& run, const OctaviaLoadBalancer& lb) {
  if (lb.provisioning_status == "ACTIVE") {
    return lb;
  }
  return run.waitActive(lb.id, "waiting for it to become ACTIVE");
}

// Whether the Service may use a load balancer someone else made (the load-balancer-id
// annotation): it needs tags, and room under max-shared-lb when it is not a user yet.
sdk::Status checkCanShare(const LbRun& run, const OctaviaLoadBalancer& lb) {
  if (!run.features().tags()) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "using load balancer " + lb.id +
                                                " made by someone else needs Octavia API "
                                                "2.5 (tags)");
  }
  if (contains(lb.tags, run.settings().lb_name)) {
    return {};
  }
  long others = otherServiceTags(lb, run.settings().lb_name);
  int64_t max_shared = run.config().max_shared_lb;
  if (others + 1 > max_shared) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "load balancer " + lb.id + " is already shared by " + std::to_string(others) +
                      " Services ([LoadBalancer] max-shared-lb = " + std::to_string(max_shared) +
                      ")");
  }
  return {};
}

// Listeners, pools, members and monitors of one load balancer towards `desired`. With
// members_only (UpdateLoadBalancer) only the member sets change and missing listeners or
// pools are an error.
sdk::Status reconcileChildren(const LbRun& run, const std::string& lb_id, bool owner,
                              const sdk::Service& svc, const std::vector<DesiredPort>& desired,
                              bool members_only) {
  OctaviaClient& oct = run.octavia();
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaListener> listeners,
                          oct.listListeners(run.call(), lb_id));
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaPool> pools, oct.listPools(run.call(), lb_id));
  if (!members_only) {
    CCM_SDK_ASSIGN_OR_RETURN(bool removed,
                            deleteUnwantedListeners(run, lb_id, owner, desired, listeners, pools));
    if (removed) {
      CCM_SDK_ASSIGN_OR_RETURN(listeners, oct.listListeners(run.call(), lb_id));
      CCM_SDK_ASSIGN_OR_RETURN(pools, oct.listPools(run.call(), lb_id));
    }
  }
  for (const DesiredPort& d : desired) {
    CCM_SDK_ASSIGN_OR_RETURN(OctaviaListener listener,
                            ensureListener(run, lb_id, owner, d, listeners, members_only));
    CCM_SDK_ASSIGN_OR_RETURN(OctaviaPool pool,
                            ensurePool(run, lb_id, svc, d, listener, pools, members_only));
    CCM_SDK_RETURN_IF_ERROR(reconcileMembers(run, lb_id, pool.id, d));
    if (!members_only) {
      CCM_SDK_RETURN_IF_ERROR(reconcileMonitor(run, lb_id, pool, d));
    }
  }
  return {};
}

// Adds the Service's tag to the load balancer where Octavia has tags.
sdk::Status tagLoadBalancer(const LbRun& run, const OctaviaLoadBalancer& lb) {
  const std::string& lb_name = run.settings().lb_name;
  if (!run.features().tags() || contains(lb.tags, lb_name)) {
    return {};
  }
  return run.mutate(lb.id, "tagging it",
                    run.octavia().updateLoadBalancer(
                        run.call(), lb.id, loadBalancerTagsBody(withTag(lb.tags, lb_name))));
}

// What ensure has the host write back on the Service (ABI 1.1 annotations), under OCCM's
// names: the load balancer's ID and its address. An empty value is not written.
void writeBack(sdk::LoadBalancerStatus& status, const std::string& lb_id,
               const std::string& address) {
  if (!lb_id.empty()) {
    status.annotations.emplace_back(std::string(kAnnotationPrefix) + "load-balancer-id", lb_id);
  }
  if (!address.empty()) {
    status.annotations.emplace_back(std::string(kAnnotationPrefix) + "load-balancer-address",
                                    address);
  }
}

// The Service's status.loadBalancer: the hostname setting, else (with PROXY protocol, when
// configured) a hostname made of the address, else the address.
sdk::LoadBalancerStatus publishedStatus(const LbSettings& s, const LoadBalancerConfig& cfg,
                                        const std::string& address) {
  sdk::LoadBalancerStatus status;
  sdk::Ingress ingress;
  bool proxy = !s.proxy_protocol.empty();
  if (!s.hostname.empty()) {
    ingress.hostname = s.hostname;
  } else if (proxy && cfg.enable_ingress_hostname) {
    ingress.hostname = address + "." + cfg.ingress_hostname_suffix;
  } else {
    ingress.ip = address;
    ingress.ip_mode = proxy ? "Proxy" : "VIP";
  }
  status.ingress.push_back(std::move(ingress));
  return status;
}

}  // namespace

std::string LoadBalancers::name(const std::string& cluster, const sdk::Service& svc) const {
  return loadBalancerName(cluster, svc);
}

sdk::Result<OctaviaFeatures> LoadBalancers::features(const sdk::Call& call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (features_ && std::chrono::steady_clock::now() - features_time_ < kFeaturesTtl) {
      return *features_;
    }
  }
  auto version = octavia_.apiVersion(call);
  if (!version.ok()) {
    return version.status().withPrefix("reading Octavia's API version");
  }
  OctaviaFeatures f;
  f.version = *version;
  f.ovn = config_.load_balancer.lb_provider == "ovn";
  std::lock_guard<std::mutex> lock(mu_);
  features_ = f;
  features_time_ = std::chrono::steady_clock::now();
  return f;
}

sdk::Result<LbRun> LoadBalancers::startRun(const sdk::Call& call, LbSettings settings) {
  CCM_SDK_ASSIGN_OR_RETURN(OctaviaFeatures feats, features(call));
  return LbRun(config_.load_balancer, octavia_, neutron_, call, std::move(settings), feats);
}

sdk::Result<LoadBalancers::Found> LoadBalancers::find(const sdk::Call& call, const LbSettings& s,
                                                   bool lenient) {
  Found found;
  if (!s.lb_id.empty()) {
    auto lb = octavia_.getLoadBalancer(call, s.lb_id);
    if (lb.ok()) {
      found.owner = lb->name == s.lb_name || lb->name == s.legacy_name;
      if (!found.owner && !lenient) {
        // The annotation this provider writes back, read after --cluster-name changed (or
        // copied from another cluster's Service of the same name). Sharing it would add this
        // Service's listeners beside its own on the same ports: the caller renames it when it
        // is safely this cluster's (lb_cluster_rename.hpp) or refuses. Deletion (lenient)
        // goes on as for a shared load balancer: it removes nothing of it.
        found.former_cluster = formerClusterOf(lb->name, s);
      }
      found.lb = std::move(lb).value();
      return found;
    }
    if (lb.status().code() != CCM_STATUS_NOT_FOUND) {
      return lb.status();
    }
    if (!lenient && !s.lb_id_written_back) {
      return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                    "load balancer " + s.lb_id + " named by annotation " + kAnnotationPrefix +
                        "load-balancer-id does not exist; remove the annotation to have a new "
                        "one created");
    }
    if (!lenient) {
      // The ID and address this provider wrote back for a load balancer deleted since (the
      // Service stopped being a LoadBalancer: a deletion cannot remove annotations, OCCM
      // #2751). Served as if the annotation were not there; the next write-back replaces it.
      call.warning(
          "The load-balancer-id annotation names a load balancer that is gone; "
          "it was this provider's own write-back, so the Service gets one by its name",
          {{"lb", s.lb_id}});
    }
  }
  for (const std::string& name : {s.lb_name, s.legacy_name}) {
    CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaLoadBalancer> lbs,
                            octavia_.findLoadBalancers(call, name));
    lbs.erase(std::remove_if(lbs.begin(), lbs.end(),
                             [&](const OctaviaLoadBalancer& lb) {
                               return lb.name != name || lb.provisioning_status == "DELETED";
                             }),
              lbs.end());
    if (lbs.size() > 1) {
      return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                    "several load balancers are named " + name +
                        "; delete the extra ones or set the load-balancer-id annotation");
    }
    if (lbs.size() == 1) {
      found.lb = std::move(lbs.front());
      found.owner = true;
      return found;
    }
  }
  return found;
}

LbSettings LoadBalancers::lenientSettings(const sdk::Call& call, const std::string& cluster,
                                          const sdk::Service& svc) const {
  auto built = buildLbSettings(config_.load_balancer, cluster, svc);
  if (built.ok()) {
    return std::move(built).value();
  }
  // A bad annotation must not keep a Service from being found or deleted: fall back to the
  // names and the annotations that matter for finding and deleting.
  call.warning("Ignoring invalid load balancer settings", {{"error", built.status().message()}});
  sdk::Service plain = svc;
  plain.annotations.clear();
  plain.source_ranges.clear();
  LbSettings settings = buildLbSettings(LoadBalancerConfig(), cluster, plain).value();
  auto get = [&](const std::string& k) {
    auto it = svc.annotations.find(std::string(kAnnotationPrefix) + k);
    return it == svc.annotations.end() ? std::string() : it->second;
  };
  settings.lb_id = get("load-balancer-id");
  settings.keep_floating_ip = get("keep-floatingip") == "true";
  settings.hostname = get("hostname");
  return settings;
}

sdk::Result<std::optional<sdk::LoadBalancerStatus>> LoadBalancers::get(const sdk::Call& call,
                                                                       const std::string& cluster,
                                                                       const sdk::Service& svc) {
  LbSettings s = lenientSettings(call, cluster, svc);
  CCM_SDK_ASSIGN_OR_RETURN(Found found, find(call, s, true));
  LbSettings v6 = ipv6Settings(s, s.vip_subnet_id);
  std::optional<OctaviaLoadBalancer> lb6;
  if (!found.lb || wantsDualStack(svc)) {
    CCM_SDK_ASSIGN_OR_RETURN(Found found6, find(call, v6, true));
    lb6 = std::move(found6.lb);
  }
  if (!found.lb && lb6) {
    return std::optional<sdk::LoadBalancerStatus>(
        sdk::LoadBalancerStatus{});  // only the IPv6 half is left: it exists
  }
  if (!found.lb) {
    // A floating IP left behind by this Service still counts as part of its load balancer.
    if (!s.keep_floating_ip) {
      CCM_SDK_ASSIGN_OR_RETURN(std::vector<FloatingIp> left,
                              unattachedFloatingIps(neutron_, call, s));
      if (!left.empty()) {
        return std::optional<sdk::LoadBalancerStatus>(sdk::LoadBalancerStatus{});
      }
    }
    return std::optional<sdk::LoadBalancerStatus>();
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::string address, currentAddress(neutron_, call, *found.lb));
  sdk::LoadBalancerStatus status = publishedStatus(s, config_.load_balancer, address);
  if (wantsDualStack(svc)) {
    std::string ipv6 = lb6 ? lb6->vip_address : ipv6AdditionalVip(*found.lb);
    bool ipv6_first = !svc.ip_families.empty() && svc.ip_families.front() == "IPv6";
    addIpv6Ingress(status, ipv6, ipv6_first);
  }
  return std::optional<sdk::LoadBalancerStatus>(std::move(status));
}

sdk::Status LoadBalancers::paced(const std::string& key, const sdk::Status& st) {
  if (st.ok()) {
    busy_backoff_.reset(key);
    return st;
  }
  if (!isBusy(st) || st.retryAfter().count() > 0) {
    return st;  // an error (the host backs off), or Octavia said when to come back
  }
  auto delay = busy_backoff_.next(key);
  const sdk::Error& e = st.error();
  return sdk::Error(e.code(),
                    e.message() + " (busy answer " +
                        std::to_string(busy_backoff_.attempts(key)) + " in a row; next try in " +
                        std::to_string((delay.count() + 999) / 1000) + " s)",
                    delay)
      .withReason(e.reason());
}

sdk::Result<sdk::LoadBalancerStatus> LoadBalancers::ensure(const sdk::Call& call,
                                                           const std::string& cluster,
                                                           const sdk::Service& svc,
                                                           const std::vector<sdk::Node>& nodes) {
  auto r = ensureOnce(call, cluster, svc, nodes);
  sdk::Status st = paced(name(cluster, svc), r.ok() ? sdk::Status() : r.status());
  if (!st.ok()) {
    return st;
  }
  return r;
}

sdk::Status LoadBalancers::update(const sdk::Call& call, const std::string& cluster,
                                  const sdk::Service& svc, const std::vector<sdk::Node>& nodes) {
  return paced(name(cluster, svc), updateOnce(call, cluster, svc, nodes));
}

sdk::Status LoadBalancers::remove(const sdk::Call& call, const std::string& cluster,
                                  const sdk::Service& svc) {
  return paced(name(cluster, svc), removeOnce(call, cluster, svc));
}

sdk::Result<sdk::LoadBalancerStatus> LoadBalancers::ensureOnce(
    const sdk::Call& call, const std::string& cluster, const sdk::Service& svc,
    const std::vector<sdk::Node>& nodes) {
  CCM_SDK_ASSIGN_OR_RETURN(LbSettings settings,
                          buildLbSettings(config_.load_balancer, cluster, svc));
  CCM_SDK_RETURN_IF_ERROR(checkSupported(settings, svc));
  BarbicanClient barbican(octavia_.openstack());
  CCM_SDK_RETURN_IF_ERROR(checkTlsContainers(call, barbican, config_.load_balancer, settings));
  if (wantsDualStack(svc)) {
    settings.ip_family = 4;  // dual-stack: the IPv4 load balancer is the Service's main one
  }
  CCM_SDK_ASSIGN_OR_RETURN(LbRun probe, startRun(call, settings));
  CCM_SDK_RETURN_IF_ERROR(checkProviderLimits(probe, svc));
  warnIfSourceRangesIgnored(probe, svc);
  CCM_SDK_ASSIGN_OR_RETURN(Found found, find(call, settings, false));
  CCM_SDK_RETURN_IF_ERROR(renameIfFormerCluster(probe, nodes, found));
  std::optional<OctaviaLoadBalancer> existing;
  if (found.lb && found.lb->provisioning_status != "PENDING_DELETE") {
    existing = found.lb;
  }
  if (found.owner || (!found.lb && settings.lb_id_written_back)) {
    // The ID written back for the Service's own load balancer (or for one gone since) pins
    // nothing: the Service is served as without the annotation, dual-stack included.
    settings.lb_id.clear();
  }
  CCM_SDK_ASSIGN_OR_RETURN(LbRun planner, startRun(call, settings));
  CCM_SDK_ASSIGN_OR_RETURN(DualStackPlan plan, planDualStack(planner, svc, nodes, existing));
  if (plan.mode == DualStackMode::AdditionalVip) {
    settings.additional_vip_subnet_id = plan.ipv6_subnet_id;  // used when it is created
  }
  CCM_SDK_ASSIGN_OR_RETURN(Placed placed, ensurePlaced(call, svc, nodes, settings, found));
  std::vector<MemberSide> sides{placed.side};
  std::string ipv6;
  if (plan.mode == DualStackMode::AdditionalVip) {
    ipv6 = ipv6AdditionalVip(placed.lb);
    if (ipv6.empty()) {
      // Octavia made it without the additional VIP (a provider driver may ignore it).
      plan.mode = DualStackMode::SecondLoadBalancer;
    }
  }
  if (plan.mode == DualStackMode::SecondLoadBalancer) {
    LbSettings v6 = ipv6Settings(settings, plan.ipv6_subnet_id);
    CCM_SDK_ASSIGN_OR_RETURN(Found found6, find(call, v6, false));
    CCM_SDK_ASSIGN_OR_RETURN(Placed placed6,
                            ensurePlaced(call, ipv6Service(svc), nodes, std::move(v6), found6));
    ipv6 = placed6.address;
    sides.push_back(std::move(placed6.side));
  } else if (!wantsDualStack(svc) || !ipv6.empty()) {
    // Only once the Service no longer asks for IPv6, or the IPv6 VIP is on the main load
    // balancer: a PreferDualStack fallback to IPv4 (no IPv6 subnet found this time) must not
    // delete the load balancer that publishes its IPv6 address.
    CCM_SDK_RETURN_IF_ERROR(retireIpv6LoadBalancer(call, settings));
  }
  // The Service's one security group opens the node ports to the members of both of its load
  // balancers (IPv6 rules for the "_ipv6" one's IPv6 members).
  if (config_.load_balancer.manage_security_groups) {
    CCM_SDK_RETURN_IF_ERROR(
        ensureSecurityGroupSides(probe, cluster, svc, sides, nodes, port_security_off_));
  }
  addIpv6Ingress(placed.status, ipv6, plan.ipv6_first);
  return placed.status;
}

sdk::Result<LoadBalancers::Placed> LoadBalancers::ensurePlaced(const sdk::Call& call,
                                                               const sdk::Service& svc,
                                                               const std::vector<sdk::Node>& nodes,
                                                               LbSettings settings, Found found) {
  CCM_SDK_ASSIGN_OR_RETURN(LbRun run, startRun(call, std::move(settings)));
  const LbSettings& s = run.settings();
  if (found.lb && found.lb->provisioning_status == "PENDING_DELETE") {
    // The previous load balancer of this Service is on its way out: wait (within the budget)
    // for it to go before making a new one under the same name.
    sdk::Status gone = run.waitDeleted(found.lb->id);
    if (!gone.ok()) {
      return gone.withPrefix("the previous load balancer of this Service");
    }
    found = Found{};
  }
  if (!found.lb) {
    CCM_SDK_ASSIGN_OR_RETURN(found.lb, createLoadBalancer(run, svc, nodes));
    found.owner = true;
  }
  if (found.lb->provisioning_status == "ERROR") {
    return handleErrorState(run, *found.lb, found.owner);
  }
  CCM_SDK_ASSIGN_OR_RETURN(OctaviaLoadBalancer lb, activeLoadBalancer(run, *found.lb));
  if (!found.owner) {
    CCM_SDK_RETURN_IF_ERROR(checkCanShare(run, lb));
  }

  std::vector<DesiredPort> desired =
      desiredPorts(run, svc, nodes, memberSubnet(s, lb.vip_subnet_id));
  CCM_SDK_RETURN_IF_ERROR(reconcileChildren(run, lb.id, found.owner, svc, desired, false));
  CCM_SDK_RETURN_IF_ERROR(tagLoadBalancer(run, lb));
  MemberSide side{desired, memberSubnet(s, lb.vip_subnet_id), s.ip_family};

  // Address: the floating IP, or the VIP.
  std::string address = lb.vip_address;
  if (!lb.vip_port_id.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(address, ensureFloatingIp(run, lb, found.owner, svc));
  }
  sdk::LoadBalancerStatus status = publishedStatus(s, config_.load_balancer, address);
  writeBack(status, lb.id, address);
  return Placed{std::move(lb), std::move(status), std::move(side), std::move(address)};
}

sdk::Status LoadBalancers::updateOnce(const sdk::Call& call, const std::string& cluster,
                                      const sdk::Service& svc,
                                      const std::vector<sdk::Node>& nodes) {
  CCM_SDK_ASSIGN_OR_RETURN(LbSettings settings,
                          buildLbSettings(config_.load_balancer, cluster, svc));
  std::vector<MemberSide> sides;
  if (wantsDualStack(svc)) {
    settings.ip_family = 4;
    // The IPv6 load balancer (when there is one) follows the nodes too.
    LbSettings v6 = ipv6Settings(settings, settings.vip_subnet_id);
    CCM_SDK_ASSIGN_OR_RETURN(Found found6, find(call, v6, false));
    if (found6.lb) {
      CCM_SDK_ASSIGN_OR_RETURN(MemberSide side6,
                              updateMembers(call, ipv6Service(svc), nodes, std::move(v6), found6));
      sides.push_back(std::move(side6));
    }
  }
  CCM_SDK_ASSIGN_OR_RETURN(Found found, find(call, settings, false));
  if (!found.former_cluster.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(LbRun run, startRun(call, settings));
    CCM_SDK_RETURN_IF_ERROR(renameIfFormerCluster(run, nodes, found));
  }
  if (!found.lb) {
    return sdk::Status(CCM_STATUS_NOT_FOUND,
                  "Service " + svc.namespace_ + "/" + svc.name + " has no load balancer yet");
  }
  CCM_SDK_ASSIGN_OR_RETURN(LbRun run, startRun(call, settings));
  CCM_SDK_ASSIGN_OR_RETURN(MemberSide side, updateMembers(call, svc, nodes, settings, found));
  sides.insert(sides.begin(), std::move(side));
  if (config_.load_balancer.manage_security_groups) {
    CCM_SDK_RETURN_IF_ERROR(
        ensureSecurityGroupSides(run, cluster, svc, sides, nodes, port_security_off_));
  }
  return {};
}

sdk::Result<MemberSide> LoadBalancers::updateMembers(const sdk::Call& call, const sdk::Service& svc,
                                                     const std::vector<sdk::Node>& nodes,
                                                     LbSettings settings, const Found& found) {
  CCM_SDK_ASSIGN_OR_RETURN(LbRun run, startRun(call, std::move(settings)));
  const LbSettings& s = run.settings();
  if (found.lb->provisioning_status == "ERROR") {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "load balancer " + found.lb->id + " is in provisioning status ERROR");
  }
  CCM_SDK_ASSIGN_OR_RETURN(OctaviaLoadBalancer lb, activeLoadBalancer(run, *found.lb));
  std::vector<DesiredPort> desired =
      desiredPorts(run, svc, nodes, memberSubnet(s, lb.vip_subnet_id));
  CCM_SDK_RETURN_IF_ERROR(reconcileChildren(run, lb.id, found.owner, svc, desired, true));
  return MemberSide{std::move(desired), memberSubnet(s, lb.vip_subnet_id), s.ip_family};
}

sdk::Status LoadBalancers::removeOnce(const sdk::Call& call, const std::string& cluster,
                                      const sdk::Service& svc) {
  CCM_SDK_ASSIGN_OR_RETURN(LbRun run, startRun(call, lenientSettings(call, cluster, svc)));
  CCM_SDK_ASSIGN_OR_RETURN(Found found, find(call, run.settings(), true));
  if (found.lb) {
    CCM_SDK_RETURN_IF_ERROR(deleteServiceLoadBalancer(run, *found.lb, found.owner));
  }
  CCM_SDK_RETURN_IF_ERROR(retireIpv6LoadBalancer(call, run.settings()));
  if (config_.load_balancer.manage_security_groups) {
    CCM_SDK_RETURN_IF_ERROR(deleteSecurityGroup(run, cluster, svc));
  }
  return deleteOrphanFloatingIps(run);
}

sdk::Status LoadBalancers::renameIfFormerCluster(const LbRun& run,
                                                 const std::vector<sdk::Node>& nodes,
                                                 Found& found) {
  if (!found.lb || found.former_cluster.empty()) {
    return {};
  }
  CCM_SDK_ASSIGN_OR_RETURN(found.lb,
                          renameForClusterChange(run, *found.lb, found.former_cluster, nodes));
  found.owner = true;
  found.former_cluster.clear();
  return {};
}

sdk::Status LoadBalancers::retireIpv6LoadBalancer(const sdk::Call& call, const LbSettings& primary) {
  LbSettings v6 = ipv6Settings(primary, primary.vip_subnet_id);
  CCM_SDK_ASSIGN_OR_RETURN(Found found, find(call, v6, true));
  if (!found.lb) {
    return {};
  }
  CCM_SDK_ASSIGN_OR_RETURN(LbRun run, startRun(call, std::move(v6)));
  return deleteServiceLoadBalancer(run, *found.lb, true);
}

}  // namespace ccm::openstack
