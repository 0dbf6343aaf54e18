// Internal building blocks of the streaming object decoders (node_decoder, service_decoder):
// a CRTP RapidJSON SAX handler that tracks where in the document it is and skips what the
// decoder does not want, scratch storage for the strings of the object being decoded, and
// the arena that freezes a decoded object into one allocation.
//
// Nothing here keeps a DOM: each SAX event is looked at once; strings the caches keep are
// copied (or interned) as they arrive.
//
// THREAD: a decoder is used by one thread at a time.
#pragma once

#include <rapidjson/reader.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "host/kube/objects/string_pool.hpp"
#include "host/kube/transport/raw_skipper.hpp"

namespace ccm::kube::detail {

// A decoded scalar JSON value.
struct Scalar {
  enum class Type : uint8_t { Null, Bool, Int, Double, String };
  Type type = Type::Null;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string_view s;

  bool isString() const { return type == Type::String; }
  bool isInt() const { return type == Type::Int; }
};

// A string of the object being decoded: either interned (ptr set, stable, `off` its position
// in the pool) or at `off` in the scratch text (resolved when the object is frozen), or, while
// the text defers its strings, still in the input (ptr set, `off` has kDeferred set and the
// interning limit below it).
struct SRef {
  static constexpr uint32_t kDeferred = 0x80000000U;
  const char* ptr = nullptr;
  uint32_t off = 0;
  uint32_t len = 0;

  bool deferred() const { return ptr != nullptr && (off & kDeferred) != 0; }
};

// The text an object keeps of its own. A string it already holds (a node's name again as
// its hostname label and its Hostname and InternalDNS addresses) is stored once: add() looks
// for it in what is there before appending.
//
// Deferring: while the strings handed in stay where they are until the object is finished (an
// in-situ parse of a buffered watch event), add() and intern() only note where each string
// lies, and materialize() does the copy or the interning later, if the object is frozen at
// all. A decoder that finds the object equal to one it already has (a kubelet's heartbeat)
// then never copies or interns anything.
class ScratchText {
 public:
  // Strings shorter than this are appended without looking (a match saves little), and so is
  // everything once the text is longer than kDedupWithin (the look costs more than it saves).
  static constexpr size_t kDedupMin = 8;
  static constexpr size_t kDedupWithin = 2048;

  // Also stops deferring.
  void clear() {
    text_.clear();
    defer_ = false;
  }
  // From now until clear(), strings are noted, not copied: the caller promises that every
  // view handed to add() or intern() stays valid and unchanged until materialize() or clear().
  void deferStrings() { defer_ = true; }
  bool deferring() const { return defer_; }
  // Copies or interns a deferred string as add() or intern() would have when it was handed in.
  void materialize(StringPool& pool, SRef& r) {
    if (!r.deferred()) {
      return;
    }
    std::string_view s(r.ptr, r.len);
    uint32_t max_len = r.off & ~SRef::kDeferred;
    r = max_len == 0 ? copy(s) : internNow(pool, s, max_len);
  }
  SRef add(std::string_view s) {
    if (defer_) {
      return SRef{s.data(), SRef::kDeferred, static_cast<uint32_t>(s.size())};
    }
    return copy(s);
  }
  // Interns s in `pool` when it is short; otherwise (or when the pool is full) copies it.
  SRef intern(StringPool& pool, std::string_view s, size_t max_len = 96) {
    if (defer_) {
      return SRef{s.data(), SRef::kDeferred | static_cast<uint32_t>(max_len),
                  static_cast<uint32_t>(s.size())};
    }
    return internNow(pool, s, max_len);
  }
  size_t size() const { return text_.size(); }
  const std::string& text() const { return text_; }
  // The current text of a reference (valid until the next add()).
  std::string_view view(SRef r) const {
    if (r.ptr != nullptr) {
      return {r.ptr, r.len};
    }
    return std::string_view(text_).substr(r.off, r.len);
  }

 private:
  SRef copy(std::string_view s) {
    if (s.size() >= kDedupMin && text_.size() <= kDedupWithin) {
      size_t at = std::string_view(text_).find(s);
      if (at != std::string_view::npos) {
        return SRef{nullptr, static_cast<uint32_t>(at), static_cast<uint32_t>(s.size())};
      }
    }
    SRef r{nullptr, static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(s.size())};
    text_.append(s);
    return r;
  }
  SRef internNow(StringPool& pool, std::string_view s, size_t max_len) {
    if (s.size() <= max_len) {
      StringPool::Interned v = pool.internRef(s);
      if (v.view.data() != nullptr) {
        return SRef{v.view.data(), v.ref, static_cast<uint32_t>(v.view.size())};
      }
    }
    return copy(s);
  }

  std::string text_;
  bool defer_ = false;
};

// Lays out and fills one 8-byte-aligned block holding the arrays and the text of an object.
class Arena {
 public:
  // Reserves n elements of T; returns the byte offset.
  template <typename T>
  size_t reserve(size_t n) {
    static_assert(std::is_trivially_destructible_v<T> && alignof(T) <= 8);
    size_ = (size_ + alignof(T) - 1) & ~(alignof(T) - 1);
    size_t off = size_;
    size_ += n * sizeof(T);
    return off;
  }
  // Allocates the block and copies `text` at its end. Call after every reserve().
  void allocate(const std::string& text) {
    text_off_ = size_;
    size_t total = size_ + text.size();
    block_ = std::make_shared_for_overwrite<uint64_t[]>((total + 7) / 8 + 1);
    if (!text.empty()) {
      std::memcpy(base() + text_off_, text.data(), text.size());
    }
  }
  template <typename T>
  T* at(size_t off) {
    return reinterpret_cast<T*>(base() + off);
  }
  std::string_view resolve(SRef r) const {
    if (r.ptr != nullptr) {
      return {r.ptr, r.len};
    }
    if (r.len == 0) {
      return {};
    }
    return {reinterpret_cast<const char*>(block_.get()) + text_off_ + r.off, r.len};
  }
  std::shared_ptr<const uint64_t[]> release() { return std::move(block_); }
  size_t bytes() const { return ((size_ + 0) + 7) / 8 * 8; }

 private:
  char* base() { return reinterpret_cast<char*>(block_.get()); }
  size_t size_ = 0;
  size_t text_off_ = 0;
  std::shared_ptr<uint64_t[]> block_;
};

// Constructs n trivially copyable elements in the arena from `src` via `convert`.
template <typename Out, typename In, typename Fn>
std::pair<const Out*, size_t> fillArray(Arena& arena, size_t off, const std::vector<In>& src,
                                        Fn&& convert) {
  Out* out = arena.at<Out>(off);
  for (size_t i = 0; i < src.size(); ++i) {
    new (out + i) Out(convert(src[i]));
  }
  return {out, src.size()};
}

// What every cached kind shares: the top-level object {metadata, spec, status} and the
// metadata's fields, with their decoding. Context ids below kCtxFirstFree and field ids below
// kFieldFirstFree belong here; a decoder numbers its own from those.
enum MetaCtx : int {
  kCtxMeta = 1,
  kCtxLabels,
  kCtxAnnotations,
  kCtxFinalizers,
  kCtxRoot,
  kCtxSpec,
  kCtxStatus,
  kCtxFirstFree = 8
};
enum MetaField : int {
  kFieldMetadata = 1,
  kFieldName,
  kFieldNamespace,
  kFieldUid,
  kFieldResourceVersion,
  kFieldCreationTimestamp,
  kFieldDeletionTimestamp,
  kFieldLabels,
  kFieldAnnotations,
  kFieldFinalizers,
  kFieldMapEntry,
  kFieldSpec,
  kFieldStatus,
  kFieldFirstFree = 16
};

// The top-level object's fields: metadata, spec, and status unless `status` is false (0:
// unwanted).
inline int rootKey(std::string_view key, bool status = true) {
  if (key == "metadata") {
    return kFieldMetadata;
  }
  if (key == "spec") {
    return kFieldSpec;
  }
  if (key == "status" && status) {
    return kFieldStatus;
  }
  return 0;
}

// The context of a top-level field's value (0: skipped).
inline int rootChild(int field, bool is_array) {
  if (is_array) {
    return 0;
  }
  switch (field) {
    case kFieldMetadata:
      return kCtxMeta;
    case kFieldSpec:
      return kCtxSpec;
    case kFieldStatus:
      return kCtxStatus;
    default:
      return 0;
  }
}

struct KV {
  SRef key;
  SRef value;
};

class MetaScratch {
 public:
  SRef name, ns, uid, resource_version;
  int64_t creation_timestamp = 0;
  int64_t deletion_timestamp = 0;
  std::vector<KV> labels;
  std::vector<KV> annotations;
  std::vector<SRef> finalizers;

  void clear();
  bool owns(int ctx) const { return ctx >= kCtxMeta && ctx <= kCtxFinalizers; }
  int key(int ctx, std::string_view key, ScratchText& text, StringPool& pool);
  int child(int ctx, int field, bool is_array) const;
  void value(int ctx, int field, const Scalar& v, ScratchText& text, StringPool& pool);
  // Sorts labels and annotations by key (so lookups can bisect).
  void sort(const ScratchText& text);
  // Copies or interns every deferred string (ScratchText::materialize).
  void materialize(ScratchText& text, StringPool& pool);

 private:
  SRef pending_key_;
  bool intern_value_ = true;
};

// Parses an RFC 3339 scalar into Unix seconds (0 when not a valid timestamp).
int64_t timestampOf(const Scalar& v);

// Raw skipping of unwanted values. When a decoder decides to skip an object or array (the
// Reader has just consumed its opening bracket), it raises SkipSignal; a SkippingStream
// between the Reader and the bytes then jumps to the matching closing bracket without
// decoding anything, so the Reader sees an empty container. Images, capacity, managedFields
// and the like then cost a byte scan instead of a full parse. Skipped bytes are checked for
// matching brackets and terminated strings only.
struct SkipSignal {
  bool requested = false;
  bool array = false;  // the container being skipped is an array
};

// A RapidJSON input stream over `Inner` that performs the decoder's raw skips. Inner must
// offer skipRaw(RawSkipper&, bool array) (positions the stream at the closing bracket; false
// when the input ended or the brackets do not match).
template <typename Inner>
class SkippingStream {
 public:
  using Ch = char;
  SkippingStream(Inner& in, SkipSignal& signal) : in_(in), signal_(signal) {}
  // Peek and Take run for every byte the parser reads: kept small enough to inline into its
  // loops, with the skipping out of line.
  [[gnu::always_inline]] Ch Peek() {
    if (signal_.requested) [[unlikely]] {
      skip();
    }
    return failed_ ? '\0' : in_.Peek();
  }
  [[gnu::always_inline]] Ch Take() {
    if (signal_.requested) [[unlikely]] {
      skip();
    }
    return failed_ ? '\0' : in_.Take();
  }
  size_t Tell() const { return in_.Tell(); }
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }

 private:
  [[gnu::noinline]] void skip() {
    signal_.requested = false;
    if (!in_.skipRaw(skipper_, signal_.array)) {
      failed_ = true;
    }
  }

  Inner& in_;
  SkipSignal& signal_;
  RawSkipper skipper_;
  bool failed_ = false;
};

// Forwards SAX events to `Handler` and performs the decoder's raw skips on an in-situ
// stream: when an opened container is to be skipped, the stream is moved to its closing
// bracket at once, so the parser sees an empty container.
template <typename Handler>
class InsituSkipper {
 public:
  using Ch = char;
  // `end`: the input's terminating NUL.
  InsituSkipper(Handler& h, rapidjson::InsituStringStream& in, const char* end, SkipSignal* signal)
      : h_(h), in_(in), end_(end), signal_(signal) {}

  bool Null() { return h_.Null(); }
  bool Bool(bool b) { return h_.Bool(b); }
  bool Int(int i) { return h_.Int(i); }
  bool Uint(unsigned u) { return h_.Uint(u); }
  bool Int64(int64_t i) { return h_.Int64(i); }
  bool Uint64(uint64_t u) { return h_.Uint64(u); }
  bool Double(double d) { return h_.Double(d); }
  bool RawNumber(const char* s, unsigned n, bool copy) { return h_.RawNumber(s, n, copy); }
  bool String(const char* s, unsigned n, bool copy) { return h_.String(s, n, copy); }
  bool Key(const char* s, unsigned n, bool copy) { return h_.Key(s, n, copy); }
  bool StartObject() { return h_.StartObject() && skipIfAsked(); }
  bool EndObject(unsigned n) { return h_.EndObject(n); }
  bool StartArray() { return h_.StartArray() && skipIfAsked(); }
  bool EndArray(unsigned n) { return h_.EndArray(n); }

 private:
  bool skipIfAsked() {
    if (signal_ == nullptr || !signal_->requested) {
      return true;
    }
    signal_->requested = false;
    skipper_.start(signal_->array);
    char* p = in_.src_;
    size_t n = skipper_.feed(p, static_cast<size_t>(end_ - p));
    in_.src_ = p + n;
    return in_.src_ != end_ && !skipper_.failed();
  }

  Handler& h_;
  rapidjson::InsituStringStream& in_;
  const char* end_;
  SkipSignal* signal_;
  RawSkipper skipper_;
};

// Parses one JSON value that is already in memory, in situ on `scratch`, a copy of `json`
// (so `json` is untouched when the parse fails and a caller can read it again another way).
// In situ, strings are handed to the handler where they lie instead of being copied byte by
// byte, RapidJSON scans them and whitespace with vector instructions where the build enables
// them (meson.build), and containers the decoder raises `signal` for are skipped as raw
// bytes. A 5.5 KB Node watch event: 17 us through SkippingStream, whose per-byte checks
// slowed the values that are kept; 10.6 us in situ walking every value; 6.9 us in situ with
// raw skips (kube-client-bench, release build).
// *used is set to the bytes the value took (with kParseStopWhenDoneFlag, where it stopped).
template <unsigned kFlags, typename Handler>
rapidjson::ParseResult parseInMemory(rapidjson::Reader& reader, std::string_view json,
                                     std::string& scratch, Handler& handler, SkipSignal* signal,
                                     size_t* used = nullptr) {
  scratch.assign(json);
  rapidjson::InsituStringStream in(scratch.data());
  InsituSkipper<Handler> skipping(handler, in, scratch.data() + scratch.size(), signal);
  rapidjson::ParseResult ok = reader.Parse<kFlags | rapidjson::kParseInsituFlag>(in, skipping);
  if (used != nullptr) {
    *used = in.Tell();
  }
  return ok;
}

// CRTP SAX handler. Derived implements:
//   int  rootContext();                              context of the top-level object
//   int  key(int ctx, std::string_view key);         field id for a key (0 = unwanted)
//   int  child(int ctx, int field, bool is_array);   context of a nested value (0 = skip)
//   void value(int ctx, int field, const Scalar&);   a scalar in ctx (field 0 in arrays)
//   void end(int ctx);                               a context closed
template <typename Derived>
class SaxDecoder {
 public:
  using Ch = char;

  bool Null() { return scalar(Scalar{}); }
  bool Bool(bool b) {
    Scalar v;
    v.type = Scalar::Type::Bool;
    v.b = b;
    return scalar(v);
  }
  bool Int(int i) { return integer(i); }
  bool Uint(unsigned u) { return integer(u); }
  bool Int64(int64_t i) { return integer(i); }
  bool Uint64(uint64_t u) { return integer(static_cast<int64_t>(u)); }
  bool Double(double d) {
    Scalar v;
    v.type = Scalar::Type::Double;
    v.d = d;
    return scalar(v);
  }
  bool RawNumber(const char*, unsigned, bool) { return true; }
  bool String(const char* s, unsigned n, bool) {
    Scalar v;
    v.type = Scalar::Type::String;
    v.s = std::string_view(s, n);
    return scalar(v);
  }
  bool StartObject() { return open(false); }
  bool Key(const char* s, unsigned n, bool) {
    if (skip_ == 0 && depth_ > 0) {
      field_ = self().key(stack_[depth_ - 1], std::string_view(s, n));
    }
    return true;
  }
  bool EndObject(unsigned) { return close(); }
  bool StartArray() { return open(true); }
  bool EndArray(unsigned) { return close(); }

  // True once the top-level value has been closed.
  bool complete() const { return started_ && depth_ == 0 && skip_ == 0; }

  // Raised when a value is to be skipped and Derived::kRawSkip allows raw skipping (decoders
  // that must see every event, like the Service decoder's raw-JSON tee, leave it off).
  SkipSignal& skipSignal() { return skip_signal_; }

 protected:
  void resetSax() {
    depth_ = 0;
    skip_ = 0;
    field_ = 0;
    started_ = false;
    skip_signal_ = SkipSignal{};
  }

 private:
  static constexpr int kMaxDepth = 16;
  Derived& self() { return static_cast<Derived&>(*this); }

  bool integer(int64_t i) {
    Scalar v;
    v.type = Scalar::Type::Int;
    v.i = i;
    return scalar(v);
  }
  bool scalar(const Scalar& v) {
    if (skip_ == 0 && depth_ > 0) {
      self().value(stack_[depth_ - 1], field_, v);
      field_ = 0;
    }
    return true;
  }
  bool open(bool is_array) {
    if (skip_ > 0) {
      ++skip_;
      return true;
    }
    int ctx;
    if (depth_ == 0) {
      started_ = true;
      ctx = is_array ? 0 : self().rootContext();
    } else {
      ctx = self().child(stack_[depth_ - 1], field_, is_array);
    }
    field_ = 0;
    if (ctx == 0 || depth_ == kMaxDepth) {
      skip_ = 1;
      if constexpr (Derived::kRawSkip) {
        skip_signal_.requested = true;
        skip_signal_.array = is_array;
      }
      return true;
    }
    stack_[depth_++] = ctx;
    return true;
  }
  bool close() {
    if (skip_ > 0) {
      --skip_;
      return true;
    }
    if (depth_ == 0) {
      return false;
    }
    int ctx = stack_[--depth_];
    field_ = 0;
    self().end(ctx);
    return true;
  }

  int stack_[kMaxDepth] = {};
  int depth_ = 0;
  int skip_ = 0;
  int field_ = 0;
  bool started_ = false;
  SkipSignal skip_signal_;
};

}  // namespace ccm::kube::detail
