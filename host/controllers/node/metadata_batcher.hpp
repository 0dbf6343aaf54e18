// MetadataBatcher: instance metadata for nodes being initialised, fetched in batches.
//
// Informer handlers announce nodes that will need metadata (prefetch). A worker that needs
// metadata for a node either takes a result another worker's batch already fetched, waits for
// the batch that is fetching it, or leads a batch itself: one ccm.instances.batch/1 call for
// its node plus every other announced node. A burst of 1,000 joining nodes therefore costs a
// handful of provider calls instead of 1,000. Providers without the batch capability get one
// instance_metadata call per node.
//
// THREAD: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

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

  // The provider's answer for this node (fetched at most kMaxAge ago, for this node's UID).
  MetadataAnswer get(const std::shared_ptr<const kube::Node>& node);

  // Results are used at most this long after they were fetched.
  static constexpr std::chrono::seconds kMaxAge{30};

 private:
  struct Entry {
    MetadataAnswer answer;
    std::string uid;
    Clock::MonoTime fetched;
  };

  MetadataAnswer single(const std::shared_ptr<const kube::Node>& node);
  void sweepLocked(Clock::MonoTime now);

  plugin::Provider& provider_;
  Lookup lookup_;
  Clock& clock_;
  size_t max_batch_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string, std::less<>> pending_;    // guarded by mu_
  std::set<std::string, std::less<>> in_flight_;  // guarded by mu_
  std::unordered_map<std::string, Entry> ready_;  // guarded by mu_
};

}  // namespace ccm::controllers::node
