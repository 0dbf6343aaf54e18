// Node: the compact, immutable form of a core/v1 Node kept in the informer cache. Only the
// fields the cloud controllers read are kept (no images, capacity, volumes, managedFields,
// and of the conditions only those in kKeptNodeConditions, without messages).
//
// Every string is a std::string_view into storage the Node shares (its own arena, plus a
// StringPool of repeated strings), so a Node and its copies stay valid as long as any copy
// lives. Timestamps are Unix seconds (0 = unset). Caches hand out
// std::shared_ptr<const Node> snapshots; a snapshot never changes.
//
// THREAD: immutable after decoding; safe to read from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "host/kube/api/api_status.hpp"

namespace ccm::kube {

class StringPool;
class NodeDecoder;

struct KeyValue {
  std::string_view key;
  std::string_view value;
};

struct Taint {
  std::string_view key;
  std::string_view value;
  std::string_view effect;  // NoSchedule | PreferNoSchedule | NoExecute
  int64_t time_added = 0;   // Unix seconds; 0 = unset
};

struct NodeAddress {
  std::string_view type;  // InternalIP | ExternalIP | Hostname | InternalDNS | ExternalDNS
  std::string_view address;
};

// Of status.conditions only the types a controller reads are kept (the lifecycle
// controller's Ready, the route controller's NetworkUnavailable), without their messages:
// kubelets report four or five conditions, and the others (MemoryPressure, DiskPressure,
// PIDPressure) and every message would be a third of a cached node's own bytes.
inline constexpr std::string_view kKeptNodeConditions[] = {"Ready", "NetworkUnavailable"};

struct NodeCondition {
  std::string_view type;    // one of kKeptNodeConditions
  std::string_view status;  // True | False | Unknown
  std::string_view reason;
  int64_t last_heartbeat_time = 0;
  int64_t last_transition_time = 0;
};

struct NodeSystemInfo {
  std::string_view machine_id;
  std::string_view system_uuid;
  std::string_view boot_id;
  std::string_view kernel_version;
  std::string_view os_image;
  std::string_view container_runtime_version;
  std::string_view kubelet_version;
  std::string_view kube_proxy_version;
  std::string_view operating_system;
  std::string_view architecture;
};

// Looks up a key in a list of key/value pairs sorted by key.
std::optional<std::string_view> findKey(std::span<const KeyValue> sorted, std::string_view key);

class Node {
 public:
  // metadata
  std::string_view name;
  std::string_view uid;
  std::string_view resource_version;
  int64_t creation_timestamp = 0;
  int64_t deletion_timestamp = 0;         // 0 = not being deleted
  std::span<const KeyValue> labels;       // sorted by key
  std::span<const KeyValue> annotations;  // sorted by key
  // spec
  std::string_view provider_id;
  std::string_view pod_cidr;
  std::span<const std::string_view> pod_cidrs;
  std::span<const Taint> taints;
  bool unschedulable = false;
  // status
  std::span<const NodeAddress> addresses;
  std::span<const NodeCondition> conditions;  // only kKeptNodeConditions
  NodeSystemInfo node_info;

  // The informer's cache key (the name).
  std::string_view key() const { return name; }

  std::optional<std::string_view> label(std::string_view k) const { return findKey(labels, k); }
  std::optional<std::string_view> annotation(std::string_view k) const {
    return findKey(annotations, k);
  }
  // The condition of this type, or nullptr.
  const NodeCondition* condition(std::string_view type) const;
  // True when a taint with this key (and, when given, this effect) exists.
  bool hasTaint(std::string_view key, std::string_view effect = {}) const;

  // Heap bytes this node holds on its own (arena), not counting shared pool strings.
  size_t arenaBytes() const { return arena_bytes_; }
  // The fingerprint of the watch event this node was decoded from (scanNodeEvent; 0: none).
  uint64_t eventFingerprint() const { return event_fingerprint_; }

 private:
  friend class NodeDecoder;
  std::shared_ptr<const uint64_t[]> arena_;
  std::shared_ptr<const StringPool> pool_;
  uint32_t arena_bytes_ = 0;
  // When not 0, the arena's last rv_tail_ bytes hold resource_version and nothing else refers
  // to them (a node made from its previous version by NodeDecoder's heartbeat copy).
  uint32_t rv_tail_ = 0;
  // scanNodeEvent's fingerprint of the watch event this node was decoded from (0: none, as
  // for a listed node): a later event with the same one is made from this node.
  uint64_t event_fingerprint_ = 0;
};

// Which parts of a Node decodeNode reads.
enum class NodeParts : uint8_t {
  kAll,
  kMetadataAndSpec,  // status (addresses, conditions, nodeInfo) left empty: cheaper
};

// Decodes one Node from JSON text (single GETs, write answers, tests and fakes).
ApiResult<std::shared_ptr<const Node>> decodeNode(std::string_view json,
                                                  NodeParts parts = NodeParts::kAll);

// metadata.resourceVersion of a JSON object (of any kind), read without decoding the rest:
// the parse stops at the version, which API servers write before labels, annotations, spec
// and status. Nested objects are tracked, so a "resourceVersion" key anywhere else (an
// annotation, a managed field) is never taken for it. std::nullopt when the object has none
// or is not JSON.
std::optional<std::string> resourceVersionOf(std::string_view json);

}  // namespace ccm::kube
