// What a Service asks of its load balancer, port by port: the listener, the pool, the members
// (one per selected node) and the health monitor it should have, with OCCM's names. Computed
// once a call from the Service, the nodes and the settings; the reconcile steps compare the
// cloud against it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/lb_run.hpp"
#include "plugins/openstack/lb_settings.hpp"

namespace ccm::openstack {

struct DesiredMember {
  std::string name;
  std::string address;
  int64_t port = 0;
  std::string subnet_id;
  std::optional<int64_t> monitor_port;
};

struct DesiredMonitor {
  std::string name;
  std::string type;
  bool http = false;
};

struct DesiredPort {
  size_t index = 0;
  std::string k8s_protocol;
  int32_t port = 0;
  int32_t node_port = 0;
  std::string listener_protocol;
  std::string pool_protocol;
  std::string listener_name;
  std::string pool_name;
  std::vector<DesiredMember> members;
  std::optional<DesiredMonitor> monitor;
};

// One DesiredPort per Service port, in order. Members are the nodes the node selector picks
// that have an address of the Service's IP family, in `member_subnet` (may be empty).
std::vector<DesiredPort> desiredPorts(const LbRun& run, const sdk::Service& svc,
                                      const std::vector<sdk::Node>& nodes,
                                      const std::string& member_subnet);

// The node's address for members: its first InternalIP of the family, else its first
// ExternalIP of the family; empty when it has neither.
std::string memberAddress(const sdk::Node& node, int family);

// The subnet members go in: the member-subnet-id setting, else `fallback` (the VIP's subnet).
std::string memberSubnet(const LbSettings& s, const std::string& fallback);

}  // namespace ccm::openstack
