// manage-security-groups: one Neutron security group per Service of type LoadBalancer that
// opens the Service's node ports (and its health-check node port) on the member nodes' ports,
// from the member subnet (or, with the ovn provider, which keeps the client's address, from
// loadBalancerSourceRanges). Its rules follow the Service's ports, its attachments follow
// the member nodes, and it goes with the Service.
//
// Ownership: the group is the Service's when it has OCCM's name (lb-sg-<uid>-<ns>-<name>)
// and description (naming this cluster); a group with the name but another description is
// never touched. Inside the group, only ingress rules that carry this Service's rule
// description (or none, as OCCM made them) are removed; other rules are left alone.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/lb_desired.hpp"
#include "plugins/openstack/lb_run.hpp"

namespace ccm::openstack {

// The member ports found with port security off, remembered for a while so that a Service's
// every reconcile does not look them up again (they never get the group). An entry expires
// after `ttl`, so a port whose port security is switched on is attached on a later
// reconcile. THREAD: any.
class PortSecurityOffMemo {
 public:
  explicit PortSecurityOffMemo(std::chrono::steady_clock::duration ttl = std::chrono::minutes(10))
      : ttl_(ttl) {}
  bool recent(const std::string& key);
  void remember(const std::string& key);

 private:
  std::chrono::steady_clock::duration ttl_;
  std::mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> seen_;  // guarded by mu_
};

// OCCM's name and description of the Service's security group.
std::string securityGroupName(const sdk::Service& svc);
std::string securityGroupDescription(const std::string& cluster, const sdk::Service& svc);

// The members of one of the Service's load balancers (a dual-stack Service with a second
// "_ipv6" load balancer has two): their ports, the subnet they are in and their IP family.
struct MemberSide {
  std::vector<DesiredPort> desired;
  std::string member_subnet;
  int family = 4;
};

// Makes the Service's group exist with the rules every side needs (its node ports from its
// member subnet, or with ovn from the source ranges of its family; rules of the family's
// ethertype) and attaches it to the port of every member of every side; detaches it from
// ports of nodes that are no longer members. The other parts as ensureSecurityGroup below.
sdk::Status ensureSecurityGroupSides(const LbRun& run, const std::string& cluster,
                                     const sdk::Service& svc, const std::vector<MemberSide>& sides,
                                     const std::vector<sdk::Node>& nodes,
                                     PortSecurityOffMemo& memo);

// Makes the Service's group exist with the rules `desired` needs and attaches it to the
// port of every member (ports with port security off are left alone, with a log line, and
// remembered in `memo`); detaches it from ports of nodes that are no longer members.
// `nodes` are the nodes the members were chosen from; `member_subnet` is the subnet the
// members are in.
sdk::Status ensureSecurityGroup(const LbRun& run, const std::string& cluster,
                                const sdk::Service& svc, const std::vector<DesiredPort>& desired,
                                const std::vector<sdk::Node>& nodes,
                                const std::string& member_subnet, PortSecurityOffMemo& memo);

// Detaches the Service's group from every port and deletes it. Nothing to do when there is
// none; a group this cluster did not make is left alone.
sdk::Status deleteSecurityGroup(const LbRun& run, const std::string& cluster,
                                const sdk::Service& svc);

}  // namespace ccm::openstack
