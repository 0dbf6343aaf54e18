// NodeDecoder: SAX contexts and fields of core/v1 Node, and freezing into a Node.
#include "host/kube/objects/node_decoder.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>

#include "host/kube/api/time_format.hpp"
#include "host/kube/objects/string_pool.hpp"

namespace ccm::kube {

using detail::Scalar;
using detail::SRef;

namespace {

enum Ctx : int {
  kPodCidrs = detail::kCtxFirstFree,
  kTaints,
  kTaint,
  kAddresses,
  kAddress,
  kConditions,
  kCondition,
  kNodeInfo,
};

enum Field : int {
  kFProviderId = detail::kFieldFirstFree,
  kFPodCidr,
  kFPodCidrs,
  kFTaints,
  kFUnschedulable,
  kFKey,
  kFValue,
  kFEffect,
  kFTimeAdded,
  kFAddresses,
  kFConditions,
  kFNodeInfo,
  kFType,
  kFAddress,
  kFStatusValue,
  kFReason,
  kFHeartbeat,
  kFTransition,
  kFInfo0,  // kFInfo0 + index into kInfoKeys
};

// status.nodeInfo keys, in NodeSystemInfo member order. The first three are unique per node
// and are never interned.
constexpr std::string_view kInfoKeys[10] = {
    "machineID",      "systemUUID",       "bootID",
    "kernelVersion",  "osImage",          "containerRuntimeVersion",
    "kubeletVersion", "kubeProxyVersion", "operatingSystem",
    "architecture",
};

bool keptCondition(std::string_view type) {
  return std::find(std::begin(kKeptNodeConditions), std::end(kKeptNodeConditions), type) !=
         std::end(kKeptNodeConditions);
}

}  // namespace

NodeDecoder::NodeDecoder(size_t pool_entries)
    : pool_entries_(pool_entries), pool_(std::make_shared<StringPool>(pool_entries)) {}

void NodeDecoder::reset() {
  resetSax();
  fingerprint_ = 0;
  if (pool_->full()) {
    // Start a fresh pool; nodes decoded so far keep the old one alive.
    pool_ = std::make_shared<StringPool>(pool_entries_);
  }
  text_.clear();
  meta_.clear();
  provider_id_ = pod_cidr_ = SRef{};
  pod_cidrs_.clear();
  unschedulable_ = false;
  taints_.clear();
  addresses_.clear();
  conditions_.clear();
  for (auto& r : info_) {
    r = SRef{};
  }
}

int NodeDecoder::rootContext() {
  return detail::kCtxRoot;
}

int NodeDecoder::key(int ctx, std::string_view k) {
  if (meta_.owns(ctx)) {
    return meta_.key(ctx, k, text_, *pool_);
  }
  switch (ctx) {
    case detail::kCtxRoot:
      return detail::rootKey(k, decode_status_);
    case detail::kCtxSpec:
      if (k == "providerID") {
        return kFProviderId;
      }
      if (k == "podCIDR") {
        return kFPodCidr;
      }
      if (k == "podCIDRs") {
        return kFPodCidrs;
      }
      if (k == "taints") {
        return kFTaints;
      }
      if (k == "unschedulable") {
        return kFUnschedulable;
      }
      return 0;
    case kTaint:
      if (k == "key") {
        return kFKey;
      }
      if (k == "value") {
        return kFValue;
      }
      if (k == "effect") {
        return kFEffect;
      }
      if (k == "timeAdded") {
        return kFTimeAdded;
      }
      return 0;
    case detail::kCtxStatus:
      if (k == "addresses") {
        return kFAddresses;
      }
      if (k == "conditions") {
        return kFConditions;
      }
      if (k == "nodeInfo") {
        return kFNodeInfo;
      }
      return 0;
    case kAddress:
      if (k == "type") {
        return kFType;
      }
      if (k == "address") {
        return kFAddress;
      }
      return 0;
    case kCondition:
      if (k == "type") {
        return kFType;
      }
      if (k == "status") {
        return kFStatusValue;
      }
      if (k == "reason") {
        return kFReason;
      }
      if (k == "lastHeartbeatTime") {
        return kFHeartbeat;
      }
      if (k == "lastTransitionTime") {
        return kFTransition;
      }
      return 0;
    case kNodeInfo:
      for (int i = 0; i < 10; ++i) {
        if (k == kInfoKeys[i]) {
          return kFInfo0 + i;
        }
      }
      return 0;
    default:
      return 0;
  }
}

int NodeDecoder::child(int ctx, int field, bool is_array) {
  if (meta_.owns(ctx)) {
    return meta_.child(ctx, field, is_array);
  }
  switch (ctx) {
    case detail::kCtxRoot:
      return detail::rootChild(field, is_array);
    case detail::kCtxSpec:
      if (is_array && field == kFPodCidrs) {
        return kPodCidrs;
      }
      if (is_array && field == kFTaints) {
        return kTaints;
      }
      return 0;
    case kTaints:
      if (is_array) {
        return 0;
      }
      taint_ = RawTaint{};
      return kTaint;
    case detail::kCtxStatus:
      if (is_array && field == kFAddresses) {
        return kAddresses;
      }
      if (is_array && field == kFConditions) {
        return kConditions;
      }
      if (!is_array && field == kFNodeInfo) {
        return kNodeInfo;
      }
      return 0;
    case kAddresses:
      if (is_array) {
        return 0;
      }
      address_ = RawAddress{};
      return kAddress;
    case kConditions:
      if (is_array) {
        return 0;
      }
      condition_ = RawCondition{};
      condition_unwanted_ = false;
      return kCondition;
    default:
      return 0;
  }
}

void NodeDecoder::value(int ctx, int field, const Scalar& v) {
  if (meta_.owns(ctx)) {
    meta_.value(ctx, field, v, text_, *pool_);
    return;
  }
  StringPool& pool = *pool_;
  switch (ctx) {
    case detail::kCtxSpec:
      if (field == kFUnschedulable) {
        unschedulable_ = v.type == Scalar::Type::Bool && v.b;
      } else if (v.isString() && field == kFProviderId) {
        provider_id_ = text_.add(v.s);
      } else if (v.isString() && field == kFPodCidr) {
        pod_cidr_ = text_.add(v.s);
      }
      return;
    case kPodCidrs:
      if (v.isString()) {
        pod_cidrs_.push_back(text_.add(v.s));
      }
      return;
    case kTaint:
      if (!v.isString()) {
        return;
      }
      switch (field) {
        case kFKey:
          taint_.key = text_.intern(pool, v.s);
          break;
        case kFValue:
          taint_.value = text_.intern(pool, v.s);
          break;
        case kFEffect:
          taint_.effect = text_.intern(pool, v.s);
          break;
        case kFTimeAdded:
          taint_.time_added = detail::timestampOf(v);
          break;
        default:
          break;
      }
      return;
    case kAddress:
      if (!v.isString()) {
        return;
      }
      if (field == kFType) {
        address_.type = text_.intern(pool, v.s);
      }
      if (field == kFAddress) {
        address_.address = text_.add(v.s);
      }
      return;
    case kCondition:
      // A condition whose type came first (as API servers write it) and is not kept reads
      // nothing more; one whose type comes later is dropped at its end.
      if (!v.isString() || condition_unwanted_) {
        return;
      }
      switch (field) {
        case kFType:
          if (!keptCondition(v.s)) {
            condition_unwanted_ = true;
            return;
          }
          condition_.type = text_.intern(pool, v.s);
          break;
        case kFStatusValue:
          condition_.status = text_.intern(pool, v.s);
          break;
        case kFReason:
          condition_.reason = text_.intern(pool, v.s);
          break;
        case kFHeartbeat:
          condition_.heartbeat = detail::timestampOf(v);
          break;
        case kFTransition:
          condition_.transition = detail::timestampOf(v);
          break;
        default:
          break;
      }
      return;
    case kNodeInfo:
      if (v.isString() && field >= kFInfo0 && field < kFInfo0 + 10) {
        int i = field - kFInfo0;
        info_[i] = i < 3 ? text_.add(v.s) : text_.intern(pool, v.s);
      }
      return;
    default:
      return;
  }
}

void NodeDecoder::end(int ctx) {
  switch (ctx) {
    case kTaint:
      taints_.push_back(taint_);
      break;
    case kAddress:
      addresses_.push_back(address_);
      break;
    case kCondition:
      if (!condition_unwanted_ && keptCondition(text_.view(condition_.type))) {
        conditions_.push_back(condition_);
      }
      break;
    default:
      break;
  }
}

bool NodeDecoder::onlyHeartbeatDiffers(const Node& prev) const {
  if (!decode_status_ || prev.bytes_ == nullptr || prev.pool_ == nullptr) {
    return false;
  }
  auto v = [this](SRef r) { return text_.view(r); };
  if (v(meta_.name) != prev.name() || v(meta_.uid) != prev.uid() ||
      meta_.creation_timestamp != prev.creationTimestamp() ||
      meta_.deletion_timestamp != prev.deletionTimestamp()) {
    return false;
  }
  auto same_kv = [&v](const detail::KV& a, const KeyValue& b) {
    return v(a.key) == b.key && v(a.value) == b.value;
  };
  NodeList<KeyValue> labels = prev.labels();
  NodeList<KeyValue> annotations = prev.annotations();
  if (!std::equal(meta_.labels.begin(), meta_.labels.end(), labels.begin(), labels.end(),
                  same_kv) ||
      !std::equal(meta_.annotations.begin(), meta_.annotations.end(), annotations.begin(),
                  annotations.end(), same_kv)) {
    return false;
  }
  NodeList<std::string_view> cidrs = prev.podCidrs();
  if (v(provider_id_) != prev.providerId() || v(pod_cidr_) != prev.podCidr() ||
      unschedulable_ != prev.unschedulable() ||
      !std::equal(pod_cidrs_.begin(), pod_cidrs_.end(), cidrs.begin(), cidrs.end(),
                  [&v](SRef a, std::string_view b) { return v(a) == b; })) {
    return false;
  }
  auto same_taint = [&v](const RawTaint& a, const Taint& b) {
    return v(a.key) == b.key && v(a.value) == b.value && v(a.effect) == b.effect &&
           a.time_added == b.time_added;
  };
  auto same_address = [&v](const RawAddress& a, const NodeAddress& b) {
    return v(a.type) == b.type && v(a.address) == b.address;
  };
  // Everything of a condition but its lastHeartbeatTime.
  auto same_condition = [&v](const RawCondition& a, const NodeCondition& b) {
    return v(a.type) == b.type && v(a.status) == b.status && v(a.reason) == b.reason &&
           a.transition == b.last_transition_time;
  };
  NodeList<Taint> taints = prev.taints();
  NodeList<NodeAddress> addresses = prev.addresses();
  NodeList<NodeCondition> conditions = prev.conditions();
  if (!std::equal(taints_.begin(), taints_.end(), taints.begin(), taints.end(), same_taint) ||
      !std::equal(addresses_.begin(), addresses_.end(), addresses.begin(), addresses.end(),
                  same_address) ||
      !std::equal(conditions_.begin(), conditions_.end(), conditions.begin(), conditions.end(),
                  same_condition)) {
    return false;
  }
  for (int i = 0; i < 10; ++i) {
    if (v(info_[i]) != prev.str(prev.f_.info[i])) {
      return false;
    }
  }
  return true;
}

namespace {

// allocate_shared's allocator for a node and its own bytes: the control block (which holds
// the Node) and then `own` bytes, in one allocation. Its only state is a pointer to the
// request, which allocate() fills in with where those bytes begin.
struct NodeAllocation {
  size_t own = 0;
  char* bytes = nullptr;
  size_t total = 0;
};

template <typename T>
struct NodeAllocator {
  using value_type = T;
  explicit NodeAllocator(NodeAllocation* r) : request(r) {}
  template <typename U>
  explicit NodeAllocator(const NodeAllocator<U>& other) : request(other.request) {}
  T* allocate(size_t n) {
    size_t head = (n * sizeof(T) + 7) & ~size_t{7};
    request->total = head + request->own;
    void* block = ::operator new(request->total);
    request->bytes = static_cast<char*>(block) + head;
    return static_cast<T*>(block);
  }
  void deallocate(T* p, size_t /*n*/) noexcept { ::operator delete(p); }
  template <typename U>
  bool operator==(const NodeAllocator<U>& other) const {
    return request == other.request;
  }
  NodeAllocation* request;
};

}  // namespace

std::shared_ptr<Node> NodeDecoder::allocate(const Node::Fields& fields,
                                            std::shared_ptr<const StringPool> pool, size_t own,
                                            char*& bytes) {
  NodeAllocation request{own};
  auto node = std::allocate_shared<Node>(NodeAllocator<Node>(&request));
  bytes = request.bytes;
  node->bytes_ = bytes;
  node->pool_ = std::move(pool);
  node->f_ = fields;
  node->f_.own_size = static_cast<uint32_t>(own);
  node->f_.arena_bytes = static_cast<uint32_t>(request.total - sizeof(Node));
  return node;
}

std::shared_ptr<const Node> NodeDecoder::heartbeatCopy(const Node& prev, std::string_view rv,
                                                       std::span<const int64_t> heartbeats,
                                                       uint64_t fingerprint) {
  // The previous node's own version tail, if it has one, is dropped: a node heartbeating for
  // days keeps the size it was decoded with.
  size_t kept = prev.f_.own_size - prev.f_.rv_tail;
  size_t tail = rv.empty() ? 0 : varint::lengthBytes(rv.size()) + rv.size();
  Node::Fields f = prev.f_;
  f.resource_version = rv.empty() ? 0 : static_cast<node_layout::StrRef>(kept);
  f.rv_tail = static_cast<uint32_t>(tail);
  f.event_fingerprint = fingerprint;
  char* bytes = nullptr;
  std::shared_ptr<Node> node = allocate(f, prev.pool_, kept + tail, bytes);
  std::memcpy(bytes, prev.bytes_, kept);
  if (!rv.empty()) {
    size_t prefix = varint::writeLength(bytes + kept, rv.size());
    std::memcpy(bytes + kept + prefix, rv.data(), rv.size());
  }
  auto* conditions = reinterpret_cast<node_layout::ConditionRefs*>(bytes + f.conditions.off);
  for (size_t i = 0; i < f.conditions.size; ++i) {
    conditions[i].last_heartbeat_time = heartbeats[i];
  }
  return node;
}

std::shared_ptr<const Node> NodeDecoder::finishScanned(const Node& prev,
                                                       const NodeEventScan& scan) {
  if (prev.f_.event_fingerprint == 0 || scan.fingerprint != prev.f_.event_fingerprint ||
      scan.resource_version.empty() || scan.name != prev.name() || prev.bytes_ == nullptr) {
    return nullptr;
  }
  // The kept conditions, in order, are prev's (the same bytes decoded); their heartbeats are
  // the event's.
  NodeList<NodeCondition> kept = prev.conditions();
  heartbeats_.clear();
  for (const NodeEventScan::Condition& c : scan.conditions) {
    if (!keptCondition(c.type)) {
      continue;
    }
    if (heartbeats_.size() == kept.size() || kept[heartbeats_.size()].type != c.type) {
      return nullptr;
    }
    heartbeats_.push_back(c.heartbeat.empty() ? 0 : parseRfc3339(c.heartbeat).value_or(0));
  }
  if (heartbeats_.size() != kept.size()) {
    return nullptr;
  }
  ++heartbeat_copies_;
  return heartbeatCopy(prev, scan.resource_version, heartbeats_, scan.fingerprint);
}

void NodeDecoder::materialize() {
  StringPool& pool = *pool_;
  meta_.materialize(text_, pool);
  text_.materialize(pool, provider_id_);
  text_.materialize(pool, pod_cidr_);
  for (SRef& r : pod_cidrs_) {
    text_.materialize(pool, r);
  }
  for (RawTaint& t : taints_) {
    text_.materialize(pool, t.key);
    text_.materialize(pool, t.value);
    text_.materialize(pool, t.effect);
  }
  for (RawAddress& a : addresses_) {
    text_.materialize(pool, a.type);
    text_.materialize(pool, a.address);
  }
  for (RawCondition& c : conditions_) {
    text_.materialize(pool, c.type);
    text_.materialize(pool, c.status);
    text_.materialize(pool, c.reason);
  }
  for (SRef& r : info_) {
    text_.materialize(pool, r);
  }
}

node_layout::StrRef NodeDecoder::place(SRef r) {
  if (r.ptr != nullptr) {
    return node_layout::kPooled | r.off;  // interned: off is its position in the pool
  }
  if (r.len == 0) {
    return 0;
  }
  // A node has a dozen or two strings of its own; past kMaxLooked (a node with hundreds of
  // annotations) a repeat is stored again rather than looked for in a growing list.
  constexpr size_t kMaxLooked = 64;
  if (placing_.placed.size() <= kMaxLooked) {
    for (const Placing::Placed& p : placing_.placed) {
      if (p.off == r.off && p.len == r.len) {
        return p.ref;
      }
    }
  }
  auto ref = static_cast<node_layout::StrRef>(own_.size());
  char prefix[10];
  own_.append(prefix, varint::writeLength(prefix, r.len));
  own_.append(text_.view(r));
  placing_.placed.push_back({r.off, r.len, ref});
  return ref;
}

namespace {

// Lays out a list of `src` at `end` (8-byte aligned) and moves `end` past it.
template <typename T>
node_layout::ListRef layList(size_t& end, const std::vector<T>& src) {
  if (src.empty()) {
    return {};
  }
  end = (end + 7) & ~size_t{7};
  node_layout::ListRef where{static_cast<uint32_t>(end), static_cast<uint32_t>(src.size())};
  end += src.size() * sizeof(T);
  return where;
}

// Copies `src` to where layList put it.
template <typename T>
void writeList(char* bytes, node_layout::ListRef where, const std::vector<T>& src) {
  if (!src.empty()) {
    std::memcpy(bytes + where.off, src.data(), src.size() * sizeof(T));
  }
}

}  // namespace

std::shared_ptr<const Node> NodeDecoder::finish(const Node* previous) {
  meta_.sort(text_);
  if (previous != nullptr && onlyHeartbeatDiffers(*previous)) {
    ++heartbeat_copies_;
    heartbeats_.clear();
    for (const RawCondition& c : conditions_) {
      heartbeats_.push_back(c.heartbeat);
    }
    return heartbeatCopy(*previous, text_.view(meta_.resource_version), heartbeats_, fingerprint_);
  }
  materialize();
  // The node's own bytes: a zero length at 0 (reference 0, the empty string), the strings no
  // pool holds, then the lists.
  own_.assign(1, '\0');
  placing_.clear();
  Node::Fields f;
  f.name = place(meta_.name);
  f.uid = place(meta_.uid);
  f.resource_version = place(meta_.resource_version);
  f.creation_timestamp = meta_.creation_timestamp;
  f.deletion_timestamp = meta_.deletion_timestamp;
  f.provider_id = place(provider_id_);
  f.pod_cidr = place(pod_cidr_);
  f.unschedulable = unschedulable_;
  for (int i = 0; i < 10; ++i) {
    f.info[i] = place(info_[i]);
  }
  // Lists lie after the text, whose size is known only once every string is placed: their
  // strings first, then their offsets.
  auto kv = [this](const detail::KV& e) {
    return node_layout::KeyValueRefs{place(e.key), place(e.value)};
  };
  Placing& p = placing_;
  for (const detail::KV& e : meta_.labels) {
    p.labels.push_back(kv(e));
  }
  for (const detail::KV& e : meta_.annotations) {
    p.annotations.push_back(kv(e));
  }
  for (SRef r : pod_cidrs_) {
    p.cidrs.push_back(place(r));
  }
  for (const RawTaint& t : taints_) {
    p.taints.push_back({place(t.key), place(t.value), place(t.effect), 0, t.time_added});
  }
  for (const RawAddress& a : addresses_) {
    p.addresses.push_back({place(a.type), place(a.address)});
  }
  for (const RawCondition& c : conditions_) {
    p.conditions.push_back(
        {place(c.type), place(c.status), place(c.reason), 0, c.heartbeat, c.transition});
  }
  // The lists follow the text.
  size_t end = own_.size();
  f.labels = layList(end, p.labels);
  f.annotations = layList(end, p.annotations);
  f.pod_cidrs = layList(end, p.cidrs);
  f.taints = layList(end, p.taints);
  f.addresses = layList(end, p.addresses);
  f.conditions = layList(end, p.conditions);
  f.event_fingerprint = fingerprint_;

  char* bytes = nullptr;
  std::shared_ptr<Node> node = allocate(f, pool_, end, bytes);
  std::memcpy(bytes, own_.data(), own_.size());
  std::memset(bytes + own_.size(), 0, end - own_.size());  // alignment padding included
  writeList(bytes, f.labels, p.labels);
  writeList(bytes, f.annotations, p.annotations);
  writeList(bytes, f.pod_cidrs, p.cidrs);
  writeList(bytes, f.taints, p.taints);
  writeList(bytes, f.addresses, p.addresses);
  writeList(bytes, f.conditions, p.conditions);
  return node;
}

ApiResult<std::shared_ptr<const Node>> decodeNode(std::string_view json, NodeParts parts) {
  // One decoder per thread, reused: its string pool and scratch buffers outlive the call
  // (a fresh decoder per call allocated a pool and a 16 KB chunk for every node decoded).
  // Its pool is kept small: every thread that decodes a node holds one.
  thread_local NodeDecoder decoder(4096);
  decoder.reset();
  decoder.decodeStatus(parts == NodeParts::kAll);
  thread_local std::string scratch;
  rapidjson::Reader reader;
  rapidjson::ParseResult ok = detail::parseInMemory<rapidjson::kParseDefaultFlags>(
      reader, json, scratch, decoder, &decoder.skipSignal());
  if (!ok) {
    return ApiStatus(0, Reason::Decode,
                     std::string("invalid Node JSON: ") + rapidjson::GetParseError_En(ok.Code()));
  }
  return decoder.finish();
}

}  // namespace ccm::kube
