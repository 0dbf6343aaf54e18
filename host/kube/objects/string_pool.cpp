// StringPool implementation: chunked, append-only storage plus a hash set of views.
#include "host/kube/objects/string_pool.hpp"

#include <cstring>

namespace ccm::kube {

std::string_view StringPool::intern(std::string_view s) {
  if (s.empty()) {
    return {};
  }
  auto it = set_.find(s);
  if (it != set_.end()) {
    return *it;
  }
  if (full() || s.size() > kChunk / 4) {
    return {};
  }
  if (used_ + s.size() > kChunk) {
    chunks_.push_back(std::make_unique<char[]>(kChunk));
    used_ = 0;
  }
  char* dst = chunks_.back().get() + used_;
  std::memcpy(dst, s.data(), s.size());
  used_ += s.size();
  std::string_view stored(dst, s.size());
  set_.insert(stored);
  return stored;
}

}  // namespace ccm::kube
