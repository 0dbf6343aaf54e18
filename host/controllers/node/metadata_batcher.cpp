// MetadataBatcher implementation.
#include "host/controllers/node/metadata_batcher.hpp"

#include <vector>

#include "host/controllers/common/provider_refs.hpp"
#include "host/controllers/common/well_known.hpp"

namespace ccm::controllers::node {
namespace {
constexpr size_t kMaxPending = 20000;
}

MetadataBatcher::MetadataBatcher(plugin::Provider& provider, Lookup lookup, Clock& clock)
    : provider_(provider), lookup_(std::move(lookup)), clock_(clock) {
  uint32_t limit = provider_.info().max_batch_size;
  max_batch_ = limit > 0 ? limit : 500;
}

void MetadataBatcher::prefetch(std::string_view name) {
  if (!provider_.info().instances_batch.present) {
    return;
  }
  std::lock_guard lock(mu_);
  if (pending_.size() < kMaxPending) {
    pending_.emplace(name);
  }
}

void MetadataBatcher::forget(std::string_view name) {
  std::lock_guard lock(mu_);
  if (auto it = pending_.find(name); it != pending_.end()) {
    pending_.erase(it);
  }
  ready_.erase(std::string(name));
}

MetadataAnswer MetadataBatcher::single(const std::shared_ptr<const kube::Node>& node) {
  NodeRefs refs;
  plugin::NodeRef ref = refs.add(node);
  return provider_.instanceMetadata(ref);
}

void MetadataBatcher::sweepLocked(Clock::MonoTime now) {
  for (auto it = ready_.begin(); it != ready_.end();) {
    it = now - it->second.fetched > kMaxAge ? ready_.erase(it) : std::next(it);
  }
}

MetadataAnswer MetadataBatcher::get(const std::shared_ptr<const kube::Node>& node) {
  if (!provider_.info().instances_batch.present) {
    return single(node);
  }
  std::string name(node->name);
  std::vector<std::string> names;
  {
    std::unique_lock lock(mu_);
    for (;;) {
      auto it = ready_.find(name);
      if (it != ready_.end()) {
        Entry e = std::move(it->second);
        ready_.erase(it);
        if (e.uid == node->uid && clock_.now() - e.fetched <= kMaxAge) {
          return std::move(e.answer);
        }
        continue;  // stale or for an older node of the same name: fetch again
      }
      if (in_flight_.count(name) == 0) {
        break;
      }
      cv_.wait(lock);
    }
    // Lead a batch: this node plus every announced node nobody is fetching yet.
    names.push_back(name);
    pending_.erase(name);
    for (auto it = pending_.begin(); it != pending_.end() && names.size() < max_batch_;) {
      if (in_flight_.count(*it) == 0) {
        names.push_back(*it);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    in_flight_.insert(names.begin(), names.end());
  }

  std::vector<std::shared_ptr<const kube::Node>> nodes;
  nodes.push_back(node);
  for (size_t i = 1; i < names.size(); ++i) {
    auto other = lookup_(names[i]);
    // Nodes that are gone or already initialised need nothing.
    if (other && other->hasTaint(keys::kUninitializedTaint)) {
      nodes.push_back(std::move(other));
    }
  }
  NodeRefs refs(nodes);
  auto results = provider_.instanceMetadataBatch(refs.refs());

  std::lock_guard lock(mu_);
  auto now = clock_.now();
  sweepLocked(now);
  MetadataAnswer mine = Status(Code::Internal, "no batch result");
  for (size_t i = 0; i < nodes.size(); ++i) {
    MetadataAnswer answer = Status(Code::Internal, "no batch result");
    if (!results.ok()) {
      answer = results.status();
    } else if (i < results->size()) {
      plugin::MetadataResult& r = (*results)[i];
      answer = r.ok() ? MetadataAnswer(std::optional<plugin::InstanceMetadata>(std::move(r).value()))
                      : MetadataAnswer(r.status());
    }
    if (i == 0) {
      mine = std::move(answer);
    } else {
      ready_.insert_or_assign(std::string(nodes[i]->name),
                              Entry{std::move(answer), std::string(nodes[i]->uid), now});
    }
  }
  for (const auto& n : names) {
    in_flight_.erase(n);
  }
  cv_.notify_all();
  return mine;
}

}  // namespace ccm::controllers::node
