// The Service's security group (manage-security-groups): finding or making it, its rules, the
// member ports it is attached to, and its deletion.
#include "plugins/openstack/lb_security_groups.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "plugins/openstack/ip_address.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr size_t kMaxNameBytes = 255;

// What makes two ingress rules the same for Neutron (its 409 "already exists").
std::string ruleKey(const SecurityGroupRule& r) {
  std::string prefix = r.remote_ip_prefix;
  if (auto cidr = Cidr::parse(prefix)) {
    prefix = cidr->toString();
  }
  auto port = [](const std::optional<int64_t>& p) { return p ? std::to_string(*p) : "-"; };
  return r.direction + "|" + r.ethertype + "|" + toLower(r.protocol) + "|" +
         port(r.port_range_min) + "|" + port(r.port_range_max) + "|" + prefix + "|" +
         r.remote_group_id;
}

std::string ruleLabel(const SecurityGroupRule& r) {
  std::string ports = r.port_range_min ? std::to_string(*r.port_range_min) : "any";
  return r.protocol + "/" + ports + " from " + r.remote_ip_prefix;
}

// Whether a rule of the Service's group is one this provider (or OCCM before it) made: an
// ingress rule from an address range with our description, or with none and the shape of a
// node-port rule (OCCM did not describe its rules).
bool managedRule(const SecurityGroupRule& r, const std::string& rule_description) {
  if (r.direction != "ingress" || !r.remote_group_id.empty()) {
    return false;
  }
  if (r.description == rule_description) {
    return true;
  }
  bool node_port_shape = r.description.empty() && !r.remote_ip_prefix.empty() && r.port_range_min &&
                         r.port_range_min == r.port_range_max &&
                         (r.protocol == "tcp" || r.protocol == "udp" || r.protocol == "sctp");
  return node_port_shape;
}

SecurityGroupRule ingressRule(const std::string& group_id, const std::string& protocol,
                              int32_t port, const std::string& source,
                              const std::string& description) {
  SecurityGroupRule r;
  r.security_group_id = group_id;
  r.direction = "ingress";
  r.ethertype = ipFamilyOf(source) == 6 ? "IPv6" : "IPv4";
  r.protocol = toLower(protocol);
  r.port_range_min = port;
  r.port_range_max = port;
  r.remote_ip_prefix = source;
  r.description = description;
  return r;
}

// The rules one side of the Service needs: each node port from each source, and the
// health-check node port from the member subnet.
sdk::Result<std::vector<SecurityGroupRule>> wantedRules(const LbRun& run, const sdk::Service& svc,
                                                        const MemberSide& side,
                                                        const std::string& group_id) {
  const LbSettings& s = run.settings();
  const std::vector<DesiredPort>& desired = side.desired;
  const std::string& member_subnet = side.member_subnet;
  if (member_subnet.empty()) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "manage-security-groups needs the members' subnet: set [LoadBalancer] "
                  "member-subnet-id or subnet-id, or the member-subnet-id annotation");
  }
  auto subnet = run.neutron().getSubnet(run.call(), member_subnet);
  if (!subnet.ok()) {
    return subnet.status().withPrefix("reading member subnet " + member_subnet +
                                      " for the security group rules");
  }
  if (!Cidr::parse(subnet->cidr)) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "member subnet " + member_subnet +
                                                " has no usable CIDR ('" + subnet->cidr + "')");
  }
  std::vector<std::string> sources{subnet->cidr};
  if (run.features().ovn) {
    // Octavia's ovn provider keeps the client's address: the Service's source ranges are
    // the only place to restrict it.
    // the only place to restrict it. Those of the side's family: a rule's ethertype is its
    // source's, and the side's members are of its family.
    sources.clear();
    for (const std::string& range : s.source_ranges) {
      if (ipFamilyOf(range) == side.family) {
        sources.push_back(range);
      }
    }
    if (s.source_ranges.empty()) {
      sources = {side.family == 6 ? "::/0" : "0.0.0.0/0"};
    }
  }
  std::vector<SecurityGroupRule> out;
  std::set<std::string> seen;
  auto add = [&](SecurityGroupRule r) {
    if (seen.insert(ruleKey(r)).second) {
      out.push_back(std::move(r));
    }
  };
  for (const DesiredPort& d : desired) {
    if (d.node_port <= 0) {
      continue;
    }
    for (const std::string& src : sources) {
      add(ingressRule(group_id, d.k8s_protocol, d.node_port, src, s.lb_name));
    }
  }
  if (svc.health_check_node_port > 0) {
    add(ingressRule(group_id, "tcp", svc.health_check_node_port, subnet->cidr, s.lb_name));
  }
  return out;
}

// The Service's group: found by name and description, or made. A group with the name but
// another description is someone else's: an error, nothing is touched.
sdk::Result<std::optional<SecurityGroup>> findGroup(const LbRun& run, const std::string& cluster,
                                                    const sdk::Service& svc) {
  std::string name = securityGroupName(svc);
  std::string description = securityGroupDescription(cluster, svc);
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<SecurityGroup> groups,
                          run.neutron().listSecurityGroups(run.call(), "name=" + urlEncode(name)));
  std::vector<SecurityGroup> ours;
  bool foreign = false;
  for (SecurityGroup& g : groups) {
    if (g.name != name) {
      continue;
    }
    if (g.description == description) {
      ours.push_back(std::move(g));
    } else {
      foreign = true;
    }
  }
  if (ours.size() > 1) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "several security groups are named " + name +
                                                " with this cluster's "
                                                "description; delete the extra ones");
  }
  if (ours.empty() && foreign) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "security group " + name +
                                                " exists but was not made by this cluster (its "
                                                "description is not '" +
                                                description +
                                                "'); it is left alone: rename or "
                                                "delete it");
  }
  if (ours.empty()) {
    return std::optional<SecurityGroup>();
  }
  return std::optional<SecurityGroup>(std::move(ours.front()));
}

sdk::Status reconcileRules(const LbRun& run, const SecurityGroup& group,
                      const std::vector<SecurityGroupRule>& wanted) {
  NeutronClient& neutron = run.neutron();
  const sdk::Call& call = run.call();
  const std::string& rule_description = run.settings().lb_name;
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<SecurityGroupRule> existing,
                          neutron.listSecurityGroupRules(call, group.id));
  std::set<std::string> have;
  for (const SecurityGroupRule& r : existing) {
    have.insert(ruleKey(r));
  }
  std::set<std::string> want;
  // New rules first, so that a changed port is never closed before its successor is open.
  for (const SecurityGroupRule& r : wanted) {
    want.insert(ruleKey(r));
    if (have.count(ruleKey(r)) != 0) {
      continue;
    }
    sdk::Status st = neutron.createSecurityGroupRule(call, r);
    if (!st.ok() && st.code() != CCM_STATUS_ALREADY_EXISTS) {
      return st.withPrefix("adding rule " + ruleLabel(r) + " to security group " + group.id);
    }
    call.info("Opened a node port in the Service's security group",
              {{"security_group", group.id}, {"rule", ruleLabel(r)}});
  }
  if (wanted.empty()) {
    // Never empty a group on a computation that found nothing to open (what emptied every
    // group in OCCM's #2699): the Service's deletion removes the group instead.
    if (!existing.empty()) {
      call.warning("The Service needs no node port open; its security group's rules are kept",
                   {{"security_group", group.id}});
    }
    return {};
  }
  for (const SecurityGroupRule& r : existing) {
    if (want.count(ruleKey(r)) != 0 || !managedRule(r, rule_description)) {
      continue;
    }
    CCM_SDK_RETURN_IF_ERROR(neutron.deleteSecurityGroupRule(call, r.id)
                               .withPrefix("removing stale rule " + ruleLabel(r) +
                                           " from security group " + group.id));
    call.info("Closed a node port the Service no longer uses",
              {{"security_group", group.id}, {"rule", ruleLabel(r)}});
  }
  return {};
}

// Whether the port holds `address` (in `subnet` when one is given).
bool portHolds(const Port& port, const std::string& address, const std::string& subnet) {
  for (const FixedIp& ip : port.fixed_ips) {
    if (ip.ip_address == address && (subnet.empty() || ip.subnet_id == subnet)) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> without(const std::vector<std::string>& ids, const std::string& id) {
  std::vector<std::string> out;
  for (const std::string& x : ids) {
    if (x != id) {
      out.push_back(x);
    }
  }
  return out;
}

// Attaches the group to the port holding `address`, found with one Neutron query (none when
// the port is known to have port security off). `instance` names the node's server (its
// providerID), so that an address reused by a new server is looked up afresh.
sdk::Status attachToMember(const LbRun& run, const SecurityGroup& group, const std::string& address,
                      const std::string& instance, const std::string& member_subnet,
                      PortSecurityOffMemo& memo) {
  NeutronClient& neutron = run.neutron();
  const sdk::Call& call = run.call();
  std::string memo_key = member_subnet + "|" + address + "|" + instance;
  if (memo.recent(memo_key)) {
    return {};
  }
  std::string query = "fixed_ips=" + urlEncode("ip_address=" + address);
  if (!member_subnet.empty()) {
    query += "&fixed_ips=" + urlEncode("subnet_id=" + member_subnet);
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<Port> ports, neutron.listPorts(call, query));
  const Port* port = nullptr;
  for (const Port& p : ports) {
    if (portHolds(p, address, member_subnet)) {
      port = &p;
      break;
    }
  }
  if (port == nullptr) {
    call.warning("No Neutron port holds the member's address; its node ports stay closed",
                 {{"address", address}, {"subnet", member_subnet}});
    return {};
  }
  if (!port->port_security_enabled.value_or(true)) {
    memo.remember(memo_key);
    call.info(
        "Member port has port security off; security group not attached (nothing "
        "filters its traffic)",
        {{"port", port->id}, {"address", address}});
    return {};
  }
  if (contains(port->security_groups, group.id)) {
    return {};
  }
  std::vector<std::string> groups = port->security_groups;
  groups.push_back(group.id);
  sdk::Status st = neutron.setPortSecurityGroups(call, port->id, groups);
  if (!st.ok()) {
    return st.withPrefix("attaching security group " + group.id + " to port " + port->id);
  }
  call.info("Attached the Service's security group to a member port",
            {{"security_group", group.id}, {"port", port->id}, {"address", address}});
  return {};
}

sdk::Status detach(const LbRun& run, const SecurityGroup& group, const Port& port) {
  // The port list was asked for by security group; a Neutron that ignores that filter must
  // not make us rewrite ports that never had the group.
  if (std::find(port.security_groups.begin(), port.security_groups.end(), group.id) ==
      port.security_groups.end()) {
    return {};
  }
  sdk::Status st = run.neutron().setPortSecurityGroups(run.call(), port.id,
                                                  without(port.security_groups, group.id));
  if (!st.ok() && st.code() != CCM_STATUS_NOT_FOUND) {
    return st.withPrefix("detaching security group " + group.id + " from port " + port.id);
  }
  return {};
}

// The group on exactly the members' ports: one query for the ports that have it, one per
// member that is not among them yet.
sdk::Status reconcilePorts(const LbRun& run, const SecurityGroup& group,
                           const std::vector<MemberSide>& sides,
                           const std::vector<sdk::Node>& nodes, PortSecurityOffMemo& memo) {
  std::map<std::string, std::string> instance_of;  // node name -> providerID
  for (const sdk::Node& n : nodes) {
    instance_of[n.name] = n.provider_id;
  }
  struct Where {
    std::string instance;  // its node's providerID
    std::string subnet;    // its side's member subnet
  };
  std::map<std::string, Where> addresses;  // member address -> where it is
  for (const MemberSide& side : sides) {
    for (const DesiredPort& d : side.desired) {
      for (const DesiredMember& m : d.members) {
        addresses[m.address] = Where{instance_of[m.name], side.member_subnet};
      }
    }
  }
  if (addresses.empty()) {
    // No member at all (no node selected, or none with an address yet): the attachments are
    // kept rather than stripped from every node on a node list that may be momentary.
    return {};
  }
  CCM_SDK_ASSIGN_OR_RETURN(
      std::vector<Port> attached,
      run.neutron().listPorts(run.call(), "security_groups=" + urlEncode(group.id)));
  std::set<std::string> covered;
  for (const Port& port : attached) {
    bool member = false;
    for (const auto& [a, where] : addresses) {
      if (portHolds(port, a, where.subnet)) {
        covered.insert(a);
        member = true;
      }
    }
    if (!member) {
      CCM_SDK_RETURN_IF_ERROR(detach(run, group, port));
      run.call().info(
          "Detached the Service's security group from a port that is no longer a "
          "member",
          {{"security_group", group.id}, {"port", port.id}});
    }
  }
  for (const auto& [a, where] : addresses) {
    if (covered.count(a) == 0) {
      CCM_SDK_RETURN_IF_ERROR(attachToMember(run, group, a, where.instance, where.subnet, memo));
    }
  }
  return {};
}

}  // namespace

bool PortSecurityOffMemo::recent(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = seen_.find(key);
  if (it == seen_.end()) {
    return false;
  }
  if (std::chrono::steady_clock::now() - it->second >= ttl_) {
    seen_.erase(it);
    return false;
  }
  return true;
}

void PortSecurityOffMemo::remember(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  for (auto it = seen_.begin(); it != seen_.end();) {  // keeps the map to live entries
    it = now - it->second >= ttl_ ? seen_.erase(it) : std::next(it);
  }
  seen_[key] = now;
}

std::string securityGroupName(const sdk::Service& svc) {
  return truncateUtf8("lb-sg-" + svc.uid + "-" + svc.namespace_ + "-" + svc.name, kMaxNameBytes);
}

std::string securityGroupDescription(const std::string& cluster, const sdk::Service& svc) {
  return truncateUtf8("Security Group for " + svc.namespace_ + "/" + svc.name +
                          " Service LoadBalancer in cluster " + cluster,
                      kMaxNameBytes);
}

sdk::Status ensureSecurityGroup(const LbRun& run, const std::string& cluster,
                                const sdk::Service& svc, const std::vector<DesiredPort>& desired,
                                const std::vector<sdk::Node>& nodes,
                                const std::string& member_subnet, PortSecurityOffMemo& memo) {
  std::vector<MemberSide> sides{{desired, member_subnet, run.settings().ip_family}};
  return ensureSecurityGroupSides(run, cluster, svc, sides, nodes, memo);
}

sdk::Status ensureSecurityGroupSides(const LbRun& run, const std::string& cluster,
                                     const sdk::Service& svc, const std::vector<MemberSide>& sides,
                                     const std::vector<sdk::Node>& nodes,
                                     PortSecurityOffMemo& memo) {
  CCM_SDK_ASSIGN_OR_RETURN(std::optional<SecurityGroup> group, findGroup(run, cluster, svc));
  if (!group) {
    // A group made by an attempt whose answer was lost is found by name next time.
    auto made = run.neutron().createSecurityGroup(run.call(), securityGroupName(svc),
                                                  securityGroupDescription(cluster, svc));
    if (!made.ok()) {
      return made.status().withPrefix("creating the Service's security group");
    }
    run.call().info("Created the Service's security group",
                    {{"security_group", made->id}, {"name", made->name}});
    group = std::move(made).value();
  }
  std::vector<SecurityGroupRule> wanted;
  std::set<std::string> seen;
  for (const MemberSide& side : sides) {
    CCM_SDK_ASSIGN_OR_RETURN(std::vector<SecurityGroupRule> rules,
                            wantedRules(run, svc, side, group->id));
    for (SecurityGroupRule& r : rules) {
      if (seen.insert(ruleKey(r)).second) {
        wanted.push_back(std::move(r));
      }
    }
  }
  CCM_SDK_RETURN_IF_ERROR(reconcileRules(run, *group, wanted));
  return reconcilePorts(run, *group, sides, nodes, memo);
}

sdk::Status deleteSecurityGroup(const LbRun& run, const std::string& cluster,
                                const sdk::Service& svc) {
  auto found = findGroup(run, cluster, svc);
  if (!found.ok()) {
    if (found.status().code() == CCM_STATUS_FAILED_PRECONDITION) {
      // Someone else's group under our name: not ours to delete, and no reason to keep the
      // Service from going.
      run.call().warning("Leaving a security group this cluster did not make",
                         {{"error", found.status().message()}});
      return {};
    }
    return found.status();
  }
  if (!*found) {
    return {};
  }
  const SecurityGroup& group = **found;
  CCM_SDK_ASSIGN_OR_RETURN(
      std::vector<Port> attached,
      run.neutron().listPorts(run.call(), "security_groups=" + urlEncode(group.id)));
  for (const Port& port : attached) {
    CCM_SDK_RETURN_IF_ERROR(detach(run, group, port));
  }
  sdk::Status del = run.neutron().deleteSecurityGroup(run.call(), group.id);
  if (!del.ok()) {
    if (del.code() == CCM_STATUS_ABORTED) {
      return sdk::Status(CCM_STATUS_UNAVAILABLE,
                    "security group " + group.id + " is still in use by a port (" + del.message() +
                        "); trying again",
                    std::chrono::seconds(5));
    }
    return del.withPrefix("deleting security group " + group.id);
  }
  run.call().info("Deleted the Service's security group",
                  {{"security_group", group.id}, {"name", group.name}});
  return {};
}

}  // namespace ccm::openstack
