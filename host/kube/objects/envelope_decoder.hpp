// SAX handlers for the two envelopes objects arrive in: a watch event
// ({"type":"ADDED","object":{...}}) and a list ({"metadata":{...},"items":[{...},...]}). Both
// forward the SAX events of each object to an object decoder (NodeDecoder, ServiceDecoder)
// so objects are decoded while the bytes stream in, never held as a document.
//
// THREAD: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ccm::kube {

enum class WatchEventType : uint8_t { Unknown, Added, Modified, Deleted, Bookmark, Error };

// Forwards one JSON value's events to `decoder` while tracking its depth.
template <typename Decoder>
class Forwarder {
 public:
  explicit Forwarder(Decoder& d) : d_(d) {}
  bool active() const { return depth_ > 0; }
  int depth() const { return depth_; }
  Decoder& decoder() { return d_; }
  void begin() { depth_ = 0; }
  bool open(bool array) {
    ++depth_;
    return array ? d_.StartArray() : d_.StartObject();
  }
  bool close(bool array, unsigned n) {
    --depth_;
    return array ? d_.EndArray(n) : d_.EndObject(n);
  }

 private:
  Decoder& d_;
  int depth_ = 0;
};

// Handler for one watch event. Status fields (code, reason, message) of the object are
// captured too, for ERROR events.
template <typename Decoder>
class WatchEventHandler {
 public:
  using Ch = char;
  explicit WatchEventHandler(Decoder& d) : fwd_(d) {}

  // Ready for the next event, also after one that failed half-way.
  void reset() {
    depth_ = 0;
    fwd_.begin();
    pending_ = Pending::None;
    type = WatchEventType::Unknown;
    has_object = false;
    status_code = 0;
    status_reason.clear();
    status_message.clear();
    status_key_ = StatusKey::None;
    fwd_.decoder().reset();
  }

  WatchEventType type = WatchEventType::Unknown;
  bool has_object = false;
  int status_code = 0;
  std::string status_reason;
  std::string status_message;

  bool Null() {
    return fwd_.active() ? (scalarStatus(nullptr, 0, 0), fwd_.decoder().Null()) : done();
  }
  bool Bool(bool b) { return fwd_.active() ? fwd_.decoder().Bool(b) : done(); }
  bool Int(int i) {
    return fwd_.active() ? (scalarStatus(nullptr, 0, i), fwd_.decoder().Int(i)) : done();
  }
  bool Uint(unsigned u) {
    return fwd_.active() ? (scalarStatus(nullptr, 0, u), fwd_.decoder().Uint(u)) : done();
  }
  bool Int64(int64_t i) { return fwd_.active() ? fwd_.decoder().Int64(i) : done(); }
  bool Uint64(uint64_t u) { return fwd_.active() ? fwd_.decoder().Uint64(u) : done(); }
  bool Double(double d) { return fwd_.active() ? fwd_.decoder().Double(d) : done(); }
  bool RawNumber(const char*, unsigned, bool) { return true; }
  bool String(const char* s, unsigned n, bool copy) {
    if (fwd_.active()) {
      scalarStatus(s, n, 0);
      return fwd_.decoder().String(s, n, copy);
    }
    if (depth_ == 1 && pending_ == Pending::Type) {
      type = parseType(std::string_view(s, n));
    }
    return done();
  }
  bool Key(const char* s, unsigned n, bool copy) {
    if (fwd_.active()) {
      if (fwd_.depth() == 1) {
        std::string_view k(s, n);
        status_key_ = k == "code"      ? StatusKey::Code
                      : k == "reason"  ? StatusKey::Reason
                      : k == "message" ? StatusKey::Message
                                       : StatusKey::None;
      }
      return fwd_.decoder().Key(s, n, copy);
    }
    std::string_view k(s, n);
    pending_ = depth_ != 1     ? Pending::None
               : k == "type"   ? Pending::Type
               : k == "object" ? Pending::Object
                               : Pending::None;
    return true;
  }
  bool StartObject() {
    if (fwd_.active()) {
      return fwd_.open(false);
    }
    if (depth_ == 1 && pending_ == Pending::Object) {
      if (has_object) {
        return false;  // a second "object" key: malformed, never decoded over the first
      }
      pending_ = Pending::None;
      has_object = true;
      return fwd_.open(false);
    }
    ++depth_;
    pending_ = Pending::None;
    return true;
  }
  bool EndObject(unsigned n) {
    if (fwd_.active()) {
      return fwd_.close(false, n);
    }
    --depth_;
    return true;
  }
  bool StartArray() {
    if (fwd_.active()) {
      return fwd_.open(true);
    }
    ++depth_;
    pending_ = Pending::None;
    return true;
  }
  bool EndArray(unsigned n) {
    if (fwd_.active()) {
      return fwd_.close(true, n);
    }
    --depth_;
    return true;
  }

  static WatchEventType parseType(std::string_view t) {
    if (t == "ADDED") {
      return WatchEventType::Added;
    }
    if (t == "MODIFIED") {
      return WatchEventType::Modified;
    }
    if (t == "DELETED") {
      return WatchEventType::Deleted;
    }
    if (t == "BOOKMARK") {
      return WatchEventType::Bookmark;
    }
    if (t == "ERROR") {
      return WatchEventType::Error;
    }
    return WatchEventType::Unknown;
  }

 private:
  enum class Pending : uint8_t { None, Type, Object };
  enum class StatusKey : uint8_t { None, Code, Reason, Message };

  bool done() {
    pending_ = Pending::None;
    return true;
  }
  void scalarStatus(const char* s, unsigned n, int64_t i) {
    if (fwd_.depth() != 1 || status_key_ == StatusKey::None) {
      return;
    }
    if (status_key_ == StatusKey::Code && s == nullptr) {
      status_code = static_cast<int>(i);
    } else if (status_key_ == StatusKey::Reason && s != nullptr) {
      status_reason.assign(s, n);
    } else if (status_key_ == StatusKey::Message && s != nullptr) {
      status_message.assign(s, n);
    }
    status_key_ = StatusKey::None;
  }

  Forwarder<Decoder> fwd_;
  int depth_ = 0;
  Pending pending_ = Pending::None;
  StatusKey status_key_ = StatusKey::None;
};

// Handler for a list response. `on_item` runs after each item has been decoded (the decoder
// then holds it; the handler resets the decoder before the next one). Returning false from
// on_item aborts parsing.
template <typename Decoder>
class ListHandler {
 public:
  using Ch = char;
  ListHandler(Decoder& d, std::function<bool()> on_item) : fwd_(d), on_item_(std::move(on_item)) {}

  std::string resource_version;
  std::string continue_token;
  int64_t remaining_item_count = -1;
  size_t items = 0;

  bool Null() { return fwd_.active() ? fwd_.decoder().Null() : true; }
  bool Bool(bool b) { return fwd_.active() ? fwd_.decoder().Bool(b) : true; }
  bool Int(int i) { return fwd_.active() ? fwd_.decoder().Int(i) : meta(i); }
  bool Uint(unsigned u) { return fwd_.active() ? fwd_.decoder().Uint(u) : meta(u); }
  bool Int64(int64_t i) { return fwd_.active() ? fwd_.decoder().Int64(i) : meta(i); }
  bool Uint64(uint64_t u) {
    return fwd_.active() ? fwd_.decoder().Uint64(u) : meta(static_cast<int64_t>(u));
  }
  bool Double(double d) { return fwd_.active() ? fwd_.decoder().Double(d) : true; }
  bool RawNumber(const char*, unsigned, bool) { return true; }
  bool String(const char* s, unsigned n, bool copy) {
    if (fwd_.active()) {
      return fwd_.decoder().String(s, n, copy);
    }
    if (depth_ == 2 && in_metadata_) {
      if (key_ == Key_::ResourceVersion) {
        resource_version.assign(s, n);
      }
      if (key_ == Key_::Continue) {
        continue_token.assign(s, n);
      }
    }
    key_ = Key_::None;
    return true;
  }
  bool Key(const char* s, unsigned n, bool copy) {
    if (fwd_.active()) {
      return fwd_.decoder().Key(s, n, copy);
    }
    std::string_view k(s, n);
    if (depth_ == 1) {
      key_ = k == "metadata" ? Key_::Metadata : k == "items" ? Key_::Items : Key_::None;
    } else if (depth_ == 2 && in_metadata_) {
      key_ = k == "resourceVersion"      ? Key_::ResourceVersion
             : k == "continue"           ? Key_::Continue
             : k == "remainingItemCount" ? Key_::Remaining
                                         : Key_::None;
    } else {
      key_ = Key_::None;
    }
    return true;
  }
  bool StartObject() {
    if (fwd_.active()) {
      return fwd_.open(false);
    }
    if (depth_ == 2 && in_items_) {
      fwd_.decoder().reset();
      return fwd_.open(false);
    }
    if (depth_ == 1 && key_ == Key_::Metadata) {
      in_metadata_ = true;
    }
    ++depth_;
    key_ = Key_::None;
    return true;
  }
  bool EndObject(unsigned n) {
    if (fwd_.active()) {
      bool ok = fwd_.close(false, n);
      if (ok && !fwd_.active()) {
        ++items;
        return on_item_();
      }
      return ok;
    }
    --depth_;
    if (depth_ == 1) {
      in_metadata_ = false;
    }
    return true;
  }
  bool StartArray() {
    if (fwd_.active()) {
      return fwd_.open(true);
    }
    if (depth_ == 1 && key_ == Key_::Items) {
      in_items_ = true;
    }
    ++depth_;
    key_ = Key_::None;
    return true;
  }
  bool EndArray(unsigned n) {
    if (fwd_.active()) {
      return fwd_.close(true, n);
    }
    --depth_;
    if (depth_ == 1) {
      in_items_ = false;
    }
    return true;
  }

 private:
  enum class Key_ : uint8_t { None, Metadata, Items, ResourceVersion, Continue, Remaining };
  bool meta(int64_t v) {
    if (depth_ == 2 && in_metadata_ && key_ == Key_::Remaining) {
      remaining_item_count = v;
    }
    key_ = Key_::None;
    return true;
  }

  Forwarder<Decoder> fwd_;
  std::function<bool()> on_item_;
  int depth_ = 0;
  Key_ key_ = Key_::None;
  bool in_metadata_ = false;
  bool in_items_ = false;
};

}  // namespace ccm::kube
