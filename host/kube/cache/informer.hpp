// Informer<T>: a watched cache of one kind (Node, Service) with event handlers, like
// client-go's shared informer.
//
// Its thread ("inf-<kind>") lists (paged, limit 500, resourceVersion=0 first) and then
// watches from the list's resourceVersion with bookmarks; each watch asks the server to end
// after a random 5-10 minutes and is reopened from the last resourceVersion seen. A 410
// (Expired/Gone) or "too large resource version" relists; errors back off (0.8 s doubling to
// 30 s, jittered, reset after 2 min of calm). A relist diffs against the cache, so handlers
// see exactly the changes: no event is lost or repeated across reconnects. Objects are
// decoded from the stream straight into compact immutable objects.
//
// Handlers run on the informer thread, after the cache has been updated, one at a time;
// they must be quick (enqueue a key, nothing more). Cached objects are handed out as
// std::shared_ptr<const T> snapshots that never change.
//
// THREAD: get()/list()/size()/hasSynced()/waitForSync() from any thread; addEventHandler()
// from any thread (a late handler first gets an add for every cached object); start()/stop()
// from the owning thread.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "host/kube/objects/node.hpp"
#include "host/kube/objects/service.hpp"
#include "host/runtime/clock.hpp"

namespace ccm::metrics {
class Registry;
}

namespace ccm::kube {

class KubeClient;

struct InformerOptions {
  // Collection path; empty = the kind's default ("/api/v1/nodes", "/api/v1/services").
  std::string path;
  std::string label_selector;
  std::string field_selector;
  // Watches last a random time in [min_watch_timeout, 2 x min_watch_timeout].
  std::chrono::seconds min_watch_timeout{300};
  std::chrono::milliseconds initial_backoff{800};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds backoff_reset{120000};
  int page_size = 500;
  // Each list page must arrive within this, or the list fails and is retried with back-off
  // (kube-apiserver's own default request timeout is 60 s). Without it, a connection that
  // stalls mid-list (a proxy, a half-dead server) would keep the cache unsynced for ever.
  std::chrono::milliseconds list_timeout{60000};
  // Once a watch has handled every event it had, it waits this long before reading again
  // (StreamOptions::gather), so that a burst's events are read and decoded in batches, one
  // wake-up for many; an event after a quiet spell is handled at once. In the 5,000-node
  // burst 5 ms saved the node informer about 0.03 CPU-s (bench/RESULTS.md).
  std::chrono::milliseconds watch_gather{5};
  // While a watch stays busy (every wait finds events waiting: 100,000 kubelets heartbeating)
  // the wait doubles up to this (StreamOptions::gather_max), so a steady stream is read in
  // a few large batches a second rather than hundreds of small ones; events are then at most
  // this late. After a quiet spell it is back to watch_gather.
  std::chrono::milliseconds watch_gather_max{40};
  // Services only: whether each cached Service keeps its JSON (Service::raw_json), which only
  // load-balancer calls read. Off, raw_json is empty and a cached LoadBalancer Service is
  // about half as large.
  bool keep_object_json = true;
  // When set, the cache's size is published as ccm_informer_cached_objects{resource} and
  // ccm_informer_cached_bytes{resource} (see Informer::cachedBytes).
  metrics::Registry* metrics = nullptr;
};

template <typename T>
struct EventHandlers {
  std::function<void(const std::shared_ptr<const T>& obj)> on_add;
  // Also called by resync with old == new.
  std::function<void(const std::shared_ptr<const T>& old_obj,
                     const std::shared_ptr<const T>& new_obj)>
      on_update;
  // `final_state_unknown`: the deletion was noticed by a relist, `last` is the last state the
  // cache had (client-go's DeletedFinalStateUnknown).
  std::function<void(const std::shared_ptr<const T>& last, bool final_state_unknown)> on_delete;
};

class InformerBase {
 public:
  virtual ~InformerBase() = default;
  // True once the first list has been applied and its add events delivered.
  virtual bool hasSynced() const = 0;
  // Blocks until synced (true) or stop is requested (false).
  virtual bool waitForSync(std::stop_token stop) const = 0;
};

// Blocks until every informer has synced (true) or stop is requested (false).
bool waitForCacheSync(std::stop_token stop, std::initializer_list<const InformerBase*> informers);

template <typename T>
class Informer final : public InformerBase {
 public:
  // `client` may be null: a detached informer that never talks to a server, is synced at
  // start(), and is fed by injectForTest() (for controller unit tests).
  Informer(KubeClient* client, InformerOptions options = {}, Clock& clock = Clock::real());
  ~Informer() override;  // stops the thread
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // resync > 0: every resync period, on_update(obj, obj) for every cached object.
  void addEventHandler(EventHandlers<T> handlers, std::chrono::milliseconds resync = {});

  void start();
  void stop();

  bool hasSynced() const override;
  bool waitForSync(std::stop_token stop) const override;

  // The cached object with this key (nodes: name; services: "namespace/name"), or null.
  std::shared_ptr<const T> get(std::string_view key) const;
  std::vector<std::shared_ptr<const T>> list() const;
  size_t size() const;
  // Heap bytes the cached objects hold on their own: each object, its arena of strings and
  // arrays, and its control block. Strings interned in a decoder's shared pool (label keys,
  // condition types, ...) are not counted: they are shared by every object.
  size_t cachedBytes() const;
  // The resourceVersion the cache is known to be up to date with.
  std::string lastSyncResourceVersion() const;

  // Counters for tests and logs.
  struct Stats {
    uint64_t lists = 0;
    uint64_t watches = 0;
    uint64_t events = 0;
    uint64_t relists_after_expired = 0;
    // Nodes: watch events made from the cached node without a parse (heartbeats).
    uint64_t scanned_heartbeats = 0;
  };
  Stats stats() const;

  // Applies an event as if it came from the server (handlers run on the calling thread).
  // type: "ADDED", "MODIFIED", "DELETED". Marks the informer synced.
  void injectForTest(std::string_view type, std::shared_ptr<const T> obj);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class Informer<Node>;
extern template class Informer<Service>;

using NodeInformer = Informer<Node>;
using ServiceInformer = Informer<Service>;

}  // namespace ccm::kube
