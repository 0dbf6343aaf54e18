// Members of a load balancer's pools: the set compare and the replace, add and remove calls.
#include "plugins/openstack/lb_members.hpp"

#include <optional>
#include <set>

namespace ccm::openstack {
namespace {

// What identifies a member for the compare. Providers that need serial API calls do not
// keep member names, so there the name is left out.
struct MemberKeys {
  bool serial = false;

  std::string operator()(const std::string& name, const std::string& address, int64_t port,
                         std::optional<int64_t> monitor_port) const {
    return (serial ? std::string() : name) + "|" + address + "|" + std::to_string(port) + "|" +
           (monitor_port ? std::to_string(*monitor_port) : "");
  }
  std::string operator()(const OctaviaMember& m) const {
    return (*this)(m.name, m.address, m.protocol_port, m.monitor_port);
  }
  std::string operator()(const DesiredMember& m) const {
    return (*this)(m.name, m.address, m.port, m.monitor_port);
  }
};

std::string memberLabel(const OctaviaMember& m) {
  return m.address + ":" + std::to_string(m.protocol_port) + " (" + m.id + ")";
}

// After a change: a member Octavia left in ERROR (it reverted the create or delete) is an
// error, so the call is retried; the next one replaces it.
sdk::Status checkMembersAfterChange(const LbRun& run, const std::string& pool_id, const DesiredPort& d) {
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaMember> after,
                          run.octavia().listMembers(run.call(), pool_id));
  for (const OctaviaMember& m : after) {
    if (m.provisioning_status == "ERROR") {
      return sdk::Status(CCM_STATUS_UNAVAILABLE,
                    "member " + memberLabel(m) + " of pool " + d.pool_name +
                        " is in provisioning status ERROR after the change (Octavia did not "
                        "complete it); it will be replaced on the next attempt");
    }
  }
  return {};
}

}  // namespace

Json memberJson(const DesiredMember& m) {
  Json j = Json::object();
  j.set("name", m.name);
  j.set("address", m.address);
  j.set("protocol_port", m.port);
  if (!m.subnet_id.empty()) {
    j.set("subnet_id", m.subnet_id);
  }
  if (m.monitor_port) {
    j.set("monitor_port", *m.monitor_port);
  }
  return j;
}

sdk::Status reconcileMembers(const LbRun& run, const std::string& lb_id, const std::string& pool_id,
                        const DesiredPort& d) {
  OctaviaClient& oct = run.octavia();
  MemberKeys key{run.config().provider_requires_serial_api_calls};
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<OctaviaMember> members, oct.listMembers(run.call(), pool_id));
  std::set<std::string> have;
  std::set<std::string> want;
  std::vector<const OctaviaMember*> broken;  // in ERROR: replaced whether wanted or not
  for (const OctaviaMember& m : members) {
    CCM_SDK_RETURN_IF_ERROR(pendingChild("member", m.address + ":" + std::to_string(m.protocol_port),
                                        m.id, m.provisioning_status, lb_id));
    if (m.provisioning_status == "ERROR") {
      broken.push_back(&m);
      continue;
    }
    have.insert(key(m));
  }
  for (const DesiredMember& m : d.members) {
    want.insert(key(m));
  }
  if (have == want && broken.empty()) {
    return {};
  }
  if (!key.serial) {
    Json arr = Json::array();
    for (const DesiredMember& m : d.members) {
      arr.push(memberJson(m));
    }
    CCM_SDK_RETURN_IF_ERROR(
        run.mutate(lb_id, "setting the members of pool " + d.pool_name,
                   oct.replaceMembers(run.call(), pool_id, Json::object().set("members", arr))));
    return checkMembersAfterChange(run, pool_id, d);
  }
  // One at a time: members in ERROR go first (a wanted one is created again below), then the
  // missing ones are added before the unwanted ones go.
  for (const OctaviaMember* m : broken) {
    CCM_SDK_RETURN_IF_ERROR(run.mutateDeletion(
        lb_id, "removing member " + memberLabel(*m) + " in ERROR from pool " + d.pool_name,
        oct.deleteMember(run.call(), pool_id, m->id)));
  }
  for (const DesiredMember& m : d.members) {
    if (have.count(key(m)) != 0) {
      continue;
    }
    CCM_SDK_RETURN_IF_ERROR(run.mutate(
        lb_id, "adding member " + m.address + " to pool " + d.pool_name,
        oct.createMember(run.call(), pool_id, Json::object().set("member", memberJson(m)))));
  }
  for (const OctaviaMember& m : members) {
    if (want.count(key(m)) != 0) {
      continue;
    }
    if (m.provisioning_status == "ERROR") {
      continue;  // removed above
    }
    CCM_SDK_RETURN_IF_ERROR(
        run.mutateDeletion(lb_id, "removing member " + m.address + " from pool " + d.pool_name,
                           oct.deleteMember(run.call(), pool_id, m.id)));
  }
  return checkMembersAfterChange(run, pool_id, d);
}

}  // namespace ccm::openstack
