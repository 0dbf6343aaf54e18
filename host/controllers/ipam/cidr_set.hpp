// CidrSet: the node pod-CIDR allocator of one cluster CIDR: a bitmap of the cluster CIDR's
// subnets of the node mask size, allocated next-fit.
//
// THREAD: not thread-safe; the IPAM controller serialises access.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "host/controllers/common/cidr.hpp"

namespace ccm::controllers::ipam {

class CidrSet {
 public:
  // The number of subnets is capped at 2^16 (upstream's limit): a mask size more than 16 bits
  // longer than the cluster CIDR's prefix is an error, as is one shorter than the prefix.
  static StatusOr<CidrSet> create(const Cidr& cluster, int node_mask);

  const Cidr& cluster() const { return cluster_; }
  int nodeMask() const { return node_mask_; }
  uint64_t size() const { return used_.size(); }
  uint64_t usedCount() const { return used_count_; }
  // Ranges that went from free to used (allocate, or occupy of a free range) and from used to
  // free (release of a used range), over the set's life: allocations() - releases() is always
  // usedCount(), so metrics read from here agree with the ranges in use.
  uint64_t allocations() const { return allocations_; }
  uint64_t releases() const { return releases_; }

  // The next free subnet, or nullopt when the set is full.
  std::optional<Cidr> allocate();
  // Marks a subnet used. Errors when it is not a subnet of this set (wrong family, outside
  // the cluster CIDR, other mask size).
  Status occupy(const Cidr& cidr);
  void release(const Cidr& cidr);
  bool isUsed(const Cidr& cidr) const;

 private:
  CidrSet(Cidr cluster, int node_mask, uint64_t count)
      : cluster_(cluster), node_mask_(node_mask), used_(count, false) {}
  std::optional<uint64_t> indexOf(const Cidr& cidr) const;

  Cidr cluster_;
  int node_mask_;
  std::vector<bool> used_;
  uint64_t used_count_ = 0;
  uint64_t allocations_ = 0;
  uint64_t releases_ = 0;
  uint64_t next_ = 0;
};

}  // namespace ccm::controllers::ipam
