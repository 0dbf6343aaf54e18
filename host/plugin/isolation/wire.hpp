// The wire of --provider-isolation=process: how the host and the provider child process talk
// over their socketpair.
//
// A frame is a 4-byte little-endian length followed by that many bytes of payload (at most
// kMaxFrame). A payload starts with its kind (one byte); the rest is a sequence of fields:
// integers little-endian of fixed width, booleans one byte (0 or 1), strings and lists a
// 4-byte count then the items. Nothing is trusted: every read is bounded by what is left of
// the payload, and a payload that ends early, has bytes left over, or holds an impossible
// value (a boolean of 7, a list longer than the bytes left) is refused as a whole.
//
// THREAD: Writer and Reader are values used by one thread; readFrame/writeFrame may be used
// from several threads only if the caller serialises the writers (one frame at a time).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/plugin/provider.hpp"
#include "host/runtime/status.hpp"

namespace ccm::plugin::isolation {

inline constexpr size_t kMaxFrame = size_t{64} << 20;  // 64 MiB

enum class FrameKind : uint8_t {
  Create = 1,       // host -> child: the configuration to create the provider with
  Ready = 2,        // child -> host: the provider is created; its ProviderInfo
  StartFailed = 3,  // child -> host: loading or creating failed; which step and why
  Call = 4,         // host -> child: one Provider call (id, method, arguments)
  Reply = 5,        // child -> host: its result (id, status, value when OK)
  CancelAll = 6,    // host -> child: Provider::cancelAll
  MetricsRequest = 7,  // host -> child: id; asks for the child's metrics
  Metrics = 8,         // child -> host: id, the child's registry in the exposition format
};

enum class Method : uint8_t {
  InstanceExists = 1,
  InstanceShutdown = 2,
  InstanceMetadata = 3,
  InstanceMetadataBatch = 4,
  GetLoadBalancer = 5,
  GetLoadBalancerName = 6,
  EnsureLoadBalancer = 7,
  UpdateLoadBalancer = 8,
  EnsureLoadBalancerDeleted = 9,
  ListRoutes = 10,
  CreateRoute = 11,
  DeleteRoute = 12,
  Reconfigure = 13,
};
inline constexpr uint8_t kLastMethod = 13;

class Writer {
 public:
  explicit Writer(FrameKind kind) { u8(static_cast<uint8_t>(kind)); }
  // A writer without the frame kind byte, for bytes sent after a frame's own (a wave's host
  // set, encoded once for all its calls).
  static Writer bare() { return Writer(false); }
  // A writer that keeps nothing and only counts what it is given: run an encoding through it
  // first to reserve() the exact size, so a large payload is allocated once, not grown by
  // doubling (which briefly holds both the old and the new buffer).
  static Writer sizer() { return Writer(true); }
  void reserve(size_t bytes) { out_.reserve(bytes); }
  void u8(uint8_t v) {
    if (counting_) {
      ++counted_;
    } else {
      out_.push_back(static_cast<char>(v));
    }
  }
  void u32(uint32_t v);
  void u64(uint64_t v);
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void str(std::string_view v);
  void status(const Status& s);
  const std::string& payload() const { return out_; }
  // Bytes written (or counted, for a sizer).
  size_t size() const { return counting_ ? counted_ : out_.size(); }
  // The payload, moved out (the writer is left empty).
  std::string take() && { return std::move(out_); }

 private:
  explicit Writer(bool counting) : counting_(counting) {}
  std::string out_;
  bool counting_ = false;
  size_t counted_ = 0;
};

class Reader {
 public:
  explicit Reader(std::string_view payload) : in_(payload) {}
  explicit Reader(std::string&& payload) = delete;  // would read a destroyed temporary
  // Each read returns a zero value once the reader has failed; check ok() at the end.
  uint8_t u8();
  uint32_t u32();
  uint64_t u64();
  int32_t i32() { return static_cast<int32_t>(u32()); }
  bool boolean();
  std::string_view str();
  Status status();
  // A list count, refused when it cannot fit in what is left (each item takes at least
  // min_item_size bytes).
  uint32_t count(size_t min_item_size);
  void fail(std::string_view why);
  bool ok() const { return error_.empty(); }
  // The bytes not read yet (empty once failed), and a skip past all of them.
  std::string_view rest() const { return ok() ? in_.substr(at_) : std::string_view(); }
  void skipRest() { at_ = in_.size(); }
  // OK when every read succeeded and the payload is used up exactly.
  Status finish() const;

 private:
  std::string_view in_;
  size_t at_ = 0;
  std::string error_;  // empty while every read succeeded
};

// Blocking frame I/O on a stream socket. readFrame: Unavailable on end of stream (clean, or
// in the middle of a frame), InvalidArgument for a length over kMaxFrame or zero.
StatusOr<std::string> readFrame(int fd);
// Sends one frame. With a bound, a peer that does not take the whole frame within it gives
// DeadlineExceeded; the stream may then hold part of the frame, so the caller must give the
// connection up. Without one (zero), it waits as long as the peer does. A non-empty `tail`
// is sent as the end of the same frame (its payload is `payload` then `tail`), from its own
// buffer: bytes encoded once and shared by many frames are not copied into each.
Status writeFrame(int fd, std::string_view payload,
                  std::chrono::milliseconds bound = std::chrono::milliseconds(0),
                  std::string_view tail = {});

// The kind of a payload (its first byte), or nullopt for an empty payload or unknown kind.
std::optional<FrameKind> frameKind(std::string_view payload);

}  // namespace ccm::plugin::isolation
