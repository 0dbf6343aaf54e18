// Listeners of a Service's load balancer: create, update, delete.
#include "plugins/openstack/lb_listeners.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "plugins/openstack/ip_address.hpp"
#include "plugins/openstack/lb_pools.hpp"
#include "plugins/openstack/lb_tags.hpp"
#include "plugins/openstack/lb_tls.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

std::string openRange(int family) {
  return family == 6 ? "::/0" : "0.0.0.0/0";
}

// The CIDRs in canonical form; no CIDR at all means open to the whole family.
std::set<std::string> cidrSet(const std::vector<std::string>& v, int family) {
  std::set<std::string> out;
  for (const auto& c : v) {
    auto cidr = Cidr::parse(c);
    out.insert(cidr ? cidr->toString() : c);
  }
  if (out.empty()) {
    out.insert(openRange(family));
  }
  return out;
}

// The listener on d's protocol and port (the last one listed, should there be several).
std::optional<OctaviaListener> listenerFor(const std::vector<OctaviaListener>& listeners,
                                           const DesiredPort& d) {
  std::optional<OctaviaListener> found;
  for (const OctaviaListener& l : listeners) {
    if (l.protocol == d.listener_protocol && l.protocol_port == d.port) {
      found = l;
    }
  }
  return found;
}

// The listener update that brings `l` to the settings; nullopt when it matches already.
std::optional<Json> listenerChanges(const LbRun& run, const OctaviaListener& l,
                                    const DesiredPort& d) {
  const LbSettings& s = run.settings();
  const OctaviaFeatures& f = run.features();
  Json upd = Json::object();
  bool changed = false;
  if (f.tags() && !contains(l.tags, s.lb_name)) {
    upd.set("tags", Json::stringArray(withTag(l.tags, s.lb_name)));
    changed = true;
  }
  if (l.connection_limit != s.connection_limit) {
    upd.set("connection_limit", s.connection_limit);
    changed = true;
  }
  bool http = d.listener_protocol == "HTTP" || d.listener_protocol == kTerminatedHttps;
  if (http && l.x_forwarded_for != s.x_forwarded_for) {
    upd.set("insert_headers",
            Json::object().set("X-Forwarded-For", s.x_forwarded_for ? "true" : "false"));
    changed = true;
  }
  if (d.listener_protocol == kTerminatedHttps && addListenerTlsChanges(upd, l, s)) {
    changed = true;  // a new certificate is set in place: Octavia updates the listener
  }
  if (f.timeouts()) {
    auto compare = [&](const char* key, const std::optional<int64_t>& have, int64_t want) {
      if (!have || *have != want) {
        upd.set(key, want);
        changed = true;
      }
    };
    compare("timeout_client_data", l.timeout_client_data, s.timeout_client_data);
    compare("timeout_member_connect", l.timeout_member_connect, s.timeout_member_connect);
    compare("timeout_member_data", l.timeout_member_data, s.timeout_member_data);
    compare("timeout_tcp_inspect", l.timeout_tcp_inspect, s.timeout_tcp_inspect);
  }
  if (f.allowedCidrs() &&
      cidrSet(l.allowed_cidrs, s.ip_family) != cidrSet(s.source_ranges, s.ip_family)) {
    upd.set(
        "allowed_cidrs",
        Json::stringArray(s.source_ranges.empty() ? std::vector<std::string>{openRange(s.ip_family)}
                                                  : s.source_ranges));
    changed = true;
  }
  if (!changed) {
    return std::nullopt;
  }
  return upd;
}

}  // namespace

Json listenerJson(const LbRun& run, const DesiredPort& d) {
  const LbSettings& s = run.settings();
  const OctaviaFeatures& f = run.features();
  Json l = Json::object();
  l.set("name", d.listener_name);
  l.set("protocol", d.listener_protocol);
  l.set("protocol_port", d.port);
  l.set("connection_limit", s.connection_limit);
  if (f.tags()) {
    l.set("tags", Json::stringArray({s.lb_name}));
  }
  if (f.timeouts()) {
    l.set("timeout_client_data", s.timeout_client_data);
    l.set("timeout_member_connect", s.timeout_member_connect);
    l.set("timeout_member_data", s.timeout_member_data);
    l.set("timeout_tcp_inspect", s.timeout_tcp_inspect);
  }
  if (f.allowedCidrs() && !s.source_ranges.empty()) {
    l.set("allowed_cidrs", Json::stringArray(s.source_ranges));
  }
  if (s.x_forwarded_for) {
    l.set("insert_headers", Json::object().set("X-Forwarded-For", "true"));
  }
  if (d.listener_protocol == kTerminatedHttps) {
    addListenerTls(l, s);
  }
  return l;
}

sdk::Result<OctaviaListener> ensureListener(const LbRun& run, const std::string& lb_id, bool owner,
                                         const DesiredPort& d,
                                         const std::vector<OctaviaListener>& listeners,
                                         bool members_only) {
  std::optional<OctaviaListener> listener = listenerFor(listeners, d);
  if (listener && !ownsListener(*listener, run.settings().lb_name, owner)) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "port " + std::to_string(d.port) + "/" +
                                                d.listener_protocol + " of load balancer " + lb_id +
                                                " is already used by listener " + listener->id +
                                                ", which does not belong to this Service");
  }
  if (!listener) {
    if (members_only) {
      return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                    "load balancer " + lb_id + " has no listener for port " +
                        std::to_string(d.port) + "/" + d.listener_protocol +
                        " yet; EnsureLoadBalancer will create it");
    }
    Json l = listenerJson(run, d);
    l.set("loadbalancer_id", lb_id);
    return run.created(
        lb_id, "creating listener " + d.listener_name,
        run.octavia().createListener(run.call(), Json::object().set("listener", std::move(l))));
  }
  CCM_SDK_RETURN_IF_ERROR(
      pendingChild("listener", listener->name, listener->id, listener->provisioning_status, lb_id));
  if (members_only) {
    return *listener;
  }
  if (std::optional<Json> upd = listenerChanges(run, *listener, d)) {
    CCM_SDK_RETURN_IF_ERROR(
        run.mutate(lb_id, "updating listener " + listener->name,
                   run.octavia().updateListener(run.call(), listener->id,
                                                Json::object().set("listener", std::move(*upd)))));
  }
  return *listener;
}

sdk::Result<bool> deleteUnwantedListeners(const LbRun& run, const std::string& lb_id, bool owner,
                                       const std::vector<DesiredPort>& desired,
                                       const std::vector<OctaviaListener>& listeners,
                                       const std::vector<OctaviaPool>& pools) {
  auto wanted = [&](const OctaviaListener& l) {
    return std::any_of(desired.begin(), desired.end(), [&](const DesiredPort& d) {
      return d.listener_protocol == l.protocol && d.port == l.protocol_port;
    });
  };
  bool removed = false;
  for (const OctaviaListener& l : listeners) {
    if (ownsListener(l, run.settings().lb_name, owner) && !wanted(l)) {
      CCM_SDK_RETURN_IF_ERROR(deleteListenerAndPool(run, lb_id, l, pools, false));
      removed = true;
    }
  }
  return removed;
}

sdk::Status deleteListenerAndPool(const LbRun& run, const std::string& lb_id, const OctaviaListener& l,
                             const std::vector<OctaviaPool>& pools, bool delete_monitor_first) {
  OctaviaClient& oct = run.octavia();
  if (const OctaviaPool* pool = poolOf(pools, l)) {
    if (delete_monitor_first && !pool->healthmonitor_id.empty()) {
      CCM_SDK_RETURN_IF_ERROR(
          run.mutateDeletion(lb_id, "deleting health monitor " + pool->healthmonitor_id,
                             oct.deleteMonitor(run.call(), pool->healthmonitor_id)));
    }
    CCM_SDK_RETURN_IF_ERROR(run.mutateDeletion(lb_id, "deleting pool " + pool->name,
                                              oct.deletePool(run.call(), pool->id)));
  }
  return run.mutateDeletion(lb_id, "deleting listener " + l.name,
                            oct.deleteListener(run.call(), l.id));
}

}  // namespace ccm::openstack
