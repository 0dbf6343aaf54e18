// StringPool: interns the short, highly repeated strings of cached objects (label and
// annotation keys, condition types and reasons, node OS/kernel/runtime versions...) so 5,000
// cached nodes share one copy of each. Strings live as long as the pool; cached objects keep
// the pool alive with a shared_ptr, and the decoder starts a fresh pool when this one fills
// up (the old one goes away with the last object that uses it).
//
// THREAD: intern() is called by one thread at a time (the decoding thread); the returned
// views may be read from any thread once the object holding them has been published.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace ccm::kube {

class StringPool {
 public:
  explicit StringPool(size_t max_entries = 65536) : max_entries_(max_entries) {}
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  // A stable view equal to s; nullptr data (empty view) when the pool is full.
  std::string_view intern(std::string_view s);
  bool full() const { return set_.size() >= max_entries_; }
  size_t size() const { return set_.size(); }
  // Bytes held in string storage (not counting the hash set).
  size_t bytes() const { return chunks_.size() * kChunk; }

 private:
  static constexpr size_t kChunk = size_t{16} * 1024;
  const size_t max_entries_;
  std::unordered_set<std::string_view> set_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t used_ = kChunk;  // bytes used in chunks_.back()
};

}  // namespace ccm::kube
