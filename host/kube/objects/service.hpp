// Service: the compact, immutable form of a core/v1 Service kept in the informer cache: the
// metadata, spec and status.loadBalancer fields the service controller reads, plus the
// object's JSON (without metadata.managedFields) for providers, which receive the Service as
// JSON.
//
// Strings are views into storage the Service shares (see node.hpp); 0 / empty means unset.
//
// THREAD: immutable after decoding; safe to read from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "host/kube/api/api_status.hpp"
#include "host/kube/objects/node.hpp"

namespace ccm::kube {

class ServiceDecoder;

struct ServicePort {
  std::string_view name;
  std::string_view protocol;  // TCP | UDP | SCTP
  std::string_view app_protocol;
  int32_t port = 0;
  int32_t node_port = 0;
  int32_t target_port = 0;            // numeric targetPort (0 when named or unset)
  std::string_view target_port_name;  // named targetPort
};

struct PortStatus {
  int32_t port = 0;
  std::string_view protocol;
  std::string_view error;  // empty = unset
};

struct LoadBalancerIngress {
  std::string_view ip;
  std::string_view hostname;
  std::string_view ip_mode;  // VIP | Proxy | empty
  std::span<const PortStatus> ports;
};

class Service {
 public:
  // metadata
  std::string_view namespace_;
  std::string_view name;
  std::string_view uid;
  std::string_view resource_version;
  int64_t creation_timestamp = 0;
  int64_t deletion_timestamp = 0;
  std::span<const KeyValue> labels;       // sorted by key
  std::span<const KeyValue> annotations;  // sorted by key
  std::span<const std::string_view> finalizers;
  // spec
  std::string_view type;  // ClusterIP | NodePort | LoadBalancer | ExternalName
  std::string_view cluster_ip;
  std::span<const ServicePort> ports;
  std::string_view load_balancer_ip;
  std::span<const std::string_view> load_balancer_source_ranges;
  std::string_view external_traffic_policy;
  int32_t health_check_node_port = 0;
  std::span<const std::string_view> ip_families;
  bool has_load_balancer_class = false;
  std::string_view load_balancer_class;
  std::string_view session_affinity;
  bool has_session_affinity_config = false;
  int32_t session_affinity_timeout_seconds = 0;  // sessionAffinityConfig.clientIP.timeoutSeconds
  std::span<const std::string_view> external_ips;
  // status
  std::span<const LoadBalancerIngress> ingress;
  // The Service as JSON (metadata.managedFields removed).
  std::string_view raw_json;

  // The informer's cache key: "namespace/name".
  std::string_view key() const { return key_; }
  // The same accessor as Node's (the informer reads both kinds through it).
  std::string_view resourceVersion() const { return resource_version; }

  std::optional<std::string_view> label(std::string_view k) const { return findKey(labels, k); }
  std::optional<std::string_view> annotation(std::string_view k) const {
    return findKey(annotations, k);
  }
  bool hasFinalizer(std::string_view f) const;

  size_t arenaBytes() const { return arena_bytes_; }

 private:
  friend class ServiceDecoder;
  std::string_view key_;
  std::shared_ptr<const uint64_t[]> arena_;
  std::shared_ptr<const StringPool> pool_;
  size_t arena_bytes_ = 0;
};

// Decodes one Service from JSON text.
ApiResult<std::shared_ptr<const Service>> decodeService(std::string_view json);

}  // namespace ccm::kube
