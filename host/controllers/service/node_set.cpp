// The load balancers' host set snapshot.
#include "host/controllers/service/node_set.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>

#include "host/controllers/service/service_predicates.hpp"

namespace ccm::controllers::service {

namespace {

struct DigestContextFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

void addLengthPrefixed(EVP_MD_CTX* ctx, std::string_view text) {
  uint64_t size = text.size();
  unsigned char prefix[sizeof(size)];
  std::memcpy(prefix, &size, sizeof(size));
  EVP_DigestUpdate(ctx, prefix, sizeof(prefix));
  EVP_DigestUpdate(ctx, text.data(), text.size());
}

// FNV-1a over the same length-prefixed pairs: the digest only if OpenSSL cannot give SHA-256.
std::array<uint64_t, 2> fnvDigest(const std::vector<std::shared_ptr<const kube::Node>>& nodes) {
  std::array<uint64_t, 2> h{0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
  auto add = [&h](std::string_view text) {
    uint64_t size = text.size();
    for (size_t i = 0; i < sizeof(size); ++i) {
      h[0] = (h[0] ^ ((size >> (8 * i)) & 0xff)) * 0x100000001b3ULL;
    }
    for (unsigned char c : text) {
      h[0] = (h[0] ^ c) * 0x100000001b3ULL;
      h[1] = (h[1] ^ c) * 0x100000001b3ULL + 1;
    }
  };
  for (const auto& n : nodes) {
    add(n->name);
    add(n->provider_id);
  }
  return h;
}

// nodes sorted by name.
Membership membershipOf(const std::vector<std::shared_ptr<const kube::Node>>& nodes) {
  Membership m;
  m.count = nodes.size();
  std::unique_ptr<EVP_MD_CTX, DigestContextFree> ctx(EVP_MD_CTX_new());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  bool ok = ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1;
  for (size_t i = 0; ok && i < nodes.size(); ++i) {
    addLengthPrefixed(ctx.get(), nodes[i]->name);
    addLengthPrefixed(ctx.get(), nodes[i]->provider_id);
  }
  ok = ok && EVP_DigestFinal_ex(ctx.get(), digest, &length) == 1 && length >= 16;
  if (ok) {
    std::memcpy(m.digest.data(), digest, 16);
  } else {
    m.digest = fnvDigest(nodes);
  }
  return m;
}

}  // namespace

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
  membership_ = membershipOf(nodes_);
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

bool sameMembers(const std::optional<Membership>& synced,
                 const std::shared_ptr<const NodeSet>& current) {
  return synced && current && *synced == current->membership();
}

}  // namespace ccm::controllers::service
