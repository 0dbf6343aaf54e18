// Node accessors.
#include "host/kube/objects/node.hpp"

namespace ccm::kube {

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
