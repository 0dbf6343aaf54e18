// Watcher: one client watch on one resource type. The ObjectStore offers it every committed
// change of that type (under the store lock, in resourceVersion order); the watcher applies
// its namespace/label/field filter — including the transitions "stopped matching" (DELETED)
// and "started matching" (ADDED) — and queues what the client must see. The HTTP side drains
// the queue, rendering each item once into newline-delimited JSON watch events.
//
// The queue is bounded: a client that falls too far behind is cut off (its stream ends, as
// the real API server does with unresponsive watchers) instead of growing memory forever.
//
// THREAD: offer/enqueue* are called with the store lock held; drain() is called by the one
// consumer (the connection's strand); the waker may run on any thread. mu_ guards the queue.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kubesim/field_selector.hpp"
#include "kubesim/label_selector.hpp"
#include "kubesim/resource_registry.hpp"
#include "kubesim/stored_object.hpp"

namespace ccm::kubesim {

enum class EventType { Added, Modified, Deleted };
std::string_view eventTypeName(EventType t);

// One committed change. For Deleted, object is the last state carrying the deletion RV.
struct WatchEvent {
  EventType type = EventType::Added;
  uint64_t rv = 0;
  int type_id = 0;  // ResourceType::id of the write (storage may be shared)
  ObjectPtr object;
  ObjectPtr prev;  // state before the change (null for Added)
  std::chrono::steady_clock::time_point committed;  // when the store committed it
};
using EventPtr = std::shared_ptr<const WatchEvent>;

struct WatchFilter {
  std::string ns;  // empty: all namespaces
  LabelSelector labels;
  FieldSelector fields;

  bool matches(const StoredObject& obj) const;
};

// Renders queued items into bytes; chosen per watch (plain JSON, events.k8s.io view, Table).
class WatchRenderer {
 public:
  virtual ~WatchRenderer() = default;
  virtual void appendEvent(std::string& out, std::string_view type, const StoredObject& obj) = 0;
  virtual void appendBookmark(std::string& out, uint64_t rv, bool initial_events_end) = 0;
};

// The plain JSON renderer: {"type":T,"object":<stored json>}\n
class JsonWatchRenderer : public WatchRenderer {
 public:
  explicit JsonWatchRenderer(const ResourceType& type) : type_(type) {}
  void appendEvent(std::string& out, std::string_view type, const StoredObject& obj) override;
  void appendBookmark(std::string& out, uint64_t rv, bool initial_events_end) override;

 private:
  const ResourceType& type_;
};

class Watcher {
 public:
  Watcher(const ResourceType& type, WatchFilter filter, std::unique_ptr<WatchRenderer> renderer,
          size_t max_queue, bool bookmarks);

  const ResourceType& type() const { return type_; }
  bool bookmarksAllowed() const { return bookmarks_; }

  // --- producer side (store lock held) ---
  // A watch from a resourceVersion the server has not reached yet: events and bookmarks up
  // to and including rv are not sent (the stream stays silent until the store passes rv).
  void setFloor(uint64_t rv) { floor_ = rv; }
  void offer(const WatchEvent& ev);
  void enqueueInitial(const ObjectPtr& obj);
  void enqueueBookmark(uint64_t rv, bool initial_events_end);
  // An ERROR event carrying status_json, then the end of the stream.
  void enqueueError(std::string status_json);
  // Ends the stream after what is queued (close all watches, timeout, restart).
  void finish();

  // --- consumer side ---
  // Installs the one-shot wake-up; it fires (possibly at once) when drain() has news.
  void setWaker(std::function<void()> waker);
  // Renders everything queued into out. Returns false once the stream is over (all output
  // handed out and finish/error/overflow happened).
  bool drain(std::string& out);
  // The highest RV the client has been sent (for the final bookmark).
  uint64_t lastSentRv() const;
  bool overflowed() const;

 private:
  struct Item {
    enum Kind { Event, Bookmark, Error } kind = Event;
    EventType type = EventType::Added;
    ObjectPtr object;
    uint64_t rv = 0;
    bool initial_end = false;
    std::string text;
  };
  void push(Item item);  // mu_ held

  const ResourceType& type_;
  const WatchFilter filter_;
  const std::unique_ptr<WatchRenderer> renderer_;
  const size_t max_queue_;
  const bool bookmarks_;
  uint64_t floor_ = 0;  // set before registration; read under the store lock

  mutable std::mutex mu_;
  std::deque<Item> queue_;       // guarded by mu_
  std::function<void()> waker_;  // guarded by mu_
  bool ended_ = false;           // guarded by mu_: no more items will be queued
  bool overflow_ = false;        // guarded by mu_
  uint64_t last_rv_ = 0;         // guarded by mu_
};

}  // namespace ccm::kubesim
