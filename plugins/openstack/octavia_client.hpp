// OctaviaClient: the load-balancer calls (load balancers, listeners, pools, members, health
// monitors, the API version list) and the models they are read into.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plugins/openstack/openstack_client.hpp"

namespace ccm::openstack {

// A VIP besides the primary one (additional_vips, API 2.26), on the same VIP port.
struct OctaviaAdditionalVip {
  std::string subnet_id;
  std::string ip_address;
};

struct OctaviaLoadBalancer {
  std::string id;
  std::string name;
  std::string description;
  std::string provisioning_status;
  std::string vip_address;
  std::string vip_port_id;
  std::string vip_subnet_id;
  std::string vip_network_id;
  std::string provider;
  std::vector<std::string> tags;
  std::vector<std::string> listener_ids;
  std::vector<OctaviaAdditionalVip> additional_vips;
};

struct OctaviaListener {
  std::string id;
  std::string name;
  std::string protocol;
  int64_t protocol_port = 0;
  int64_t connection_limit = -1;
  std::string default_pool_id;
  bool x_forwarded_for = false;
  std::vector<std::string> allowed_cidrs;
  std::string default_tls_container_ref;
  std::vector<std::string> sni_container_refs;
  std::optional<int64_t> timeout_client_data;
  std::optional<int64_t> timeout_member_connect;
  std::optional<int64_t> timeout_member_data;
  std::optional<int64_t> timeout_tcp_inspect;
  std::vector<std::string> tags;
  std::string provisioning_status;
};

struct OctaviaPool {
  std::string id;
  std::string name;
  std::string protocol;
  std::string lb_algorithm;
  std::vector<std::string> listener_ids;
  std::string healthmonitor_id;
  std::string session_persistence;  // type, or empty
  std::string provisioning_status;
};

struct OctaviaMember {
  std::string id;
  std::string name;
  std::string address;
  int64_t protocol_port = 0;
  std::string subnet_id;
  std::optional<int64_t> monitor_port;
  std::string provisioning_status;
};

struct OctaviaMonitor {
  std::string id;
  std::string name;
  std::string type;
  int64_t delay = 0;
  int64_t timeout = 0;
  int64_t max_retries = 0;
  int64_t max_retries_down = 0;
  std::string url_path;
  std::string http_method;
  std::string expected_codes;
};

struct OctaviaVersion {
  int major = 0;
  int minor = 0;
  bool atLeast(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
};

OctaviaLoadBalancer parseLoadBalancer(const JsonValue& obj);

// THREAD: any.
class OctaviaClient {
 public:
  explicit OctaviaClient(OpenStackClient& os) : os_(os) {}

  // The client it sends through (the TLS checks reach Barbican with it).
  OpenStackClient& openstack() const { return os_; }

  // The highest API version Octavia lists at its root.
  sdk::Result<OctaviaVersion> apiVersion(const sdk::Call& call);

  sdk::Result<OctaviaLoadBalancer> getLoadBalancer(const sdk::Call& call, const std::string& id);
  sdk::Result<std::vector<OctaviaLoadBalancer>> findLoadBalancers(const sdk::Call& call,
                                                               const std::string& name);
  sdk::Result<OctaviaLoadBalancer> createLoadBalancer(const sdk::Call& call, const Json& body);
  sdk::Status updateLoadBalancer(const sdk::Call& call, const std::string& id, const Json& body);
  // NOT_FOUND is passed through; cascade deletes the children too.
  sdk::Status deleteLoadBalancer(const sdk::Call& call, const std::string& id, bool cascade);

  sdk::Result<std::vector<OctaviaListener>> listListeners(const sdk::Call& call,
                                                       const std::string& lb_id);
  sdk::Result<OctaviaListener> createListener(const sdk::Call& call, const Json& body);
  sdk::Status updateListener(const sdk::Call& call, const std::string& id, const Json& body);
  sdk::Status deleteListener(const sdk::Call& call, const std::string& id);

  sdk::Result<std::vector<OctaviaPool>> listPools(const sdk::Call& call, const std::string& lb_id);
  sdk::Result<OctaviaPool> createPool(const sdk::Call& call, const Json& body);
  sdk::Status updatePool(const sdk::Call& call, const std::string& id, const Json& body);
  sdk::Status deletePool(const sdk::Call& call, const std::string& id);

  sdk::Result<std::vector<OctaviaMember>> listMembers(const sdk::Call& call,
                                                   const std::string& pool_id);
  // PUT pools/{id}/members: replaces the whole member set.
  sdk::Status replaceMembers(const sdk::Call& call, const std::string& pool_id, const Json& body);
  sdk::Status createMember(const sdk::Call& call, const std::string& pool_id, const Json& body);
  sdk::Status deleteMember(const sdk::Call& call, const std::string& pool_id,
                      const std::string& member_id);

  sdk::Result<OctaviaMonitor> getMonitor(const sdk::Call& call, const std::string& id);
  sdk::Status createMonitor(const sdk::Call& call, const Json& body);
  sdk::Status updateMonitor(const sdk::Call& call, const std::string& id, const Json& body);
  sdk::Status deleteMonitor(const sdk::Call& call, const std::string& id);

 private:
  sdk::Status send(const sdk::Call& call, const std::string& method, const std::string& path,
              const Json* body, const std::string& op);

  OpenStackClient& os_;
};

}  // namespace ccm::openstack
