// MetadataBatcher implementation.
#include "host/controllers/node/metadata_batcher.hpp"

#include "host/controllers/common/provider_refs.hpp"
#include "host/controllers/common/well_known.hpp"

namespace ccm::controllers::node {

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
  if (pending_.size() >= kMaxPending) {
    return;
  }
  auto [it, added] = pending_.emplace(name);
  if (!added) {
    return;  // already waiting, at its first place in line
  }
  pending_order_.push_back(*it);
  // Names forgotten or taken stay in the order until reached; do not let them pile up.
  if (pending_order_.size() > 2 * pending_.size() + 1024) {
    std::erase_if(pending_order_, [this](const std::string& n) { return !pending_.contains(n); });
  }
}

void MetadataBatcher::forget(std::string_view name) {
  std::lock_guard lock(mu_);
  std::string key(name);
  pending_.erase(key);
  ready_.erase(key);
}

size_t MetadataBatcher::pendingForTest() {
  std::lock_guard lock(mu_);
  return pending_.size();
}

size_t MetadataBatcher::readyForTest() {
  std::lock_guard lock(mu_);
  return ready_.size();
}

void MetadataBatcher::expireLocked(Clock::MonoTime now) {
  while (!ready_order_.empty() && now - ready_order_.front().second > kMaxAge) {
    auto it = ready_.find(ready_order_.front().first);
    // A newer result for the same name has its own, later place in the order.
    if (it != ready_.end() && it->second.fetched == ready_order_.front().second) {
      ready_.erase(it);
    }
    ready_order_.pop_front();
  }
}

std::vector<std::string> MetadataBatcher::takePendingLocked(size_t room) {
  std::vector<std::string> out;
  while (out.size() < room && !pending_order_.empty()) {
    std::string name = std::move(pending_order_.front());
    pending_order_.pop_front();
    if (pending_.erase(name) == 0 || in_flight_.contains(name)) {
      continue;  // forgotten, taken already, or being fetched
    }
    out.push_back(std::move(name));
  }
  return out;
}

MetadataAnswer MetadataBatcher::get(const std::shared_ptr<const kube::Node>& node) {
  return std::move(getAll({node}).front());
}

std::vector<MetadataAnswer> MetadataBatcher::getAll(const std::vector<NodePtr>& nodes) {
  std::vector<MetadataAnswer> out(nodes.size(), Status(Code::Internal, "no batch result"));
  if (!provider_.info().instances_batch.present) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      NodeRefs refs;
      out[i] = provider_.instanceMetadata(refs.add(nodes[i]));
    }
    return out;
  }
  std::vector<size_t> open(nodes.size());  // indexes still without an answer
  for (size_t i = 0; i < nodes.size(); ++i) {
    open[i] = i;
  }
  while (!open.empty()) {
    std::vector<size_t> mine;         // this round's nodes nobody else is fetching
    std::vector<std::string> others;  // announced nodes next in line, fetched along
    {
      std::unique_lock lock(mu_);
      for (;;) {
        expireLocked(clock_.now());
        std::vector<size_t> waiting;
        for (size_t i : open) {
          std::string name(nodes[i]->name());
          if (auto it = ready_.find(name); it != ready_.end()) {
            Entry e = std::move(it->second);
            ready_.erase(it);
            if (e.uid == nodes[i]->uid()) {
              out[i] = std::move(e.answer);
              continue;
            }
            // For an older node of the same name: fetch again.
          }
          (in_flight_.contains(name) ? waiting : mine).push_back(i);
        }
        open = std::move(waiting);
        if (!mine.empty() || open.empty()) {
          break;
        }
        // Only nodes another batch is fetching: it files their answers in ready_.
        cv_.wait(lock);
      }
      // Claimed under the same lock that found them unclaimed: no other batch takes them.
      for (size_t i : mine) {
        std::string name(nodes[i]->name());
        pending_.erase(name);  // its place in the order is skipped when reached
        in_flight_.insert(std::move(name));
      }
      size_t last_piece = mine.size() % max_batch_;
      others = takePendingLocked(last_piece == 0 ? 0 : max_batch_ - last_piece);
      in_flight_.insert(others.begin(), others.end());
    }
    // A batch holds at most max_batch_ nodes: a worker's share is far smaller, but fetch in
    // pieces should a caller ever pass more. The announced nodes ride with the last piece.
    const std::vector<std::string> none;
    for (size_t from = 0; from < mine.size(); from += max_batch_) {
      size_t to = std::min(mine.size(), from + max_batch_);
      std::vector<NodePtr> piece;
      for (size_t k = from; k < to; ++k) {
        piece.push_back(nodes[mine[k]]);
      }
      auto answers = fetch(piece, to == mine.size() ? others : none);
      for (size_t k = from; k < to; ++k) {
        out[mine[k]] = std::move(answers[k - from]);
      }
    }
  }
  return out;
}

std::vector<MetadataAnswer> MetadataBatcher::fetch(const std::vector<NodePtr>& mine,
                                                   const std::vector<std::string>& others) {
  std::vector<NodePtr> batch = mine;
  for (const auto& name : others) {
    auto other = lookup_(name);
    // Nodes that are gone or already initialised need nothing.
    if (other && other->hasTaint(keys::kUninitializedTaint)) {
      batch.push_back(std::move(other));
    }
  }
  NodeRefs refs(batch);
  auto results = provider_.instanceMetadataBatch(refs.refs());

  std::vector<MetadataAnswer> answers;
  answers.reserve(mine.size());
  std::lock_guard lock(mu_);
  auto now = clock_.now();
  expireLocked(now);
  for (size_t i = 0; i < batch.size(); ++i) {
    MetadataAnswer answer = Status(Code::Internal, "no batch result");
    if (!results.ok()) {
      answer = results.status();
    } else if (i < results->size()) {
      plugin::MetadataResult& r = (*results)[i];
      answer = r.ok() ? MetadataAnswer(std::optional<plugin::InstanceMetadata>(std::move(r).value()))
                      : MetadataAnswer(r.status());
    }
    if (i < mine.size()) {
      answers.push_back(std::move(answer));
    } else {
      std::string name(batch[i]->name());
      ready_.insert_or_assign(name, Entry{std::move(answer), std::string(batch[i]->uid()), now});
      ready_order_.emplace_back(std::move(name), now);
    }
  }
  for (const auto& n : mine) {
    in_flight_.erase(std::string(n->name()));
  }
  for (const auto& n : others) {
    in_flight_.erase(n);
  }
  cv_.notify_all();
  return answers;
}

}  // namespace ccm::controllers::node
