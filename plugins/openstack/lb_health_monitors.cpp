// Health monitors of a load balancer's pools: create, compare, update, replace, delete.
#include "plugins/openstack/lb_health_monitors.hpp"

namespace ccm::openstack {
namespace {

// What an HTTP monitor asks of the node's kube-proxy health check.
constexpr const char* kHealthPath = "/healthz";
constexpr const char* kHealthMethod = "GET";
constexpr const char* kHealthyCodes = "200";

// Whether the monitor Octavia has matches the settings (its type aside).
bool monitorMatches(const LbRun& run, const OctaviaMonitor& have, const DesiredMonitor& want) {
  const LbSettings& s = run.settings();
  bool same = have.name == want.name && have.delay == s.hm_delay && have.timeout == s.hm_timeout &&
              have.max_retries == s.hm_max_retries &&
              have.max_retries_down == s.hm_max_retries_down;
  if (want.http) {
    same = same && have.url_path == kHealthPath && have.http_method == kHealthMethod &&
           have.expected_codes == kHealthyCodes;
  }
  return same;
}

sdk::Status createMonitor(const LbRun& run, const std::string& lb_id, const OctaviaPool& pool,
                     const DesiredMonitor& want) {
  Json m = monitorJson(run, want, false);
  m.set("pool_id", pool.id);
  return run.mutate(
      lb_id, "creating health monitor " + want.name,
      run.octavia().createMonitor(run.call(), Json::object().set("healthmonitor", std::move(m))));
}

}  // namespace

Json monitorJson(const LbRun& run, const DesiredMonitor& m, bool for_update) {
  const LbSettings& s = run.settings();
  Json j = Json::object();
  j.set("name", m.name);
  if (!for_update) {
    j.set("type", m.type);
  }
  j.set("delay", s.hm_delay);
  j.set("timeout", s.hm_timeout);
  j.set("max_retries", s.hm_max_retries);
  j.set("max_retries_down", s.hm_max_retries_down);
  if (m.http) {
    j.set("url_path", kHealthPath);
    j.set("http_method", kHealthMethod);
    j.set("expected_codes", kHealthyCodes);
  }
  if (run.features().tags() && !for_update) {
    j.set("tags", Json::stringArray({s.lb_name}));
  }
  return j;
}

sdk::Status reconcileMonitor(const LbRun& run, const std::string& lb_id, const OctaviaPool& pool,
                        const DesiredPort& d) {
  OctaviaClient& oct = run.octavia();
  if (pool.healthmonitor_id.empty()) {
    return d.monitor ? createMonitor(run, lb_id, pool, *d.monitor) : sdk::Status();
  }
  if (!d.monitor) {
    return run.mutateDeletion(lb_id, "deleting health monitor " + pool.healthmonitor_id,
                              oct.deleteMonitor(run.call(), pool.healthmonitor_id));
  }
  const DesiredMonitor& want = *d.monitor;
  auto existing = oct.getMonitor(run.call(), pool.healthmonitor_id);
  if (!existing.ok()) {
    if (existing.status().code() == CCM_STATUS_NOT_FOUND) {
      return createMonitor(run, lb_id, pool, want);
    }
    return existing.status();
  }
  if (existing->type != want.type) {
    CCM_SDK_RETURN_IF_ERROR(run.mutate(lb_id, "replacing health monitor " + existing->id,
                                      oct.deleteMonitor(run.call(), existing->id)));
    return createMonitor(run, lb_id, pool, want);
  }
  if (monitorMatches(run, *existing, want)) {
    return {};
  }
  return run.mutate(
      lb_id, "updating health monitor " + existing->id,
      oct.updateMonitor(run.call(), existing->id,
                        Json::object().set("healthmonitor", monitorJson(run, want, true))));
}

}  // namespace ccm::openstack
