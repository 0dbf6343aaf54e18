// NodeDecoder: a streaming (SAX) decoder from core/v1 Node JSON straight into the compact
// Node. Feed it the SAX events of one object (directly with rapidjson::Reader, or through the
// watch/list envelope decoders), then call finish(). Scratch buffers are reused from object
// to object, so steady-state decoding allocates only the finished Node.
//
// THREAD: one thread at a time.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/kube/objects/node.hpp"
#include "host/kube/objects/node_event_scan.hpp"
#include "host/kube/objects/object_decoder.hpp"

namespace ccm::kube {

class NodeDecoder : public detail::SaxDecoder<NodeDecoder> {
 public:
  using Object = Node;
  // Unwanted values (images, capacity, managedFields, ...) are skipped as raw bytes when the
  // stream is a SkippingStream.
  static constexpr bool kRawSkip = true;

  // pool_entries: how many distinct strings one string pool interns before the decoder
  // starts a fresh one (nodes keep the pool they were decoded with alive).
  explicit NodeDecoder(size_t pool_entries = 65536);

  // Forgets the object being decoded (call before feeding a new one).
  void reset();
  // With false, `status` is skipped unread (addresses, conditions and nodeInfo stay empty):
  // for callers that need only metadata and spec, such as a write's answer.
  void decodeStatus(bool on) { decode_status_ = on; }
  // Until reset(), the strings the parser hands in are noted where they lie and copied or
  // interned only when finish() needs them: for a parse whose input stays in place and
  // unchanged until finish() returns (an in-situ parse of a buffered event).
  void deferStrings() { text_.deferStrings(); }
  // Freezes what was decoded into an immutable Node. `previous`: the cached version of the
  // same node, if any. When what was decoded differs from it only in resourceVersion and the
  // conditions' lastHeartbeatTime (a kubelet's status heartbeat), the new Node is made from
  // `previous` (its arena copied, the version and the heartbeat times replaced) and no string
  // is copied or interned; the result is equal to a full decode either way.
  std::shared_ptr<const Node> finish(const Node* previous = nullptr);
  // The fingerprint (scanNodeEvent) of the watch event being decoded, kept in the Node that
  // finish() makes (0 = none; reset() clears it).
  void fingerprint(uint64_t value) { fingerprint_ = value; }
  // The next version of `prev` from a scanned watch event, without parsing it: when the scan's
  // fingerprint is prev's, the event differs from the one prev was decoded from only in its
  // type, resourceVersion, managedFields times and heartbeat times, so the node is prev's
  // arena copied with the new version and heartbeat times (as finish() does for a heartbeat).
  // nullptr when it cannot be made so (the event must then be parsed).
  std::shared_ptr<const Node> finishScanned(const Node& prev, const NodeEventScan& scan);
  // How many finish() calls made their Node from the previous version.
  uint64_t heartbeatCopies() const { return heartbeat_copies_; }
  // The name / resourceVersion decoded so far (valid until reset()).
  std::string_view name() const { return text_.view(meta_.name); }
  std::string_view resourceVersion() const { return text_.view(meta_.resource_version); }
  // The cache key of the decoded object (the name).
  std::string_view key() const { return name(); }

  // SAX hooks (see detail::SaxDecoder).
  int rootContext();
  int key(int ctx, std::string_view key);
  int child(int ctx, int field, bool is_array);
  void value(int ctx, int field, const detail::Scalar& v);
  void end(int ctx);

 private:
  struct RawTaint {
    detail::SRef key, value, effect;
    int64_t time_added = 0;
  };
  struct RawAddress {
    detail::SRef type, address;
  };
  struct RawCondition {
    detail::SRef type, status, reason;
    int64_t heartbeat = 0, transition = 0;
  };

  // True when what was decoded equals `prev` but for resourceVersion and heartbeat times.
  bool onlyHeartbeatDiffers(const Node& prev) const;
  // `prev` with version `rv` and its conditions' heartbeat times `heartbeats` (one each).
  static std::shared_ptr<const Node> heartbeatCopy(const Node& prev, std::string_view rv,
                                                   std::span<const int64_t> heartbeats,
                                                   uint64_t fingerprint);
  // Copies or interns every deferred string.
  void materialize();
  // A node with `fields` whose own bytes (`own` of them, at `bytes`, for the caller to fill)
  // share its allocation; it sets the fields' own_size and arena_bytes.
  static std::shared_ptr<Node> allocate(const Node::Fields& fields,
                                        std::shared_ptr<const StringPool> pool, size_t own,
                                        char*& bytes);
  // The node's reference to a materialized string: its pool position, or where it is put in
  // own_ (a string the node holds twice is put there once).
  node_layout::StrRef place(detail::SRef r);

  // Scratch of finish(), reused from node to node.
  struct Placing {
    struct Placed {
      uint32_t off, len;  // in text_
      node_layout::StrRef ref;
    };
    std::vector<Placed> placed;
    std::vector<node_layout::KeyValueRefs> labels, annotations;
    std::vector<node_layout::StrRef> cidrs;
    std::vector<node_layout::TaintRefs> taints;
    std::vector<node_layout::AddressRefs> addresses;
    std::vector<node_layout::ConditionRefs> conditions;
    void clear() {
      placed.clear();
      labels.clear();
      annotations.clear();
      cidrs.clear();
      taints.clear();
      addresses.clear();
      conditions.clear();
    }
  };
  Placing placing_;
  std::string own_;  // the text of the node being finished

  size_t pool_entries_;
  uint64_t heartbeat_copies_ = 0;
  uint64_t fingerprint_ = 0;
  std::vector<int64_t> heartbeats_;  // scratch of heartbeatCopy's callers
  std::shared_ptr<StringPool> pool_;
  detail::ScratchText text_;
  detail::MetaScratch meta_;
  detail::SRef provider_id_, pod_cidr_;
  std::vector<detail::SRef> pod_cidrs_;
  bool unschedulable_ = false;
  bool decode_status_ = true;
  std::vector<RawTaint> taints_;
  std::vector<RawAddress> addresses_;
  std::vector<RawCondition> conditions_;
  detail::SRef info_[10];
  RawTaint taint_;
  RawAddress address_;
  RawCondition condition_;
  bool condition_unwanted_ = false;  // the condition being read has a type not kept
};

}  // namespace ccm::kube
