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

const NodeCondition* Node::condition(std::string_view type) const {
  for (const auto& c : conditions) {
    if (c.type == type) {
      return &c;
    }
  }
  return nullptr;
}

bool Node::hasTaint(std::string_view key, std::string_view effect) const {
  return std::any_of(taints.begin(), taints.end(), [&](const Taint& t) {
    return t.key == key && (effect.empty() || t.effect == effect);
  });
}

}  // namespace ccm::kube
