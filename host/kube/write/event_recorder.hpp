// Events: core/v1 Events written like client-go's legacy recorder (tools/record), which is
// what cloud controller managers use.
//
// A controller holds an EventRecorder (cheap handle, one per component name) and calls
// event(); that appends to a bounded queue (1,000) and never waits on the network. When a
// burst fills the queue while the sender is working, event() waits for room (at most
// enqueue_wait) instead of dropping: the controllers are paced to the rate at which the
// server takes events, memory stays bounded, and every event of normal operation is written
// (client-go's recorder writes every event too). An event is dropped only when the server is
// failing (the sender is retrying a transport error, or room did not come within
// enqueue_wait), at shutdown, or by the filters below; every drop is counted in
// ccm_events_dropped_total{reason} and logged once a minute at most. The EventBroadcaster's
// thread ("events") then, per event:
//  1. spam filter: per (source, involved object, type) a token bucket of 25, refilled one per
//     5 minutes; an empty bucket drops the event;
//  2. aggregation: after 10 different messages with the same (source, object, type, reason)
//     within 10 minutes, further ones become one "(combined from similar events): ..." event;
//  3. de-duplication: a repeat of an event already written is a PATCH of count,
//     lastTimestamp and message (a fresh POST if the event is gone); a new one is a POST of
//     <name>.<unix-nanos hex> in the object's namespace ("default" for cluster-scoped objects).
// Delivery: up to 12 attempts, 10 s apart (the first wait random in [0, 10 s)); an HTTP error
// answer gives up at once, a transport error retries. When events queue up, the sender takes
// up to 32 at once and sends their first writes together (KubeApi::writeBatch: pipelined on
// one connection), which costs the server and the sender one wake-up for many events.
//
// THREAD: EventRecorder::event() from any thread; the broadcaster's methods from its owner.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "host/kube/api/kube_api.hpp"
#include "host/kube/objects/node.hpp"
#include "host/kube/objects/service.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/rate_limiter.hpp"

namespace ccm::kube {

class Random;

struct ObjectReference {
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string api_version;
  std::string resource_version;
  std::string field_path;
};

ObjectReference referenceTo(const Node& node);
ObjectReference referenceTo(const Service& service);

enum class EventType : uint8_t { Normal, Warning };

struct EventRecorderOptions {
  std::string host;  // source.host / reportingInstance; empty = this machine's hostname
  size_t queue_size = 1000;
  int max_attempts = 12;
  std::chrono::milliseconds retry_interval{10000};
  int spam_burst = 25;
  std::chrono::seconds spam_refill{300};
  size_t cache_size = 4096;
  size_t aggregate_max_events = 10;
  std::chrono::seconds aggregate_window{600};
  // At shutdown, how long queued events may take in total before the rest are dropped (an
  // unreachable API server must not hold the process up: one try of up to 1 s each would add
  // up to minutes with a full queue).
  std::chrono::milliseconds shutdown_grace{2000};
  // When events are queued up, at most this many are taken at once and their writes sent
  // together (pipelined: one wake-up of the server and of the sender for many events); the
  // sender reads the answers after waiting batch_gather for them to pile up. 1: one by one.
  size_t batch_size = 32;
  std::chrono::microseconds batch_gather{2000};
  // How long event() may wait for room in a full queue while the sender thread runs and the
  // server answers; past it (a server that stopped answering) the event is dropped.
  std::chrono::milliseconds enqueue_wait{30000};
  // Where ccm_events_dropped_total, ccm_events_queue_length and ccm_events_queue_peak_length
  // go; none when null.
  metrics::Registry* metrics = nullptr;
};

class EventBroadcaster;

class EventRecorder {
 public:
  EventRecorder() = default;
  // Queues an event; never waits on the network, but waits (bounded) for room in a full
  // queue while the sender is draining it. Does nothing on a default-constructed recorder.
  void event(const ObjectReference& object, EventType type, std::string_view reason,
             std::string message) const;
  template <typename... Args>
  void eventf(const ObjectReference& object, EventType type, std::string_view reason,
              fmt::format_string<Args...> format, Args&&... args) const {
    event(object, type, reason, fmt::format(format, std::forward<Args>(args)...));
  }
  const std::string& component() const { return component_; }

 private:
  friend class EventBroadcaster;
  EventRecorder(EventBroadcaster* owner, std::string component, bool may_wait)
      : owner_(owner), component_(std::move(component)), may_wait_(may_wait) {}
  EventBroadcaster* owner_ = nullptr;
  std::string component_;
  bool may_wait_ = true;
};

class EventBroadcaster {
 public:
  EventBroadcaster(KubeApi& api, EventRecorderOptions options = {}, Clock& clock = Clock::real());
  ~EventBroadcaster();  // shutdown()
  EventBroadcaster(const EventBroadcaster&) = delete;
  EventBroadcaster& operator=(const EventBroadcaster&) = delete;

  // A recorder whose events carry source.component = component. may_wait = false: its
  // events never wait for room in a full queue (they are dropped instead), for callers that
  // must not be held up at all (leader election).
  EventRecorder recorder(std::string component, bool may_wait = true);

  // Starts the sender thread.
  void start();
  // Stops the sender: what is queued gets one delivery attempt (1 s timeout each) within
  // options.shutdown_grace in total, then the thread exits. Later events are dropped.
  void shutdown();

  // Tests without the thread: processes every queued event now, in batches as the thread
  // does, each write tried once (no retry waits).
  void processQueuedForTest();
  // Tests: replace the randomness of the first retry wait.
  void setRandomForTest(Random* random) { random_ = random; }

  struct Stats {
    uint64_t created = 0;
    uint64_t patched = 0;
    uint64_t dropped_queue_full = 0;          // no room in time, or no sender thread (tests)
    uint64_t dropped_server_unavailable = 0;  // queue full while the sender retries
    uint64_t dropped_spam = 0;
    uint64_t dropped_shutdown = 0;  // still queued when the shutdown grace ran out
    uint64_t failed = 0;
  };
  Stats stats() const;

 private:
  friend class EventRecorder;
  struct Pending {
    ObjectReference object;
    EventType type;
    std::string reason;
    std::string message;
    std::string component;
    Clock::WallTime time;
    bool may_wait = true;  // may wait for room in a full queue
  };
  struct Sent {
    std::string name;
    std::string namespace_;
    int32_t count = 0;
    int64_t first_timestamp = 0;
  };
  struct Aggregate {
    std::unordered_set<std::string> messages;
    Clock::MonoTime last{};
  };
  template <typename V>
  struct Lru {
    size_t capacity;
    std::list<std::pair<std::string, V>> items;
    std::unordered_map<std::string, typename std::list<std::pair<std::string, V>>::iterator> index;
    V* find(const std::string& key);
    V& put(const std::string& key, V value);
  };

  // An event past the spam filter and aggregation, on its way to the server.
  struct Outgoing {
    std::string dedup_key;
    std::string message;
    Sent record;          // what it is written as
    bool repeat = false;  // a repeat of an event already written: a PATCH of its count
  };

  void enqueue(Pending p);
  // Counts a dropped event under `reason` (stats and ccm_events_dropped_total).
  void countDropLocked(std::string_view reason, uint64_t n = 1);
  // Publishes the queue's length (and peak) after it changed; mu_ is held.
  void publishQueueLocked();
  // The sender's view of the server, for producers waiting on a full queue.
  void setServerFailing(bool failing);
  void run(std::stop_token stop);
  // Several queued events, their first writes sent together (KubeApi::writeBatch).
  void processBatch(const std::vector<Pending>& batch, bool final_attempt_only,
                    std::stop_token stop);
  // Up to `most` events (at least one, if any) from the front of the queue; mu_ is held.
  std::vector<Pending> takeLocked(size_t most);
  // Steps 1 and 2, the spam filter and aggregation; nullopt when the spam filter drops it.
  std::optional<Outgoing> admit(const Pending& p);
  // Step 3's choice: a new event, or a repeat of one already written.
  void prepare(Outgoing* out, const Pending& p);
  // The write for an event: a POST of the whole event, or for a repeat a PATCH of its count.
  Write writeFor(const Outgoing& out, const Pending& p) const;
  // Step 3, delivery: `first` is the outcome of a first write already made (in a batch).
  // Counts a success or failure in the stats; retries a transport failure
  // (options_.max_attempts in all).
  void deliver(Outgoing& out, const Pending& p, std::optional<ApiStatus> first,
               bool final_attempt_only, std::stop_token stop);

  KubeApi& api_;
  EventRecorderOptions options_;
  Clock& clock_;
  Random* random_ = nullptr;
  metrics::Family<metrics::Counter>* dropped_metric_ = nullptr;
  metrics::Gauge* queue_length_metric_ = nullptr;
  metrics::Gauge* queue_peak_metric_ = nullptr;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::condition_variable_any room_cv_;  // producers waiting for room in the queue
  std::deque<Pending> queue_;            // guarded by mu_
  size_t queue_peak_ = 0;                // guarded by mu_
  bool shut_down_ = false;               // guarded by mu_
  bool sender_running_ = false;          // guarded by mu_
  bool server_failing_ = false;          // guarded by mu_; a transport error being retried
  Stats stats_;                          // guarded by mu_
  Clock::MonoTime last_drop_warning_{};  // guarded by mu_

  // Sender-thread state (only the sender touches these).
  Lru<std::unique_ptr<TokenBucket>> spam_;
  Lru<Aggregate> aggregates_;
  Lru<Sent> sent_;

  std::jthread thread_;
};

}  // namespace ccm::kube
