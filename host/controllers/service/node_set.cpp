// The load balancers' host set snapshot.
#include "host/controllers/service/node_set.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_set>

#include "host/controllers/common/provider_refs.hpp"
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

// The two fields of a member the digest covers, from a built set's refs or from the Nodes.
std::string_view nameOf(const plugin::NodeRef& n) { return n.name; }
std::string_view providerIdOf(const plugin::NodeRef& n) { return n.provider_id; }
std::string_view nameOf(const std::shared_ptr<const kube::Node>& n) { return n->name(); }
std::string_view providerIdOf(const std::shared_ptr<const kube::Node>& n) {
  return n->providerId();
}

// FNV-1a over the same length-prefixed pairs: the digest only if OpenSSL cannot give SHA-256.
template <typename Members>
std::array<uint64_t, 2> fnvDigest(const Members& members) {
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
  for (const auto& n : members) {
    add(nameOf(n));
    add(providerIdOf(n));
  }
  return h;
}

// `members` sorted by name: NodeRefs of a built set, or the Nodes it would be built from.
template <typename Members>
Membership digestOf(const Members& members) {
  Membership m;
  m.count = std::size(members);
  std::unique_ptr<EVP_MD_CTX, DigestContextFree> ctx(EVP_MD_CTX_new());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  bool ok = ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1;
  for (auto it = std::begin(members); ok && it != std::end(members); ++it) {
    addLengthPrefixed(ctx.get(), nameOf(*it));
    addLengthPrefixed(ctx.get(), providerIdOf(*it));
  }
  ok = ok && EVP_DigestFinal_ex(ctx.get(), digest, &length) == 1 && length >= 16;
  if (ok) {
    std::memcpy(m.digest.data(), digest, 16);
  } else {
    m.digest = fnvDigest(members);
  }
  return m;
}

// The nodes of the load balancers' host set, sorted by name.
void keepMembers(std::vector<std::shared_ptr<const kube::Node>>& nodes) {
  std::erase_if(nodes, [](const auto& n) { return !n || !nodeInLoadBalancerSet(*n); });
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
}

// Annotation values up to this size are taken for ones nodes share ("true", "0"); longer ones
// (a CSI driver's node ID, a provided IP) are each node's own.
constexpr size_t kSharedAnnotationValue = 16;

// The node's own strings: copied once per node, in the block sized by ownBytes().
bool ownAddress(const kube::Node& n, const kube::NodeAddress& a) { return a.address != n.name(); }
bool ownAnnotationValue(std::string_view v) { return v.size() > kSharedAnnotationValue; }

// Bytes of a node's own strings (what TextStore::own() is asked for).
size_t ownBytes(const kube::Node& n) {
  kube::NodeSystemInfo info = n.nodeInfo();
  size_t bytes = n.name().size() + n.uid().size() + n.providerId().size() + info.machine_id.size() +
                 info.system_uuid.size() + info.boot_id.size();
  for (const auto& a : n.addresses()) {
    bytes += ownAddress(n, a) ? a.address.size() : 0;
  }
  for (const auto& kv : n.annotations()) {
    bytes += ownAnnotationValue(kv.value) ? kv.value.size() : 0;
  }
  return bytes;
}

// The set's text: each node's own strings in one block sized in advance, the strings nodes
// share once each in blocks allocated as they fill (never moved, so views stay valid).
class TextStore {
 public:
  TextStore(size_t own_bytes, std::vector<std::unique_ptr<char[]>>& blocks, size_t& total)
      : blocks_(blocks), total_(total) {
    if (own_bytes > 0) {
      own_at_ = allocate(own_bytes);
      own_left_ = own_bytes;
    }
  }

  std::string_view own(std::string_view s) {
    if (s.empty()) {
      return {};
    }
    if (s.size() > own_left_) {  // not sized for it (cannot happen): store it on its own
      return copy(s, allocate(s.size()));
    }
    std::string_view out = copy(s, own_at_);
    own_at_ += s.size();
    own_left_ -= s.size();
    return out;
  }

  std::string_view shared(std::string_view s) {
    if (s.empty()) {
      return {};
    }
    auto it = seen_.find(s);
    if (it != seen_.end()) {
      return *it;
    }
    if (s.size() > shared_left_) {
      size_t size = std::max(s.size(), next_block_);
      next_block_ = std::min(next_block_ * 2, kMaxSharedBlock);
      shared_at_ = allocate(size);
      shared_left_ = size;
    }
    std::string_view out = copy(s, shared_at_);
    shared_at_ += s.size();
    shared_left_ -= s.size();
    seen_.insert(out);
    return out;
  }

 private:
  static constexpr size_t kMaxSharedBlock = size_t{64} * 1024;

  char* allocate(size_t size) {
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(size));
    total_ += size;
    return blocks_.back().get();
  }
  static std::string_view copy(std::string_view s, char* to) {
    std::memcpy(to, s.data(), s.size());
    return {to, s.size()};
  }

  std::vector<std::unique_ptr<char[]>>& blocks_;
  size_t& total_;
  char* own_at_ = nullptr;
  size_t own_left_ = 0;
  char* shared_at_ = nullptr;
  size_t shared_left_ = 0;
  size_t next_block_ = 1024;
  std::unordered_set<std::string_view> seen_;  // keys view the set's own blocks
};

}  // namespace

NodeSet::NodeSet(std::vector<std::shared_ptr<const kube::Node>> nodes, uint64_t generation)
    : generation_(generation) {
  // The Nodes are read here only: `nodes` goes when the constructor returns.
  keepMembers(nodes);
  size_t own = 0;
  for (const auto& n : nodes) {
    pair_count_ += n->labels().size() + n->annotations().size();
    address_count_ += n->addresses().size();
    own += ownBytes(*n);
  }
  if (pair_count_ > 0) {
    pairs_ = std::make_unique<plugin::KeyValueRef[]>(pair_count_);
  }
  if (address_count_ > 0) {
    addresses_ = std::make_unique<plugin::AddressRef[]>(address_count_);
  }
  TextStore text(own, text_, text_bytes_);
  plugin::KeyValueRef* kv = pairs_.get();
  plugin::AddressRef* addr = addresses_.get();
  refs_.reserve(nodes.size());
  std::string_view name;  // the current node's name as copied: values equal to it share it
  auto copy = [&](std::string_view s, NodeText kind) -> std::string_view {
    switch (kind) {
      case NodeText::Name:
        return name = text.own(s);
      case NodeText::Own:
        return text.own(s);
      case NodeText::Shared:
        return text.shared(s);
      case NodeText::LabelValue:
        return s == name ? name : text.shared(s);
      case NodeText::AnnotationValue:
        return ownAnnotationValue(s) ? text.own(s) : text.shared(s);
      case NodeText::Address:
        return s == name ? name : text.own(s);
    }
    return text.own(s);
  };
  for (const auto& node : nodes) {
    plugin::NodeRef r = buildNodeRef(*node, kv, addr, copy);
    refs_.push_back(r);
  }
  membership_ = digestOf(refs_);
}

Membership membershipOf(std::vector<std::shared_ptr<const kube::Node>> nodes) {
  keepMembers(nodes);
  return digestOf(nodes);
}

size_t NodeSet::refBytes() const {
  return refs_.capacity() * sizeof(plugin::NodeRef) + pair_count_ * sizeof(plugin::KeyValueRef) +
         address_count_ * sizeof(plugin::AddressRef);
}

std::string NodeSet::loggableNames(size_t limit) const {
  std::string out = "[";
  size_t shown = std::min(limit, refs_.size());
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) {
      out += ' ';
    }
    out += refs_[i].name;
  }
  if (refs_.size() > shown) {
    out += fmt::format(" <{} more>", refs_.size() - shown);
  }
  out += ']';
  return out;
}

bool sameMembers(const std::optional<Membership>& synced, const Membership& current) {
  return synced && *synced == current;
}

}  // namespace ccm::controllers::service
