// scanNodeEvent: a small JSON walker that follows only the path to the values a heartbeat
// changes, fingerprinting everything else (see node_event_scan.hpp).
#include "host/kube/objects/node_event_scan.hpp"

#include <array>
#include <cstring>

#include "host/kube/transport/raw_skipper.hpp"

namespace ccm::kube {
namespace {

// The containers the scan tells apart; everything else is Other.
enum class Ctx : uint8_t {
  Event,          // the watch event
  Object,         // .object
  Metadata,       // .object.metadata
  ManagedFields,  // .object.metadata.managedFields (array)
  ManagedField,   // one of its entries
  Status,         // .object.status
  Conditions,     // .object.status.conditions (array)
  Condition,      // one of its entries
  Other,
};

constexpr bool isObjectCtx(Ctx c) {
  return c != Ctx::ManagedFields && c != Ctx::Conditions;
}

// What a string value is, by where it lies.
enum class Role : uint8_t { Hashed, EventType, Name, Version, FieldTime, ConditionType, Heartbeat };

constexpr bool masked(Role r) {
  return r == Role::EventType || r == Role::Version || r == Role::FieldTime || r == Role::Heartbeat;
}

constexpr size_t kMaxDepth = 32;
constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;

// A 64-bit running hash of byte runs; runs are hashed whole, so equal runs give equal hashes
// wherever they lie in the line.
class Fingerprint {
 public:
  void add(const char* p, size_t n) {
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t word = 0;
      std::memcpy(&word, p, 8);
      mix(word);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    mix(tail ^ (static_cast<uint64_t>(n) << 56));
  }
  // Where a value was left out, and which.
  void mark(Role r) { mix(0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(r)); }
  uint64_t value() const {
    uint64_t h = h_;
    h ^= h >> 47;
    h *= kMul;
    h ^= h >> 47;
    return h == 0 ? 1 : h;
  }

 private:
  void mix(uint64_t k) {
    k *= kMul;
    k ^= k >> 47;
    k *= kMul;
    h_ ^= k;
    h_ *= kMul;
  }
  uint64_t h_ = 0x243f6a8885a308d3ULL;
};

// The container and role of a member `key` of an object of kind `parent`.
void placeMember(Ctx parent, std::string_view key, Ctx& ctx, Role& role) {
  ctx = Ctx::Other;
  role = Role::Hashed;
  switch (parent) {
    case Ctx::Event:
      if (key == "type") {
        role = Role::EventType;
      } else if (key == "object") {
        ctx = Ctx::Object;
      }
      return;
    case Ctx::Object:
      if (key == "metadata") {
        ctx = Ctx::Metadata;
      } else if (key == "status") {
        ctx = Ctx::Status;
      }
      return;
    case Ctx::Metadata:
      if (key == "name") {
        role = Role::Name;
      } else if (key == "resourceVersion") {
        role = Role::Version;
      } else if (key == "managedFields") {
        ctx = Ctx::ManagedFields;
      }
      return;
    case Ctx::ManagedField:
      if (key == "time") {
        role = Role::FieldTime;
      }
      return;
    case Ctx::Status:
      if (key == "conditions") {
        ctx = Ctx::Conditions;
      }
      return;
    case Ctx::Condition:
      if (key == "type") {
        role = Role::ConditionType;
      } else if (key == "lastHeartbeatTime") {
        role = Role::Heartbeat;
      }
      return;
    default:
      return;
  }
}

Ctx elementOf(Ctx parent) {
  switch (parent) {
    case Ctx::ManagedFields:
      return Ctx::ManagedField;
    case Ctx::Conditions:
      return Ctx::Condition;
    default:
      return Ctx::Other;
  }
}

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

class Scanner {
 public:
  Scanner(std::string_view line, NodeEventScan& out)
      : p_(line.data()), end_(line.data() + line.size()), seg_(p_), out_(out) {}

  bool run() {
    out_.type = out_.name = out_.resource_version = {};
    out_.conditions.clear();
    out_.fingerprint = 0;
    skipSpace();
    if (p_ == end_ || *p_ != '{') {
      return false;
    }
    Next next = Next::Value;
    Ctx ctx = Ctx::Event;
    Role role = Role::Hashed;
    while ((depth_ > 0 || !done_) && !rest_) {
      skipSpace();
      if (p_ == end_) {
        return false;
      }
      char c = *p_;
      switch (next) {
        case Next::KeyOrEnd:
          if (c == '}') {
            close();
            next = Next::CommaOrEnd;
            break;
          }
          [[fallthrough]];
        case Next::Key: {
          std::string_view key;
          if (c != '"' || !readString(key)) {
            return false;
          }
          skipSpace();
          if (p_ == end_ || *p_ != ':') {
            return false;
          }
          ++p_;
          placeMember(stack_[depth_ - 1].ctx, key, ctx, role);
          next = Next::Value;
          break;
        }
        case Next::ValueOrEnd:
          if (c == ']') {
            close();
            next = Next::CommaOrEnd;
            break;
          }
          [[fallthrough]];
        case Next::Value:
          if (depth_ > 0 && !stack_[depth_ - 1].object) {
            ctx = elementOf(stack_[depth_ - 1].ctx);
            role = Role::Hashed;
          }
          if (!value(c, ctx, role, next)) {
            return false;
          }
          break;
        case Next::CommaOrEnd: {
          const Frame& f = stack_[depth_ - 1];
          if (c == ',') {
            ++p_;
            next = f.object ? Next::Key : Next::Value;
          } else if (c == (f.object ? '}' : ']')) {
            close();
          } else {
            return false;
          }
          break;
        }
      }
    }
    skipSpace();
    if (!rest_ && p_ != end_) {
      return false;
    }
    fp_.add(seg_, static_cast<size_t>(end_ - seg_));
    out_.fingerprint = fp_.value();
    return true;
  }

 private:
  enum class Next : uint8_t { Value, ValueOrEnd, Key, KeyOrEnd, CommaOrEnd };
  struct Frame {
    Ctx ctx;
    bool object;
  };

  // One value at p_: a container is entered, a string read (and placed), a scalar skipped.
  bool value(char c, Ctx ctx, Role role, Next& next) {
    if (c == '{' || c == '[') {
      if (depth_ == kMaxDepth) {
        return false;
      }
      bool object = c == '{';
      Ctx inner = object == isObjectCtx(ctx) ? ctx : Ctx::Other;
      if (inner == Ctx::Other && depth_ > 0) {
        // Nothing inside is looked at: only its end is found (its bytes are fingerprinted).
        next = Next::CommaOrEnd;
        return skipContainer();
      }
      if (inner == Ctx::Condition) {
        out_.conditions.emplace_back();
      }
      stack_[depth_++] = Frame{inner, object};
      ++p_;
      next = object ? Next::KeyOrEnd : Next::ValueOrEnd;
      return true;
    }
    if (depth_ == 0) {
      return false;  // the event is an object
    }
    next = Next::CommaOrEnd;
    if (c != '"') {
      while (p_ < end_ && *p_ != ',' && *p_ != '}' && *p_ != ']' && !isSpace(*p_)) {
        ++p_;
      }
      return true;
    }
    const char* open = p_;
    std::string_view s;
    if (!readString(s)) {
      return false;
    }
    // The values used as they are written must be plain (a name with an escape is left to
    // the parser, which unescapes it).
    bool plain = s.find('\\') == std::string_view::npos;
    switch (role) {
      case Role::EventType:
        out_.type = s;
        break;
      case Role::Name:
        out_.name = s;
        break;
      case Role::Version:
        out_.resource_version = s;
        break;
      case Role::ConditionType:
        out_.conditions.back().type = s;
        break;
      case Role::Heartbeat:
        out_.conditions.back().heartbeat = s;
        break;
      default:
        break;
    }
    if (role != Role::Hashed && role != Role::FieldTime && !plain) {
      return false;
    }
    if (masked(role)) {
      fp_.add(seg_, static_cast<size_t>(open - seg_));
      fp_.mark(role);
      seg_ = p_;
    }
    return true;
  }

  void close() {
    ++p_;
    --depth_;
    done_ = depth_ == 0;
    Ctx closed = stack_[depth_].ctx;
    if (closed == Ctx::Metadata) {
      metadata_read_ = true;
    }
    // Once the metadata and the conditions are read, nothing after them is looked at: the
    // rest (addresses, nodeInfo, images, ...) is only fingerprinted, in one run.
    if (closed == Ctx::Conditions && metadata_read_) {
      rest_ = true;
    }
  }

  // The container at p_ ('{' or '['), skipped to just after its end with the decoders'
  // RawSkipper (brackets matched, strings stepped over whole, 64 bytes a step where it can).
  // False when it does not end in the line or its brackets do not match.
  bool skipContainer() {
    skipper_.start(*p_ == '[');
    ++p_;
    auto left = static_cast<size_t>(end_ - p_);
    size_t before_end = skipper_.feed(p_, left);
    if (before_end == left || skipper_.failed()) {
      return false;
    }
    p_ += before_end + 1;
    return true;
  }

  // A string at p_ ('"'): its raw contents (escapes as written); p_ ends after it.
  bool readString(std::string_view& s) {
    const char* start = ++p_;
    auto n = static_cast<size_t>(end_ - start);
    size_t i = 0;
    while (true) {
      i = detail::RawSkipper::nextQuoteOrBackslash(start, i, n);
      if (i == n) {
        return false;
      }
      if (start[i] == '"') {
        s = std::string_view(start, i);
        p_ = start + i + 1;
        return true;
      }
      if (n - i < 2) {
        return false;  // an escape the line cuts off
      }
      i += 2;  // the escape and the byte it escapes
    }
  }

  void skipSpace() {
    while (p_ < end_ && isSpace(*p_)) {
      ++p_;
    }
  }

  const char* p_;
  const char* end_;
  const char* seg_;  // the first byte not yet fingerprinted
  NodeEventScan& out_;
  Fingerprint fp_;
  detail::RawSkipper skipper_;
  std::array<Frame, kMaxDepth> stack_{};
  size_t depth_ = 0;
  bool done_ = false;
  bool metadata_read_ = false;
  bool rest_ = false;  // the rest of the line is fingerprinted unread
};

}  // namespace

bool scanNodeEvent(std::string_view line, NodeEventScan& out) {
  return Scanner(line, out).run();
}

}  // namespace ccm::kube
