// MetadataBatcher: instance metadata for nodes being initialised, fetched in batches.
//
// Informer handlers announce nodes that will need metadata (prefetch), in the order they
// arrive, which is the order the work queue hands them out. A worker that needs metadata for
// its share of the queue (getAll) takes the results another worker's batch already fetched,
// waits for the batches fetching them, and leads one batch itself for the rest: one
// ccm.instances.batch/1 call for all of its nodes plus the announced nodes next in line. A
// burst of 1,000 joining nodes therefore costs a handful of provider calls instead of 1,000.
// Providers without the batch capability get one instance_metadata call per node.
//
// Why arrival order: a result is used only for kMaxAge after it was fetched. With 100,000
// nodes joining, the queue is tens of thousands deep; a batch that took announced nodes in
// any other order (name order, as it once did) fetched nodes the workers would reach minutes
// later, their results expired unused, and those nodes were fetched again later in batches of
// a few: 0.5 provider calls per node at 100,000 nodes instead of 0.03. Expired results leave
// in fetch order, so no batch walks the whole table.
//
// THREAD: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "host/kube/objects/node.hpp"
#include "host/plugin/provider.hpp"
#include "host/runtime/clock.hpp"

namespace ccm::controllers::node {

using MetadataAnswer = StatusOr<std::optional<plugin::InstanceMetadata>>;

class MetadataBatcher {
 public:
  // Looks up the current snapshot of a node by name (the informer cache).
  using Lookup = std::function<std::shared_ptr<const kube::Node>(std::string_view name)>;

  MetadataBatcher(plugin::Provider& provider, Lookup lookup, Clock& clock);

  void prefetch(std::string_view name);
  void forget(std::string_view name);

  // The provider's answers for these nodes, in their order (each fetched at most kMaxAge ago,
  // for that node's UID). The caller owns these nodes (a work queue hands a node to one worker
  // at a time): no other caller asks for the same node meanwhile.
  std::vector<MetadataAnswer> getAll(const std::vector<std::shared_ptr<const kube::Node>>& nodes);
  MetadataAnswer get(const std::shared_ptr<const kube::Node>& node);

  // Results are used at most this long after they were fetched.
  static constexpr std::chrono::seconds kMaxAge{30};
  // At most this many announced nodes wait (a few MiB of names); later ones are fetched when
  // their worker asks, together with its other nodes.
  static constexpr size_t kMaxPending = 20000;

  // For tests: announced nodes waiting, and results fetched but not taken yet.
  size_t pendingForTest();
  size_t readyForTest();

 private:
  struct Entry {
    MetadataAnswer answer;
    std::string uid;
    Clock::MonoTime fetched;
  };
  using NodePtr = std::shared_ptr<const kube::Node>;

  // One provider call for `mine` (claimed by the caller) and `others` (announced nodes the
  // caller claimed along); returns the answers for `mine`, files the others' in ready_.
  std::vector<MetadataAnswer> fetch(const std::vector<NodePtr>& mine,
                                    const std::vector<std::string>& others);
  // Takes up to `room` announced nodes nobody is fetching, in arrival order. mu_ held.
  std::vector<std::string> takePendingLocked(size_t room);
  void expireLocked(Clock::MonoTime now);

  plugin::Provider& provider_;
  Lookup lookup_;
  Clock& clock_;
  size_t max_batch_;

  std::mutex mu_;
  std::condition_variable cv_;
  // Announced nodes: their arrival order (names forgotten or taken meanwhile are skipped
  // when reached) and the set of those still waiting.
  std::deque<std::string> pending_order_;                        // guarded by mu_
  std::unordered_set<std::string> pending_;                      // guarded by mu_
  std::unordered_set<std::string> in_flight_;                    // guarded by mu_
  std::unordered_map<std::string, Entry> ready_;                 // guarded by mu_
  std::deque<std::pair<std::string, Clock::MonoTime>> ready_order_;  // guarded by mu_; by fetch time
};

}  // namespace ccm::controllers::node
