// CidrSet implementation.
#include "host/controllers/ipam/cidr_set.hpp"

#include <fmt/format.h>

namespace ccm::controllers::ipam {

StatusOr<CidrSet> CidrSet::create(const Cidr& cluster, int node_mask) {
  if (node_mask < cluster.prefix) {
    return Status(Code::InvalidArgument,
                  fmt::format("node CIDR mask size /{} is shorter than the cluster CIDR {}",
                              node_mask, cluster.toString()));
  }
  if (node_mask > cluster.base.bits()) {
    return Status(Code::InvalidArgument,
                  fmt::format("node CIDR mask size /{} is too long for {}", node_mask,
                              cluster.toString()));
  }
  if (node_mask - cluster.prefix > 16) {
    return Status(Code::InvalidArgument,
                  fmt::format("node CIDR mask size /{} splits the cluster CIDR {} into more than "
                              "65536 node ranges",
                              node_mask, cluster.toString()));
  }
  return CidrSet(cluster, node_mask, uint64_t{1} << (node_mask - cluster.prefix));
}

std::optional<uint64_t> CidrSet::indexOf(const Cidr& cidr) const {
  if (cidr.prefix != node_mask_ || !cluster_.contains(cidr.base)) {
    return std::nullopt;
  }
  return cluster_.subnetIndex(cidr.base, node_mask_);
}

std::optional<Cidr> CidrSet::allocate() {
  uint64_t n = used_.size();
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t i = (next_ + k) % n;
    if (!used_[i]) {
      used_[i] = true;
      ++used_count_;
      ++allocations_;
      next_ = (i + 1) % n;
      return cluster_.subnet(node_mask_, i);
    }
  }
  return std::nullopt;
}

Status CidrSet::occupy(const Cidr& cidr) {
  auto i = indexOf(cidr);
  if (!i) {
    return Status(Code::InvalidArgument,
                  fmt::format("{} is not a /{} range of the cluster CIDR {}", cidr.toString(),
                              node_mask_, cluster_.toString()));
  }
  if (!used_[*i]) {
    used_[*i] = true;
    ++used_count_;
    ++allocations_;
  }
  return okStatus();
}

void CidrSet::release(const Cidr& cidr) {
  auto i = indexOf(cidr);
  if (i && used_[*i]) {
    used_[*i] = false;
    --used_count_;
    ++releases_;
  }
}

bool CidrSet::isUsed(const Cidr& cidr) const {
  auto i = indexOf(cidr);
  return i && used_[*i];
}

}  // namespace ccm::controllers::ipam
