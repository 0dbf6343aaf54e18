// The provider's own copies of what crosses the ABI (nodes, services, load balancer status,
// routes, instance metadata), so the core logic never touches a C struct. The ABI glue converts
// to and from these.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ccm::openstack {

struct NodeAddress {
  std::string type;  // Hostname, InternalIP, ExternalIP, InternalDNS, ExternalDNS
  std::string address;
  bool operator==(const NodeAddress&) const = default;
};

struct KubeNode {
  std::string name;
  std::string uid;
  std::string provider_id;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<NodeAddress> addresses;
};

struct InstanceMetadata {
  std::string provider_id;
  std::string instance_type;
  std::string zone;
  std::string region;
  std::vector<NodeAddress> addresses;
  std::map<std::string, std::string> additional_labels;
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

struct PortStatus {
  int32_t port = 0;
  std::string protocol;
  std::string error;
};

struct LbIngress {
  std::string ip;
  std::string hostname;
  std::string ip_mode;  // "", "VIP" or "Proxy"
  std::vector<PortStatus> ports;
};

struct LbStatus {
  std::vector<LbIngress> ingress;
  // Set by ensure: written back on the Service as OCCM does (load-balancer-id and
  // load-balancer-address annotations). Empty: nothing is written.
  std::string lb_id;
  std::string address;
};

struct KubeRoute {
  std::string name;
  std::string target_node;
  std::string destination_cidr;
  bool blackhole = false;
  bool enable_node_addresses = false;
  std::vector<NodeAddress> target_node_addresses;
};

}  // namespace ccm::openstack
