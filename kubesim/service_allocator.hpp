// ServiceAllocator: what the API server's Service REST storage and strategy do beyond generic
// storage, in the real server's order:
//
//  1. v1 defaulting (type, sessionAffinity, port protocol/targetPort, traffic policies,
//     allocateLoadBalancerNodePorts);
//  2. on update: values the client left out are taken from the stored Service (clusterIP(s),
//     node ports by port name, healthCheckNodePort), clusterIP and clusterIPs are kept in
//     step, and fields the new type no longer uses are dropped when the client did not change
//     them (dropTypeDependentFields: clusterIPs/ipFamilies going to ExternalName, node ports
//     and allocateLoadBalancerNodePorts/loadBalancerClass/externalTrafficPolicy leaving
//     NodePort/LoadBalancer, healthCheckNodePort leaving LoadBalancer+Local, and
//     status.loadBalancer for anything but LoadBalancer);
//  3. IP family fields (ipFamilyPolicy, ipFamilies) checked against the cluster's service
//     families: one (RequireDualStack refused), or two when --service-cluster-ip-range names
//     a range of each family (PreferDualStack and RequireDualStack then get both families);
//  4. allocation: cluster IPs from the service ranges (--service-cluster-ip-range, default
//     10.96.0.0/12; one IP per family of the Service, a requested IP must lie in its range and
//     be free), node ports 30000-32767 (a requested one must be free), health-check node
//     ports.
//
// Errors from 3 and 4 come back alone (the registry allocates before it validates); the
// generic validation (ObjectValidator) runs afterwards on the prepared object.
//
// Used ports and IPs are read from the stored Services, so whatever a write drops is free again
// once it is stored.
//
// THREAD: prepare() may be called from any thread; mu_ serialises allocation.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kubesim/api_error.hpp"
#include "kubesim/ip_text.hpp"
#include "kubesim/json_util.hpp"
#include "kubesim/object_store.hpp"

namespace ccm::kubesim {

class ServiceAllocator {
 public:
  // range: the service CIDR (already validated, see parseServiceRange); secondary: the
  // second family's CIDR of a dual-stack cluster.
  ServiceAllocator(const ObjectStore& store, IpCidr range,
                   std::optional<IpCidr> secondary = std::nullopt);

  // Parses one service CIDR: IPv4 or IPv6 with room for Services.
  static ApiOr<IpCidr> parseServiceRange(std::string_view text);
  // Parses a --service-cluster-ip-range value: one CIDR, or two of different families
  // separated by a comma (dual-stack, the first is the primary family).
  static ApiOr<std::vector<IpCidr>> parseServiceRanges(std::string_view text);

  // Defaults, carries over, drops and allocates on svc (the Service being created, or updated
  // from old). Returns the error of a refused request (422, or 500 when a range is full or a
  // requested health-check port is taken, as the real server answers).
  std::optional<ApiError> prepare(JsonValue& svc, JsonAllocator& alloc, const JsonValue* old);

  // The `kubernetes` Service's address: the first address of the range.
  std::string kubernetesServiceIp() const;
  const IpCidr& range() const { return range_; }

 private:
  void collectUsed(std::set<std::string>& ips, std::set<int64_t>& ports,
                   std::string_view skip_key) const;
  // Whether ip may be allocated: inside the range, not its network or broadcast address.
  bool inRange(const IpAddress& ip) const { return inRangeOf(range_, ip); }
  static bool inRangeOf(const IpCidr& range, const IpAddress& ip);
  std::string familyName() const { return range_.base.v4 ? "IPv4" : "IPv6"; }
  bool dualStack() const { return secondary_.has_value(); }
  // A free address of the range (mu_ held); empty when the range is full.
  std::string allocateFrom(const IpCidr& range, uint64_t& next, const std::set<std::string>& used);

  const ObjectStore& store_;
  const IpCidr range_;
  const std::optional<IpCidr> secondary_;
  const uint64_t range_size_;  // allocatable addresses (capped)
  std::mutex mu_;
  uint64_t next_ip_ = 10;             // guarded by mu_: offset into the range
  uint64_t next_secondary_ip_ = 10;   // guarded by mu_: offset into the secondary range
  int64_t next_port_ = 30000;         // guarded by mu_
  std::set<std::string> recent_ips_;  // guarded by mu_: handed out, maybe not stored yet
  std::set<int64_t> recent_ports_;    // guarded by mu_
};

}  // namespace ccm::kubesim
