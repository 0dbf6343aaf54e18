// StringPool implementation: a fixed table of append-only chunks plus a hash map of views.
#include "host/kube/objects/string_pool.hpp"

#include <cstring>

namespace ccm::kube {

StringPool::Interned StringPool::internRef(std::string_view s) {
  if (s.empty()) {
    return {};
  }
  auto it = set_.find(s);
  if (it != set_.end()) {
    return {it->first, it->second};
  }
  if (full() || s.size() > kMaxLength) {
    return {};
  }
  size_t need = varint::lengthBytes(s.size()) + s.size();
  if (used_ + need > kChunk) {
    if (chunk_count_ == kMaxChunks) {
      out_of_chunks_ = true;
      return {};
    }
    chunks_[chunk_count_++] = std::make_unique_for_overwrite<char[]>(kChunk);
    used_ = 0;
  }
  char* at = chunks_[chunk_count_ - 1].get() + used_;
  auto ref = static_cast<uint32_t>((chunk_count_ - 1) * kChunk + used_);
  size_t prefix = varint::writeLength(at, s.size());
  std::memcpy(at + prefix, s.data(), s.size());
  used_ += need;
  std::string_view stored(at + prefix, s.size());
  set_.emplace(stored, ref);
  return {stored, ref};
}

}  // namespace ccm::kube
