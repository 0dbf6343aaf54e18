// ServiceAllocator: what the API server's service REST storage does beyond generic storage —
// Service defaulting (type, sessionAffinity, port protocol/targetPort, IP family fields,
// traffic policies, allocateLoadBalancerNodePorts) and allocation of cluster IPs (from
// 10.96.0.0/12) and node ports (30000-32767), keeping allocated values across updates.
//
// THREAD: prepare() may be called from any thread; mu_ serialises allocation.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "kubesim/api_error.hpp"
#include "kubesim/json_util.hpp"
#include "kubesim/object_store.hpp"

namespace ccm::kubesim {

class ServiceAllocator {
 public:
  explicit ServiceAllocator(const ObjectStore& store) : store_(store) {}

  // Defaults and allocates on svc (the Service being created, or updated from old).
  // Returns field errors for requested values that are taken or out of range.
  FieldErrors prepare(JsonValue& svc, JsonAllocator& alloc, const JsonValue* old);

 private:
  void collectUsed(std::set<std::string>& ips, std::set<int64_t>& ports,
                   std::string_view skip_key) const;

  const ObjectStore& store_;
  std::mutex mu_;
  uint32_t next_ip_ = 10;             // guarded by mu_: offset into 10.96.0.0/12
  int64_t next_port_ = 30000;         // guarded by mu_
  std::set<std::string> recent_ips_;  // guarded by mu_: handed out, maybe not stored yet
  std::set<int64_t> recent_ports_;    // guarded by mu_
};

}  // namespace ccm::kubesim
