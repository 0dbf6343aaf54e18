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
  if (!decode_status_ || prev.arena_ == nullptr || prev.pool_ == nullptr) {
    return false;
  }
  auto v = [this](SRef r) { return text_.view(r); };
  if (v(meta_.name) != prev.name || v(meta_.uid) != prev.uid ||
      meta_.creation_timestamp != prev.creation_timestamp ||
      meta_.deletion_timestamp != prev.deletion_timestamp) {
    return false;
  }
  auto same_kv = [&v](const detail::KV& a, const KeyValue& b) {
    return v(a.key) == b.key && v(a.value) == b.value;
  };
  if (!std::equal(meta_.labels.begin(), meta_.labels.end(), prev.labels.begin(), prev.labels.end(),
                  same_kv) ||
      !std::equal(meta_.annotations.begin(), meta_.annotations.end(), prev.annotations.begin(),
                  prev.annotations.end(), same_kv)) {
    return false;
  }
  if (v(provider_id_) != prev.provider_id || v(pod_cidr_) != prev.pod_cidr ||
      unschedulable_ != prev.unschedulable ||
      !std::equal(pod_cidrs_.begin(), pod_cidrs_.end(), prev.pod_cidrs.begin(),
                  prev.pod_cidrs.end(), [&v](SRef a, std::string_view b) { return v(a) == b; })) {
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
  if (!std::equal(taints_.begin(), taints_.end(), prev.taints.begin(), prev.taints.end(),
                  same_taint) ||
      !std::equal(addresses_.begin(), addresses_.end(), prev.addresses.begin(),
                  prev.addresses.end(), same_address) ||
      !std::equal(conditions_.begin(), conditions_.end(), prev.conditions.begin(),
                  prev.conditions.end(), same_condition)) {
    return false;
  }
  const NodeSystemInfo& info = prev.node_info;
  const std::string_view prev_info[10] = {info.machine_id,       info.system_uuid,
                                          info.boot_id,          info.kernel_version,
                                          info.os_image,         info.container_runtime_version,
                                          info.kubelet_version,  info.kube_proxy_version,
                                          info.operating_system, info.architecture};
  for (int i = 0; i < 10; ++i) {
    if (v(info_[i]) != prev_info[i]) {
      return false;
    }
  }
  return true;
}

namespace {

// Moves the views of a copied arena from the old block to the new one. Views outside the old
// block (interned strings, empty views) are left as they are.
class Relocator {
 public:
  Relocator(const char* old_base, size_t size, char* new_base)
      : old_(reinterpret_cast<uintptr_t>(old_base)), size_(size), new_base_(new_base) {}

  std::string_view operator()(std::string_view s) const {
    if (s.empty() || !inside(s.data())) {
      return s;
    }
    return {new_base_ + offset(s.data()), s.size()};
  }
  // The copy of an array of the old block, its elements' views moved by `fix`.
  template <typename T, typename Fix>
  std::span<const T> array(std::span<const T> s, Fix&& fix) const {
    if (s.empty()) {
      return {};
    }
    if (!inside(s.data())) {
      return s;
    }
    T* out = std::launder(reinterpret_cast<T*>(new_base_ + offset(s.data())));
    for (size_t i = 0; i < s.size(); ++i) {
      fix(out[i]);
    }
    return {out, s.size()};
  }

 private:
  bool inside(const void* p) const {
    auto at = reinterpret_cast<uintptr_t>(p);
    return at >= old_ && at < old_ + size_;
  }
  size_t offset(const void* p) const { return reinterpret_cast<uintptr_t>(p) - old_; }

  uintptr_t old_;
  size_t size_;
  char* new_base_;
};

}  // namespace

std::shared_ptr<const Node> NodeDecoder::heartbeatCopy(const Node& prev, std::string_view rv,
                                                       std::span<const int64_t> heartbeats,
                                                       uint64_t fingerprint) {
  // The previous node's own version tail, if it has one, is dropped: a node heartbeating for
  // days keeps the size it was decoded with.
  size_t kept = prev.arena_bytes_ - prev.rv_tail_;
  size_t total = kept + rv.size();
  auto block = std::make_shared_for_overwrite<uint64_t[]>((total + 7) / 8 + 1);
  char* base = reinterpret_cast<char*>(block.get());
  const char* old_base = reinterpret_cast<const char*>(prev.arena_.get());
  std::memcpy(base, old_base, kept);
  if (!rv.empty()) {
    std::memcpy(base + kept, rv.data(), rv.size());
  }
  Relocator move(old_base, kept, base);

  auto node = std::make_shared<Node>(prev);
  node->name = move(prev.name);
  node->uid = move(prev.uid);
  node->resource_version =
      rv.empty() ? std::string_view() : std::string_view(base + kept, rv.size());
  auto fix_kv = [&move](KeyValue& e) {
    e.key = move(e.key);
    e.value = move(e.value);
  };
  node->labels = move.array(prev.labels, fix_kv);
  node->annotations = move.array(prev.annotations, fix_kv);
  node->provider_id = move(prev.provider_id);
  node->pod_cidr = move(prev.pod_cidr);
  node->pod_cidrs = move.array(prev.pod_cidrs, [&move](std::string_view& s) { s = move(s); });
  node->taints = move.array(prev.taints, [&move](Taint& t) {
    t.key = move(t.key);
    t.value = move(t.value);
    t.effect = move(t.effect);
  });
  node->addresses = move.array(prev.addresses, [&move](NodeAddress& a) {
    a.type = move(a.type);
    a.address = move(a.address);
  });
  size_t index = 0;
  node->conditions = move.array(prev.conditions, [&](NodeCondition& c) {
    c.type = move(c.type);
    c.status = move(c.status);
    c.reason = move(c.reason);
    c.last_heartbeat_time = heartbeats[index++];
  });
  NodeSystemInfo& info = node->node_info;
  for (std::string_view* field :
       {&info.machine_id, &info.system_uuid, &info.boot_id, &info.kernel_version, &info.os_image,
        &info.container_runtime_version, &info.kubelet_version, &info.kube_proxy_version,
        &info.operating_system, &info.architecture}) {
    *field = move(*field);
  }
  node->arena_bytes_ = static_cast<uint32_t>(total);
  node->rv_tail_ = static_cast<uint32_t>(rv.size());
  node->arena_ = std::move(block);
  node->event_fingerprint_ = fingerprint;
  return node;
}

std::shared_ptr<const Node> NodeDecoder::finishScanned(const Node& prev,
                                                       const NodeEventScan& scan) {
  if (prev.event_fingerprint_ == 0 || scan.fingerprint != prev.event_fingerprint_ ||
      scan.resource_version.empty() || scan.name != prev.name || prev.arena_ == nullptr) {
    return nullptr;
  }
  // The kept conditions, in order, are prev's (the same bytes decoded); their heartbeats are
  // the event's.
  heartbeats_.clear();
  for (const NodeEventScan::Condition& c : scan.conditions) {
    if (!keptCondition(c.type)) {
      continue;
    }
    if (heartbeats_.size() == prev.conditions.size() ||
        prev.conditions[heartbeats_.size()].type != c.type) {
      return nullptr;
    }
    heartbeats_.push_back(c.heartbeat.empty() ? 0 : parseRfc3339(c.heartbeat).value_or(0));
  }
  if (heartbeats_.size() != prev.conditions.size()) {
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
  detail::Arena arena;
  size_t labels_off = arena.reserve<KeyValue>(meta_.labels.size());
  size_t annotations_off = arena.reserve<KeyValue>(meta_.annotations.size());
  size_t cidrs_off = arena.reserve<std::string_view>(pod_cidrs_.size());
  size_t taints_off = arena.reserve<Taint>(taints_.size());
  size_t addresses_off = arena.reserve<NodeAddress>(addresses_.size());
  size_t conditions_off = arena.reserve<NodeCondition>(conditions_.size());
  arena.allocate(text_.text());

  auto node = std::make_shared<Node>();
  auto r = [&arena](SRef ref) { return arena.resolve(ref); };
  node->name = r(meta_.name);
  node->uid = r(meta_.uid);
  node->resource_version = r(meta_.resource_version);
  node->creation_timestamp = meta_.creation_timestamp;
  node->deletion_timestamp = meta_.deletion_timestamp;
  auto kv = [&r](const detail::KV& e) { return KeyValue{r(e.key), r(e.value)}; };
  auto [lp, ln] = detail::fillArray<KeyValue>(arena, labels_off, meta_.labels, kv);
  node->labels = {lp, ln};
  auto [ap, an] = detail::fillArray<KeyValue>(arena, annotations_off, meta_.annotations, kv);
  node->annotations = {ap, an};
  node->provider_id = r(provider_id_);
  node->pod_cidr = r(pod_cidr_);
  auto [cp, cn] = detail::fillArray<std::string_view>(arena, cidrs_off, pod_cidrs_, r);
  node->pod_cidrs = {cp, cn};
  auto [tp, tn] = detail::fillArray<Taint>(arena, taints_off, taints_, [&r](const RawTaint& t) {
    return Taint{r(t.key), r(t.value), r(t.effect), t.time_added};
  });
  node->taints = {tp, tn};
  node->unschedulable = unschedulable_;
  auto [dp, dn] =
      detail::fillArray<NodeAddress>(arena, addresses_off, addresses_, [&r](const RawAddress& a) {
        return NodeAddress{r(a.type), r(a.address)};
      });
  node->addresses = {dp, dn};
  auto [np, nn] = detail::fillArray<NodeCondition>(
      arena, conditions_off, conditions_, [&r](const RawCondition& c) {
        return NodeCondition{r(c.type), r(c.status), r(c.reason), c.heartbeat, c.transition};
      });
  node->conditions = {np, nn};
  NodeSystemInfo& info = node->node_info;
  info.machine_id = r(info_[0]);
  info.system_uuid = r(info_[1]);
  info.boot_id = r(info_[2]);
  info.kernel_version = r(info_[3]);
  info.os_image = r(info_[4]);
  info.container_runtime_version = r(info_[5]);
  info.kubelet_version = r(info_[6]);
  info.kube_proxy_version = r(info_[7]);
  info.operating_system = r(info_[8]);
  info.architecture = r(info_[9]);
  node->arena_bytes_ = static_cast<uint32_t>(arena.bytes() + text_.size());
  node->arena_ = arena.release();
  node->pool_ = pool_;
  node->event_fingerprint_ = fingerprint_;
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
