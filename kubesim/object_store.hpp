// ObjectStore: kubesim's etcd + watch cache. Holds every object of every resource type,
// the one global, strictly increasing resourceVersion counter, a bounded per-type history of
// changes (the watch window), and the registered watchers.
//
// Writes are optimistic: callers read an ObjectPtr, compute the new object outside the lock,
// and commit with "expected = what I read"; a concurrent change makes the commit Stale and the
// caller recomputes (the API server's GuaranteedUpdate loop). The lock is held only to
// compare pointers, splice the RV into the prepared JSON, update the map and history, and
// hand the event to matching watchers — so events reach watchers in RV order.
//
// Lists can be served at an older RV within the history window (exact-RV lists, consistent
// continue pages) by undoing the newer history entries.
//
// Reads at resourceVersion "0" come from the API server's watch cache, which trails etcd:
// getCached() and lists with from_cache see only the writes committed at least
// Options::watch_cache_lag ago (younger ones are undone the same way), and cached lists come
// back in no particular order.
//
// THREAD: all methods may be called from any thread; mu_ guards all state. Observers run
// after the lock is released, on the committing thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kubesim/api_error.hpp"
#include "kubesim/object_table.hpp"
#include "kubesim/resource_registry.hpp"
#include "kubesim/stored_object.hpp"
#include "kubesim/watcher.hpp"

namespace ccm::kubesim {

class ObjectStore {
 public:
  struct Options {
    size_t history_size = 5000;  // events kept per storage (resource type)
    // How far the watch cache (resourceVersion=0 reads) trails the latest write; 0: not at all.
    std::chrono::milliseconds watch_cache_lag{0};
  };

  ObjectStore(const ResourceRegistry& registry, Options options);

  uint64_t currentRv() const;

  ObjectPtr get(const ResourceType& type, std::string_view ns, std::string_view name) const;
  // The object as the (lagging) watch cache holds it.
  ObjectPtr getCached(const ResourceType& type, std::string_view ns, std::string_view name) const;
  // Number of objects of a type (optionally in one namespace).
  size_t count(const ResourceType& type, std::string_view ns = {}) const;

  struct ListRequest {
    std::string ns;  // empty: all namespaces
    LabelSelector labels;
    FieldSelector fields;
    size_t limit = 0;               // 0: no paging
    std::string start_key;          // first key to consider (inclusive); from a continue token
    std::optional<uint64_t> at_rv;  // serve the state at this RV (exact); nullopt: latest
    // The watch cache's state, unordered, at least at_rv when set (limit unused).
    bool from_cache = false;
  };
  struct ListResult {
    std::vector<ObjectPtr> items;
    uint64_t rv = 0;       // snapshot RV
    // Non-empty: more keys follow the page (as etcd's "more": with selectors they may all fail
    // to match, so the next page can be empty); continue from this key.
    std::string next_key;
    size_t remaining = 0;  // objects after this page (meaningful without selectors)
  };
  // Fails with 410 Expired when at_rv is older than the history window.
  ApiOr<ListResult> list(const ResourceType& type, const ListRequest& request) const;

  enum class CommitStatus { Ok, Stale, NoOp };
  struct CommitResult {
    CommitStatus status = CommitStatus::Ok;
    ObjectPtr object;  // the stored object (Ok, NoOp) or the current one (Stale)
  };
  // Stores next under (ns, name) if the current object is still `expected` (nullptr: must
  // not exist). NoOp when next has the same content as the current object. The rvalue form
  // takes next's strings when it commits (Ok); next is left as it was otherwise.
  CommitResult put(const ResourceType& type, const ObjectPtr& expected, PreparedObject&& next);
  CommitResult put(const ResourceType& type, const ObjectPtr& expected, const PreparedObject& next);
  // Deletes (ns, name) if the current object is still `expected`. final_state, when given, is
  // the content watchers see in the DELETED event (an update that removed the last finalizer).
  CommitResult remove(const ResourceType& type, const ObjectPtr& expected,
                      const PreparedObject* final_state = nullptr);

  // --- watches ---
  // InitialCachedState: resourceVersion=0, the watch cache's (lagging) state as ADDED events,
  // then every change after it.
  enum class WatchMode { FromRv, InitialState, InitialCachedState, InitialStateWithBookmark };
  // Registers w: replays history after rv (FromRv) or sends the current state as ADDED
  // (Initial*, then the initial-events-end bookmark for the WithBookmark mode). Fails with
  // 410 Expired (FromRv older than the window). A FromRv in the future registers a silent
  // watch that starts delivering once the store passes rv.
  ApiOr<bool> watch(const std::shared_ptr<Watcher>& w, WatchMode mode, uint64_t rv);
  void unregister(const std::shared_ptr<Watcher>& w);
  // Queues a bookmark at the current RV (ordering is exact: under the lock).
  void bookmark(Watcher& w);
  // Ends every watch (clients re-watch from their last RV).
  size_t closeAllWatchers();
  size_t watcherCount() const;

  // --- history ---
  // Forgets all history: every watch/list at an RV below the current one gets 410.
  void compact();
  // Forgets the history up to and including rv (etcd compaction at a revision).
  void compactTo(uint64_t rv);
  // The oldest RV a watch of this type can resume from.
  uint64_t compactedRv(const ResourceType& type) const;

  // --- bulk state (state file, restart) ---
  struct Snapshot {
    uint64_t rv = 0;
    std::vector<std::pair<int, ObjectPtr>> objects;  // (type id, object)
  };
  Snapshot snapshot() const;
  // Replaces everything; the counter becomes max(current, snapshot.rv); history is empty.
  void load(const Snapshot& snapshot);
  // Drops every object (keeps the counter); history is empty.
  void clear();

  // Called after every commit (outside the lock) with the committed event.
  using Observer = std::function<void(const WatchEvent&)>;
  void addObserver(Observer observer);

 private:
  struct Storage {
    ObjectTable<ObjectPtr> objects;  // by store key; key order for lists and watches
    std::deque<EventPtr> history;
    uint64_t compacted = 0;  // history holds every event with rv > compacted
    std::vector<std::shared_ptr<Watcher>> watchers;
  };

  Storage& storage(const ResourceType& type) { return storages_[type.storage_id]; }
  const Storage& storage(const ResourceType& type) const { return storages_[type.storage_id]; }
  // mu_ held. Appends to history, trims, and offers to watchers.
  void publish(Storage& s, const EventPtr& ev);
  void notify(const EventPtr& ev);
  // mu_ held. The RV the watch cache of s has reached (its first young event's RV - 1).
  uint64_t cacheRv(const Storage& s) const;

  const ResourceRegistry& registry_;
  const Options options_;

  mutable std::mutex mu_;
  uint64_t rv_ = 0;                // guarded by mu_
  std::vector<Storage> storages_;  // guarded by mu_

  std::mutex observers_mu_;
  std::vector<Observer> observers_;  // guarded by observers_mu_ (append-only at start-up)
};

}  // namespace ccm::kubesim
