// LbSettings: everything that decides how a Service's load balancer should look, read from
// the Service (spec and loadbalancer.openstack.org/* annotations), the [LoadBalancer] config
// and its [LoadBalancerClass] sections, with OCCM's names and precedence rules. Bad annotation
// values are INVALID_ARGUMENT naming the annotation.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/config.hpp"

namespace ccm::openstack {

inline constexpr const char* kAnnotationPrefix = "loadbalancer.openstack.org/";
inline constexpr const char* kInternalAnnotation =
    "service.beta.kubernetes.io/openstack-internal-load-balancer";
inline constexpr const char* kSourceRangesAnnotation =
    "service.beta.kubernetes.io/load-balancer-source-ranges";

struct LbSettings {
  // Names.
  std::string lb_name;          // kube_service_<cluster>_<namespace>_<name>, <= 255 bytes
  std::string lb_name_suffix;   // _<namespace>_<name>: what lb_name has after the cluster
  std::string legacy_name;      // "a" + UID without dashes, 32 characters
  std::string description;      // LB description
  std::string fip_description;  // the marker on floating IPs this provider creates

  std::string lb_id;  // load-balancer-id annotation: use (adopt or share) this LB
  // The load-balancer-address annotation is there too: both are what this provider writes
  // back (ABI 1.1), so lb_id may be its own, left from a load balancer deleted since.
  bool lb_id_written_back = false;
  bool internal = false;
  int ip_family = 4;
  // Dual-stack with one load balancer: the IPv6 subnet asked for as an additional VIP when
  // the load balancer is created (lb_dual_stack.hpp). Empty: none.
  std::string additional_vip_subnet_id;

  // VIP placement.
  std::string vip_port_id;
  std::string vip_subnet_id;
  std::string vip_network_id;
  std::string member_subnet_id;

  // Floating IP.
  std::string floating_network_id;
  std::string floating_subnet_id;
  std::string floating_subnet;       // name pattern
  std::string floating_subnet_tags;  // tag spec
  bool keep_floating_ip = false;

  // Listener and pool behaviour.
  std::string proxy_protocol;  // "", "PROXY" or "PROXYV2"
  bool x_forwarded_for = false;
  std::string lb_method;
  int64_t connection_limit = -1;
  int64_t timeout_client_data = 50000;
  int64_t timeout_member_connect = 5000;
  int64_t timeout_member_data = 50000;
  int64_t timeout_tcp_inspect = 0;
  std::string flavor_id;
  std::string availability_zone;
  // TLS termination (lb_tls.hpp): the default certificate, where it was set, and SNI ones.
  std::string tls_container_ref;
  std::string tls_container_source;  // "annotation ..." or "[LoadBalancer] ..."
  std::vector<std::string> sni_container_refs;
  std::vector<std::string> source_ranges;  // normalised CIDRs, sorted; empty = not restricted

  // Health monitor.
  bool health_monitor = false;
  int64_t hm_delay = 5;
  int64_t hm_timeout = 3;
  int64_t hm_max_retries = 1;
  int64_t hm_max_retries_down = 3;

  // sdk::Status and members.
  std::string hostname;  // publish this hostname instead of an IP
  std::map<std::string, std::optional<std::string>> node_selector;
};

// The load balancer name OCCM gives a Service.
std::string loadBalancerName(const std::string& cluster, const sdk::Service& svc);

sdk::Result<LbSettings> buildLbSettings(const LoadBalancerConfig& config,
                                        const std::string& cluster, const sdk::Service& svc);

// Does the node carry every label of the selector (with the value, when one is given)?
bool matchesSelector(const sdk::Node& node,
                     const std::map<std::string, std::optional<std::string>>& selector);

}  // namespace ccm::openstack
