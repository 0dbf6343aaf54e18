// TtlCache: a small bounded cache whose entries expire after a per-entry time to live, used
// for the delegated TokenReview and SubjectAccessReview answers. When full, the least recently
// used entry goes. Expiry is judged on the monotonic clock passed in, so tests use a FakeClock.
//
// THREAD: not synchronised; the owner guards it with its own mutex.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "host/runtime/clock.hpp"

namespace ccm::server {

template <typename V>
class TtlCache {
 public:
  explicit TtlCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // The value stored under key if it has not expired at `now`. An expired entry is dropped.
  std::optional<V> get(const std::string& key, Clock::MonoTime now) {
    auto it = index_.find(key);
    if (it == index_.end()) {
      return std::nullopt;
    }
    if (now >= it->second->expires) {
      order_.erase(it->second);
      index_.erase(it);
      return std::nullopt;
    }
    order_.splice(order_.begin(), order_, it->second);  // most recently used first
    return it->second->value;
  }

  // Stores value under key until now + ttl. A ttl of zero or less stores nothing.
  void put(const std::string& key, V value, Clock::MonoTime now, std::chrono::nanoseconds ttl) {
    if (ttl <= std::chrono::nanoseconds::zero()) {
      return;
    }
    auto it = index_.find(key);
    if (it != index_.end()) {
      it->second->value = std::move(value);
      it->second->expires = now + ttl;
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    while (index_.size() >= capacity_) {
      index_.erase(order_.back().key);
      order_.pop_back();
    }
    order_.push_front(Entry{key, std::move(value), now + ttl});
    index_.emplace(key, order_.begin());
  }

  size_t size() const { return index_.size(); }
  void clear() {
    index_.clear();
    order_.clear();
  }

 private:
  struct Entry {
    std::string key;
    V value;
    Clock::MonoTime expires;
  };
  size_t capacity_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
};

}  // namespace ccm::server
