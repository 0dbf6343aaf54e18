// Pools of a Service's load balancer: create, update, replace on a protocol change.
#include "plugins/openstack/lb_pools.hpp"

#include <optional>

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

// Octavia's session persistence type for the Service's sessionAffinity; empty for none.
std::string sessionPersistence(const std::string& session_affinity) {
  return session_affinity == "ClientIP" ? "SOURCE_IP" : "";
}

// The pool update that brings `pool` to the settings; nullopt when it matches already.
std::optional<Json> poolChanges(const LbRun& run, const OctaviaPool& pool,
                                const std::string& session_affinity) {
  const LbSettings& s = run.settings();
  Json upd = Json::object();
  bool changed = false;
  if (pool.lb_algorithm != s.lb_method) {
    upd.set("lb_algorithm", s.lb_method);
    changed = true;
  }
  std::string want_sp = sessionPersistence(session_affinity);
  if (pool.session_persistence != want_sp) {
    if (want_sp.empty()) {
      upd.set("session_persistence", nullptr);
    } else {
      upd.set("session_persistence", Json::object().set("type", want_sp));
    }
    changed = true;
  }
  if (!changed) {
    return std::nullopt;
  }
  return upd;
}

}  // namespace

const OctaviaPool* poolOf(const std::vector<OctaviaPool>& pools, const OctaviaListener& l) {
  for (const OctaviaPool& p : pools) {
    if (p.id == l.default_pool_id || contains(p.listener_ids, l.id)) {
      return &p;
    }
  }
  return nullptr;
}

Json poolJson(const LbRun& run, const DesiredPort& d, const std::string& session_affinity) {
  const LbSettings& s = run.settings();
  Json p = Json::object();
  p.set("name", d.pool_name);
  p.set("protocol", d.pool_protocol);
  p.set("lb_algorithm", s.lb_method);
  std::string persistence = sessionPersistence(session_affinity);
  if (!persistence.empty()) {
    p.set("session_persistence", Json::object().set("type", persistence));
  }
  if (run.features().tags()) {
    p.set("tags", Json::stringArray({s.lb_name}));
  }
  return p;
}

sdk::Result<OctaviaPool> ensurePool(const LbRun& run, const std::string& lb_id,
                                    const sdk::Service& svc, const DesiredPort& d,
                                    const OctaviaListener& listener,
                                    const std::vector<OctaviaPool>& pools, bool members_only) {
  OctaviaClient& oct = run.octavia();
  std::optional<OctaviaPool> pool;
  if (const OctaviaPool* p = poolOf(pools, listener)) {
    pool = *p;
  }
  if (pool) {
    CCM_SDK_RETURN_IF_ERROR(
        pendingChild("pool", pool->name, pool->id, pool->provisioning_status, lb_id));
  }
  if (pool && pool->protocol != d.pool_protocol && !members_only) {
    CCM_SDK_RETURN_IF_ERROR(run.mutate(lb_id, "deleting pool " + pool->name + " (protocol change)",
                                      oct.deletePool(run.call(), pool->id)));
    pool.reset();
  }
  if (!pool) {
    if (members_only) {
      return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "listener " + listener.id +
                                                  " has no pool yet; EnsureLoadBalancer will "
                                                  "create it");
    }
    Json p = poolJson(run, d, svc.session_affinity);
    p.set("listener_id", listener.id);
    return run.created(lb_id, "creating pool " + d.pool_name,
                       oct.createPool(run.call(), Json::object().set("pool", std::move(p))));
  }
  if (members_only) {
    return *pool;
  }
  if (std::optional<Json> upd = poolChanges(run, *pool, svc.session_affinity)) {
    CCM_SDK_RETURN_IF_ERROR(run.mutate(
        lb_id, "updating pool " + pool->name,
        oct.updatePool(run.call(), pool->id, Json::object().set("pool", std::move(*upd)))));
  }
  return *pool;
}

}  // namespace ccm::openstack
