// Node accessors.
#include "host/kube/objects/node.hpp"

#include <algorithm>

namespace ccm::kube {

std::optional<std::string_view> findKey(std::span<const KeyValue> sorted, std::string_view key) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), key,
                             [](const KeyValue& kv, std::string_view k) { return kv.key < k; });
  if (it != sorted.end() && it->key == key) {
    return it->value;
  }
  return std::nullopt;
}

std::optional<std::string_view> Node::find(node_layout::ListRef list, std::string_view key) const {
  const auto* items = reinterpret_cast<const node_layout::KeyValueRefs*>(bytes_ + list.off);
  size_t lo = 0;
  size_t hi = list.size;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (str(items[mid].key) < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < list.size && str(items[lo].key) == key) {
    return str(items[lo].value);
  }
  return std::nullopt;
}

NodeSystemInfo Node::nodeInfo() const {
  const node_layout::StrRef* i = f_.info;
  return {str(i[0]), str(i[1]), str(i[2]), str(i[3]), str(i[4]),
          str(i[5]), str(i[6]), str(i[7]), str(i[8]), str(i[9])};
}

std::optional<NodeCondition> Node::condition(std::string_view type) const {
  for (NodeCondition c : conditions()) {
    if (c.type == type) {
      return c;
    }
  }
  return std::nullopt;
}

bool Node::hasTaint(std::string_view key, std::string_view effect) const {
  for (Taint t : taints()) {
    if (t.key == key && (effect.empty() || t.effect == effect)) {
      return true;
    }
  }
  return false;
}

}  // namespace ccm::kube
