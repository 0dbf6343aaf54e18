// Node: the compact, immutable form of a core/v1 Node kept in the informer cache. Only the
// fields the cloud controllers read are kept (no images, capacity, volumes, managedFields,
// and of the conditions only those in kKeptNodeConditions, without messages).
//
// A cached node is one allocation: the shared_ptr's control block, the fixed fields below,
// and the node's own bytes after them (its lists, then the strings no other node shares).
// Every string is held as a 4-byte reference, either into those bytes or into a StringPool of
// strings repeated across nodes, which the node keeps alive; the accessors hand out
// std::string_views and list elements made on reading, valid as long as the node lives.
// (With 16-byte views and 32-byte label pairs, the views alone were two thirds of a
// kubelet-shaped node; at 100,000 nodes the difference is ≈ 70 MB.)
//
// Timestamps are Unix seconds (0 = unset). Caches hand out std::shared_ptr<const Node>
// snapshots; a snapshot never changes.
//
// THREAD: immutable after decoding; safe to read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "host/kube/api/api_status.hpp"
#include "host/kube/objects/string_pool.hpp"

namespace ccm::kube {

class NodeDecoder;
class Node;

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

// Looks up a key in a list of key/value pairs sorted by key: a span of KeyValue or a Node's
// NodeList<KeyValue>.
template <typename List>
std::optional<std::string_view> findKey(const List& sorted, std::string_view key) {
  size_t lo = 0;
  size_t hi = sorted.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (KeyValue(sorted[mid]).key < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < sorted.size()) {
    KeyValue found = sorted[lo];
    if (found.key == key) {
      return found.value;
    }
  }
  return std::nullopt;
}

namespace node_layout {
// Where a node keeps a string: 0 is the empty string; with kPooled set, the rest is a
// position in the node's StringPool; otherwise an offset in the node's own bytes. Either way
// the bytes there are the string's length (a varint) and then the string.
using StrRef = uint32_t;
inline constexpr StrRef kPooled = 0x80000000U;

// A list in the node's own bytes: `size` elements from byte `off`.
struct ListRef {
  uint32_t off = 0;
  uint32_t size = 0;
};

// The elements of the lists as they lie in the node's bytes (8-byte aligned).
struct KeyValueRefs {
  StrRef key = 0;
  StrRef value = 0;
};
struct TaintRefs {
  StrRef key = 0;
  StrRef value = 0;
  StrRef effect = 0;
  uint32_t unused = 0;
  int64_t time_added = 0;
};
struct AddressRefs {
  StrRef type = 0;
  StrRef address = 0;
};
struct ConditionRefs {
  StrRef type = 0;
  StrRef status = 0;
  StrRef reason = 0;
  uint32_t unused = 0;
  int64_t last_heartbeat_time = 0;
  int64_t last_transition_time = 0;
};

// The stored form of each list's element type.
template <typename T>
struct Stored;
template <>
struct Stored<KeyValue> {
  using type = KeyValueRefs;
};
template <>
struct Stored<std::string_view> {
  using type = StrRef;
};
template <>
struct Stored<Taint> {
  using type = TaintRefs;
};
template <>
struct Stored<NodeAddress> {
  using type = AddressRefs;
};
template <>
struct Stored<NodeCondition> {
  using type = ConditionRefs;
};
}  // namespace node_layout

// One of a node's lists, read in place: size(), operator[] and iteration hand out elements by
// value (their strings are views into the node). Valid while the node lives.
template <typename T>
class NodeList {
 public:
  class Iterator {
   public:
    using iterator_concept = std::random_access_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using reference = T;
    using pointer = void;

    Iterator() = default;
    T operator*() const { return (*list_)[index_]; }
    T operator[](difference_type n) const { return (*list_)[index_ + n]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator was = *this;
      ++index_;
      return was;
    }
    Iterator& operator--() {
      --index_;
      return *this;
    }
    Iterator operator--(int) {
      Iterator was = *this;
      --index_;
      return was;
    }
    Iterator& operator+=(difference_type n) {
      index_ += n;
      return *this;
    }
    Iterator& operator-=(difference_type n) {
      index_ -= n;
      return *this;
    }
    friend Iterator operator+(Iterator it, difference_type n) { return it += n; }
    friend Iterator operator+(difference_type n, Iterator it) { return it += n; }
    friend Iterator operator-(Iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const Iterator& a, const Iterator& b) {
      return a.index_ - b.index_;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.index_ == b.index_; }
    friend auto operator<=>(const Iterator& a, const Iterator& b) { return a.index_ <=> b.index_; }

   private:
    friend class NodeList;
    Iterator(const NodeList* list, difference_type index) : list_(list), index_(index) {}
    const NodeList* list_ = nullptr;
    difference_type index_ = 0;
  };

  NodeList() = default;
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T operator[](size_t i) const;
  T front() const { return (*this)[0]; }
  T back() const { return (*this)[size_ - 1]; }
  // Where the stored elements lie (for prefetching; nullptr when empty).
  const void* data() const { return items_; }
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, static_cast<std::ptrdiff_t>(size_)); }

 private:
  friend class Node;
  using Stored = typename node_layout::Stored<T>::type;
  NodeList(const Node* node, node_layout::ListRef where);
  const Node* node_ = nullptr;
  const Stored* items_ = nullptr;
  size_t size_ = 0;
};

class Node {
 public:
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // metadata
  std::string_view name() const { return str(f_.name); }
  std::string_view uid() const { return str(f_.uid); }
  std::string_view resourceVersion() const { return str(f_.resource_version); }
  int64_t creationTimestamp() const { return f_.creation_timestamp; }
  int64_t deletionTimestamp() const { return f_.deletion_timestamp; }  // 0 = not being deleted
  NodeList<KeyValue> labels() const { return {this, f_.labels}; }      // sorted by key
  NodeList<KeyValue> annotations() const { return {this, f_.annotations}; }  // sorted by key
  // spec
  std::string_view providerId() const { return str(f_.provider_id); }
  std::string_view podCidr() const { return str(f_.pod_cidr); }
  NodeList<std::string_view> podCidrs() const { return {this, f_.pod_cidrs}; }
  NodeList<Taint> taints() const { return {this, f_.taints}; }
  bool unschedulable() const { return f_.unschedulable; }
  // status
  NodeList<NodeAddress> addresses() const { return {this, f_.addresses}; }
  NodeList<NodeCondition> conditions() const { return {this, f_.conditions}; }  // kept types only
  NodeSystemInfo nodeInfo() const;

  // The informer's cache key (the name).
  std::string_view key() const { return name(); }

  std::optional<std::string_view> label(std::string_view k) const;
  std::optional<std::string_view> annotation(std::string_view k) const;
  // The condition of this type, if the node has it.
  std::optional<NodeCondition> condition(std::string_view type) const;
  // True when a taint with this key (and, when given, this effect) exists.
  bool hasTaint(std::string_view key, std::string_view effect = {}) const;

  // Heap bytes of this node's allocation beyond sizeof(Node): the control block's header and
  // the node's own bytes (shared pool strings not counted).
  size_t arenaBytes() const { return f_.arena_bytes; }
  // The fingerprint of the watch event this node was decoded from (scanNodeEvent; 0: none).
  uint64_t eventFingerprint() const { return f_.event_fingerprint; }

  // The string a reference of this node's stored lists names.
  std::string_view str(node_layout::StrRef ref) const {
    if ((ref & node_layout::kPooled) != 0) {
      return pool_->at(ref & ~node_layout::kPooled);
    }
    return ref == 0 ? std::string_view() : varint::readPrefixed(bytes_ + ref);
  }

 private:
  friend class NodeDecoder;
  template <typename T>
  friend class NodeList;

  // The node's own bytes (in its allocation, after the control block and this object); byte
  // 0 is a zero length, so reference 0 reads as the empty string.
  const char* bytes_ = nullptr;
  std::shared_ptr<const StringPool> pool_;
  // Everything else: plain values, copied as they are by a heartbeat copy.
  struct Fields {
    node_layout::StrRef name = 0;
    node_layout::StrRef uid = 0;
    node_layout::StrRef resource_version = 0;
    node_layout::StrRef provider_id = 0;
    node_layout::StrRef pod_cidr = 0;
    node_layout::StrRef info[10] = {};  // NodeSystemInfo's fields in order
    // Size of bytes_ (the version tail included).
    uint32_t own_size = 0;
    // When not 0, bytes_'s last rv_tail bytes hold the resourceVersion and nothing else
    // refers to them (a node made from its previous version by NodeDecoder's heartbeat copy).
    uint32_t rv_tail = 0;
    // What arenaBytes() reports.
    uint32_t arena_bytes = 0;
    bool unschedulable = false;
    int64_t creation_timestamp = 0;
    int64_t deletion_timestamp = 0;
    node_layout::ListRef labels;
    node_layout::ListRef annotations;
    node_layout::ListRef pod_cidrs;
    node_layout::ListRef taints;
    node_layout::ListRef addresses;
    node_layout::ListRef conditions;
    // scanNodeEvent's fingerprint of the watch event this node was decoded from (0: none, as
    // for a listed node): a later event with the same one is made from this node.
    uint64_t event_fingerprint = 0;
  };
  Fields f_;
};

template <typename T>
NodeList<T>::NodeList(const Node* node, node_layout::ListRef where)
    : node_(node),
      items_(where.size == 0 ? nullptr : reinterpret_cast<const Stored*>(node->bytes_ + where.off)),
      size_(where.size) {}

template <>
inline KeyValue NodeList<KeyValue>::operator[](size_t i) const {
  return {node_->str(items_[i].key), node_->str(items_[i].value)};
}
template <>
inline std::string_view NodeList<std::string_view>::operator[](size_t i) const {
  return node_->str(items_[i]);
}
template <>
inline Taint NodeList<Taint>::operator[](size_t i) const {
  const node_layout::TaintRefs& t = items_[i];
  return {node_->str(t.key), node_->str(t.value), node_->str(t.effect), t.time_added};
}
template <>
inline NodeAddress NodeList<NodeAddress>::operator[](size_t i) const {
  return {node_->str(items_[i].type), node_->str(items_[i].address)};
}
template <>
inline NodeCondition NodeList<NodeCondition>::operator[](size_t i) const {
  const node_layout::ConditionRefs& c = items_[i];
  return {node_->str(c.type), node_->str(c.status), node_->str(c.reason), c.last_heartbeat_time,
          c.last_transition_time};
}

inline std::optional<std::string_view> Node::label(std::string_view k) const {
  return findKey(labels(), k);
}
inline std::optional<std::string_view> Node::annotation(std::string_view k) const {
  return findKey(annotations(), k);
}

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
