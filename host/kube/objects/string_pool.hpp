// StringPool: interns the short, highly repeated strings of cached objects (label and
// annotation keys, condition types and reasons, node OS/kernel/runtime versions...) so 5,000
// cached nodes share one copy of each. Strings live as long as the pool; cached objects keep
// the pool alive with a shared_ptr, and the decoder starts a fresh pool when this one fills
// up (the old one goes away with the last object that uses it).
//
// Each string is stored behind its length (a varint), so besides its view it has a 31-bit
// position in the pool (ref()) that at() turns back into the view: cached nodes keep that
// position instead of a 16-byte view.
//
// THREAD: intern() is called by one thread at a time (the decoding thread); at() and the
// returned views may be read from any thread once the object holding them has been
// published (the chunk table never moves, so reading it races with no write).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>

namespace ccm::kube {

// Length prefixes of stored strings: 7 bits per byte, low bits first, high bit = more.
namespace varint {
// Bytes writeLength() uses for n.
inline size_t lengthBytes(size_t n) {
  size_t bytes = 1;
  while (n >= 0x80) {
    n >>= 7;
    ++bytes;
  }
  return bytes;
}
// Writes n at `out`; returns the bytes written.
inline size_t writeLength(char* out, size_t n) {
  size_t i = 0;
  while (n >= 0x80) {
    out[i++] = static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  out[i++] = static_cast<char>(n);
  return i;
}
// The string stored at p (its length, then its bytes).
inline std::string_view readPrefixed(const char* p) {
  auto byte = static_cast<unsigned char>(*p++);
  size_t n = byte & 0x7f;
  for (int shift = 7; (byte & 0x80) != 0; shift += 7) {
    byte = static_cast<unsigned char>(*p++);
    n |= static_cast<size_t>(byte & 0x7f) << shift;
  }
  return {p, n};
}
}  // namespace varint

class StringPool {
 public:
  // Chunks are kChunk bytes and there are at most kMaxChunks of them, so a position fits in
  // 31 bits with room to spare.
  static constexpr size_t kChunk = size_t{16} * 1024;
  static constexpr size_t kMaxChunks = 512;
  // Longer strings are not interned.
  static constexpr size_t kMaxLength = kChunk / 4;

  explicit StringPool(size_t max_entries = 65536) : max_entries_(max_entries) {}
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  struct Interned {
    std::string_view view;  // nullptr data: not interned (empty, too long, or the pool full)
    uint32_t ref = 0;       // the position at() takes
  };
  // The stored copy of s.
  Interned internRef(std::string_view s);
  // A stable view equal to s; nullptr data (empty view) when it was not interned.
  std::string_view intern(std::string_view s) { return internRef(s).view; }
  // The string interned at `ref` (an Interned::ref of this pool).
  std::string_view at(uint32_t ref) const {
    return varint::readPrefixed(chunks_[ref / kChunk].get() + ref % kChunk);
  }
  bool full() const { return set_.size() >= max_entries_ || out_of_chunks_; }
  size_t size() const { return set_.size(); }
  // Bytes held in string storage (not counting the hash set).
  size_t bytes() const { return chunk_count_ * kChunk; }

 private:
  const size_t max_entries_;
  std::unordered_map<std::string_view, uint32_t> set_;
  std::array<std::unique_ptr<char[]>, kMaxChunks> chunks_;
  size_t chunk_count_ = 0;
  size_t used_ = kChunk;  // bytes used in the last chunk
  bool out_of_chunks_ = false;
};

}  // namespace ccm::kube
