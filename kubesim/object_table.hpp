// ObjectTable: a string-keyed table with O(1) lookup by key and iteration in key order.
//
// kubesim's store answers two kinds of question: "the object under this key" on every get,
// update and delete (thousands a second at 100,000 nodes), and "the objects from this key
// on, in key order" for LISTs, continue tokens and watches' initial state, where the order is
// what a client sees. An ordered map alone makes the first kind O(log n) string comparisons,
// each a cache miss at 100,000 entries. ObjectTable keeps the ordered map for the second kind
// and a hash index beside it (key -> map entry) for the first: finding and replacing a value
// touches only the hash index and the entry; inserting and erasing update both.
//
// The hash index's keys view the map's own key strings (map nodes never move), so each key
// is stored once.
//
// THREAD: not synchronised; the owner guards it.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace ccm::kubesim {

template <class Value>
class ObjectTable {
  using Ordered = std::map<std::string, Value, std::less<>>;

 public:
  using const_iterator = typename Ordered::const_iterator;

  ObjectTable() = default;
  // The index views the map's nodes: a copy would view the source's (never copied today).
  ObjectTable(const ObjectTable&) = delete;
  ObjectTable& operator=(const ObjectTable&) = delete;
  ObjectTable(ObjectTable&&) noexcept = default;  // nodes move with the map: views stay valid
  ObjectTable& operator=(ObjectTable&&) noexcept = default;
  ~ObjectTable() = default;

  // The value under key, or nullptr. The pointer is valid until key is erased.
  Value* find(std::string_view key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->second;
  }
  const Value* find(std::string_view key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->second;
  }
  bool contains(std::string_view key) const { return index_.find(key) != index_.end(); }

  // Sets key's value; true when key was not there before.
  bool insertOrAssign(std::string_view key, Value value) {
    if (Value* v = find(key)) {
      *v = std::move(value);
      return false;
    }
    auto [it, inserted] = ordered_.emplace(std::string(key), std::move(value));
    index_.emplace(std::string_view(it->first), it);
    return inserted;
  }

  // Removes key; true when it was there.
  bool erase(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) {
      return false;
    }
    auto node = it->second;
    index_.erase(it);  // before the map node its key views goes
    ordered_.erase(node);
    return true;
  }

  void clear() {
    index_.clear();
    ordered_.clear();
  }

  size_t size() const { return ordered_.size(); }
  bool empty() const { return ordered_.empty(); }

  // Key order.
  const_iterator begin() const { return ordered_.begin(); }
  const_iterator end() const { return ordered_.end(); }
  // The first entry whose key is not less than key.
  const_iterator lowerBound(std::string_view key) const { return ordered_.lower_bound(key); }

 private:
  Ordered ordered_;
  std::unordered_map<std::string_view, typename Ordered::iterator> index_;
};

}  // namespace ccm::kubesim
