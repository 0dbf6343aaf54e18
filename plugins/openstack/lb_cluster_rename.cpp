// Renaming a Service's load balancer after --cluster-name changed (lb_cluster_rename.hpp).
#include "plugins/openstack/lb_cluster_rename.hpp"

#include <set>

#include "plugins/openstack/lb_tags.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr std::string_view kServicePrefix = "kube_service_";

// The settings' names with the cluster part swapped: each ends in the cluster name.
struct Names {
  std::string lb;
  std::string description;
  std::string fip_description;
};

std::string currentCluster(const LbSettings& s) {
  return s.lb_name.substr(kServicePrefix.size(),
                          s.lb_name.size() - kServicePrefix.size() - s.lb_name_suffix.size());
}

std::string withCluster(const std::string& text, const std::string& cluster,
                        const std::string& other) {
  return text.substr(0, text.size() - cluster.size()) + other;
}

Names formerNames(const LbSettings& s, const std::string& former) {
  std::string cluster = currentCluster(s);
  return Names{std::string(kServicePrefix) + former + s.lb_name_suffix,
               withCluster(s.description, cluster, former),
               withCluster(s.fip_description, cluster, former)};
}

// "<kind>_<digits>_<old>" renamed to "<kind>_<digits>_<new>"; empty when the name is not so.
std::string renamedChild(const std::string& name, const std::string& kind, const std::string& old,
                         const std::string& now) {
  std::string prefix = kind + "_";
  std::string suffix = "_" + old;
  if (!startsWith(name, prefix) || !endsWith(name, suffix) ||
      name.size() <= prefix.size() + suffix.size()) {
    return {};
  }
  std::string index = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  for (char c : index) {
    if (c < '0' || c > '9') {
      return {};
    }
  }
  return prefix + index + "_" + now;
}

std::vector<std::string> renamedTags(const std::vector<std::string>& tags, const std::string& old,
                                     const std::string& now) {
  std::vector<std::string> out;
  out.reserve(tags.size());
  for (const std::string& t : tags) {
    out.push_back(t == old ? now : t);
  }
  return out;
}

sdk::Status refuse(const OctaviaLoadBalancer& lb, const std::string& why) {
  return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                "load balancer " + lb.id + " (" + lb.name +
                    ") was made for a Service of this namespace and name under another cluster "
                    "name and is not renamed: " +
                    why + "; start ccm with that --cluster-name again, or remove the " +
                    kAnnotationPrefix + "load-balancer-id annotation");
}

// Whether one of the load balancer's members is one of `nodes` (name and address).
sdk::Result<bool> hasNodeOfThisCluster(const LbRun& run, const std::vector<OctaviaPool>& pools,
                                       const std::vector<sdk::Node>& nodes) {
  std::set<std::pair<std::string, std::string>> ours;
  for (const sdk::Node& n : nodes) {
    for (const sdk::NodeAddress& a : n.addresses) {
      ours.insert({n.name, a.address});
    }
  }
  for (const OctaviaPool& p : pools) {
    CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaMember> members,
                            run.octavia().listMembers(run.call(), p.id));
    for (const OctaviaMember& m : members) {
      if (ours.count({m.name, m.address}) != 0) {
        return true;
      }
    }
  }
  return false;
}

sdk::Status renamePoolAndMonitor(const LbRun& run, const OctaviaLoadBalancer& lb,
                            const OctaviaPool& pool, const std::string& old,
                            const std::string& now) {
  OctaviaClient& oct = run.octavia();
  const sdk::Call& call = run.call();
  bool tags = run.features().tags();
  if (!pool.healthmonitor_id.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(OctaviaMonitor mon, oct.getMonitor(call, pool.healthmonitor_id));
    std::string name = renamedChild(mon.name, "monitor", old, now);
    if (!name.empty()) {
      Json upd = Json::object().set("name", name);
      if (tags) {
        upd.set("tags", Json::stringArray({now}));
      }
      CCM_SDK_RETURN_IF_ERROR(
          run.mutate(lb.id, "renaming monitor " + mon.id,
                     oct.updateMonitor(call, mon.id, Json::object().set("healthmonitor", upd))));
    }
  }
  std::string name = renamedChild(pool.name, "pool", old, now);
  if (name.empty()) {
    return {};
  }
  Json upd = Json::object().set("name", name);
  if (tags) {
    upd.set("tags", Json::stringArray({now}));
  }
  return run.mutate(lb.id, "renaming pool " + pool.id,
                    oct.updatePool(call, pool.id, Json::object().set("pool", upd)));
}

}  // namespace

std::string formerClusterOf(const std::string& lb_name, const LbSettings& s) {
  if (lb_name == s.lb_name || !startsWith(lb_name, kServicePrefix) ||
      !endsWith(lb_name, s.lb_name_suffix) ||
      lb_name.size() <= kServicePrefix.size() + s.lb_name_suffix.size() ||
      !startsWith(s.lb_name, kServicePrefix) || !endsWith(s.lb_name, s.lb_name_suffix)) {
    return {};
  }
  return lb_name.substr(kServicePrefix.size(),
                        lb_name.size() - kServicePrefix.size() - s.lb_name_suffix.size());
}

sdk::Result<OctaviaLoadBalancer> renameForClusterChange(const LbRun& run,
                                                        const OctaviaLoadBalancer& lb,
                                                        const std::string& former_cluster,
                                                        const std::vector<sdk::Node>& nodes) {
  const LbSettings& s = run.settings();
  OctaviaClient& oct = run.octavia();
  const sdk::Call& call = run.call();
  Names old = formerNames(s, former_cluster);
  if (lb.name != old.lb || lb.description != old.description) {
    return refuse(lb, "its description is not \"" + old.description + "\"");
  }
  if (otherServiceTags(lb, old.lb) > 0) {
    return refuse(lb, "other Services share it");
  }
  if (run.config().manage_security_groups) {
    return refuse(lb,
                  "[LoadBalancer] manage-security-groups is on, and its security group "
                  "rules are not renamed");
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaPool> pools, oct.listPools(call, lb.id));
  CCM_SDK_ASSIGN_OR_RETURN(bool ours, hasNodeOfThisCluster(run, pools, nodes));
  if (!ours) {
    return refuse(lb, "none of its members is a node of this cluster");
  }
  CCM_SDK_ASSIGN_OR_RETURN(OctaviaLoadBalancer active,
                          run.waitActive(lb.id, "waiting for it to become ACTIVE"));
  call.warning("Renaming the Service's load balancer made under another cluster name",
               {{"lb", lb.id}, {"from", lb.name}, {"to", s.lb_name}});

  for (const OctaviaPool& pool : pools) {
    CCM_SDK_RETURN_IF_ERROR(renamePoolAndMonitor(run, lb, pool, old.lb, s.lb_name));
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaListener> listeners, oct.listListeners(call, lb.id));
  for (const OctaviaListener& l : listeners) {
    std::string name = renamedChild(l.name, "listener", old.lb, s.lb_name);
    if (name.empty()) {
      continue;
    }
    Json upd = Json::object().set("name", name);
    if (run.features().tags()) {
      upd.set("tags", Json::stringArray(renamedTags(l.tags, old.lb, s.lb_name)));
    }
    CCM_SDK_RETURN_IF_ERROR(
        run.mutate(lb.id, "renaming listener " + l.id,
                   oct.updateListener(call, l.id, Json::object().set("listener", upd))));
  }
  if (!lb.vip_port_id.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(
        std::vector<FloatingIp> fips,
        run.neutron().listFloatingIps(call, "port_id=" + urlEncode(lb.vip_port_id)));
    for (const FloatingIp& f : fips) {
      if (f.description == old.fip_description) {
        CCM_SDK_RETURN_IF_ERROR(
            run.neutron().setFloatingIpDescription(call, f.id, s.fip_description));
      }
    }
  }
  // Last, so that a rename cut short is found (under the old name) and finished next time.
  Json upd = Json::object().set("name", s.lb_name).set("description", s.description);
  if (run.features().tags()) {
    upd.set("tags", Json::stringArray(renamedTags(active.tags, old.lb, s.lb_name)));
  }
  CCM_SDK_RETURN_IF_ERROR(
      run.mutate(lb.id, "renaming it to " + s.lb_name,
                 oct.updateLoadBalancer(call, lb.id, Json::object().set("loadbalancer", upd))));
  return run.waitActive(lb.id, "after the rename");
}

}  // namespace ccm::openstack
