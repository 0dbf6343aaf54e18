// The provider's owning copies of the Node and Service inputs (the SDK passes views valid for
// one call) and its load-balancer result before the ABI glue turns lb_id/address into
// annotations. Everything else the core uses is the SDK's (ccm/types.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ccm/types.hpp"

namespace ccm::openstack {

struct KubeNode {
  std::string name;
  std::string uid;
  std::string provider_id;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<sdk::NodeAddress> addresses;
};

struct ServicePort {
  std::string name;
  std::string protocol;  // TCP, UDP, SCTP
  int32_t port = 0;
  int32_t node_port = 0;
};

struct KubeService {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::string type;
  std::vector<ServicePort> ports;
  std::string load_balancer_ip;
  std::vector<std::string> source_ranges;
  std::string external_traffic_policy;
  int32_t health_check_node_port = 0;
  std::vector<std::string> ip_families;
  std::string ip_family_policy;  // spec.ipFamilyPolicy (from the object JSON); may be empty
  std::string load_balancer_class;
  std::string session_affinity;
};

struct LbStatus {
  std::vector<sdk::Ingress> ingress;
  // Set by ensure: written back on the Service as OCCM does (load-balancer-id and
  // load-balancer-address annotations). Empty: nothing is written.
  std::string lb_id;
  std::string address;
};

}  // namespace ccm::openstack
