// The load balancers' host set snapshot.
#include "host/controllers/service/node_set.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "host/controllers/service/service_predicates.hpp"

namespace ccm::controllers::service {

NodeSet::NodeSet(std::vector<std::shared_ptr<const kube::Node>> nodes, uint64_t generation)
    : generation_(generation) {
  nodes_.reserve(nodes.size());
  for (auto& n : nodes) {
    if (n && nodeInLoadBalancerSet(*n)) {
      nodes_.push_back(std::move(n));
    }
  }
  std::sort(nodes_.begin(), nodes_.end(),
            [](const auto& a, const auto& b) { return a->name < b->name; });
  refs_.add(nodes_);
}

bool NodeSet::sameMembers(const NodeSet& other) const {
  if (nodes_.size() != other.nodes_.size()) {
    return false;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->name != other.nodes_[i]->name ||
        nodes_[i]->provider_id != other.nodes_[i]->provider_id) {
      return false;
    }
  }
  return true;
}

std::string NodeSet::loggableNames(size_t limit) const {
  std::string out = "[";
  size_t shown = std::min(limit, nodes_.size());
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) {
      out += ' ';
    }
    out += nodes_[i]->name;
  }
  if (nodes_.size() > shown) {
    out += fmt::format(" <{} more>", nodes_.size() - shown);
  }
  out += ']';
  return out;
}

bool sameMembers(const std::shared_ptr<const NodeSet>& a, const std::shared_ptr<const NodeSet>& b) {
  if (!a || !b) {
    return false;
  }
  return a == b || a->sameMembers(*b);
}

}  // namespace ccm::controllers::service
