// Event recording: queue, correlation (spam filter, aggregation, de-duplication), delivery.
#include "host/kube/write/event_recorder.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "host/kube/api/retry.hpp"
#include "host/kube/api/time_format.hpp"
#include "host/kube/write/json_writer.hpp"
#include "host/log/log.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::kube {
namespace {

using json::optionalField;
using json::str;
using json::Writer;

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) {
    return "unknown";
  }
  return buf;
}

std::string_view typeName(EventType t) {
  return t == EventType::Warning ? "Warning" : "Normal";
}

std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (auto p : parts) {
    out.append(p);
    out.push_back('\x1f');
  }
  return out;
}

// A valid DNS-1123 subdomain (what event names must be).
bool validName(std::string_view name) {
  if (name.empty() || name.size() > 253) {
    return false;
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) {
      return false;
    }
  }
  return true;
}

std::string uuid4() {
  SeededRandom r;
  auto hex = [&r](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) {
      s.push_back("0123456789abcdef"[static_cast<int>(r.uniform() * 16) & 15]);
    }
    return s;
  };
  return hex(8) + "-" + hex(4) + "-4" + hex(3) + "-a" + hex(3) + "-" + hex(12);
}

CallOptions callOptions(bool final_attempt_only, std::stop_token stop) {
  CallOptions call;
  if (final_attempt_only) {
    call.timeout = std::chrono::seconds(1);  // shutting down: one quick try
  } else {
    call.stop = stop;
  }
  return call;
}

}  // namespace

ObjectReference referenceTo(const Node& node) {
  std::string name(node.name());
  return ObjectReference{"Node", "", std::move(name), std::string(node.uid()), "v1", "", ""};
}

ObjectReference referenceTo(const Service& svc) {
  return ObjectReference{"Service",
                         std::string(svc.namespace_),
                         std::string(svc.name),
                         std::string(svc.uid),
                         "v1",
                         std::string(svc.resource_version),
                         ""};
}

// ---- LRU --------------------------------------------------------------------------------------

template <typename V>
V* EventBroadcaster::Lru<V>::find(const std::string& key) {
  auto it = index.find(key);
  if (it == index.end()) {
    return nullptr;
  }
  items.splice(items.begin(), items, it->second);
  return &it->second->second;
}

template <typename V>
V& EventBroadcaster::Lru<V>::put(const std::string& key, V value) {
  if (V* existing = find(key)) {
    *existing = std::move(value);
    return *existing;
  }
  items.emplace_front(key, std::move(value));
  index[key] = items.begin();
  while (items.size() > capacity) {
    index.erase(items.back().first);
    items.pop_back();
  }
  return items.front().second;
}

// ---- recorder ---------------------------------------------------------------------------------

void EventRecorder::event(const ObjectReference& object, EventType type, std::string_view reason,
                          std::string message) const {
  if (owner_ == nullptr) {
    return;
  }
  owner_->enqueue(EventBroadcaster::Pending{object, type, std::string(reason), std::move(message),
                                            component_, owner_->clock_.wallNow(), may_wait_});
}

EventBroadcaster::EventBroadcaster(KubeApi& api, EventRecorderOptions options, Clock& clock)
    : api_(api), options_(std::move(options)), clock_(clock) {
  if (options_.host.empty()) {
    options_.host = hostname();
  }
  spam_.capacity = options_.cache_size;
  aggregates_.capacity = options_.cache_size;
  sent_.capacity = options_.cache_size;
  if (metrics::Registry* m = options_.metrics) {
    dropped_metric_ = m->counter("ccm_events_dropped_total",
                                 "Events not written to the API server, by why: queue_full, "
                                 "server_unavailable, spam_filter, rejected, retries_exhausted, "
                                 "shutdown.",
                                 {"reason"});
    if (auto* g = m->gauge("ccm_events_queue_length", "Events waiting to be written.")) {
      queue_length_metric_ = &g->noLabels();
    }
    if (auto* g = m->gauge("ccm_events_queue_peak_length",
                           "The most events that have waited to be written at once.")) {
      queue_peak_metric_ = &g->noLabels();
    }
    if (dropped_metric_ != nullptr) {
      for (const char* reason : {"queue_full", "server_unavailable", "spam_filter", "rejected",
                                 "retries_exhausted", "shutdown"}) {
        dropped_metric_->labels({reason});
      }
    }
  }
}

void EventBroadcaster::countDropLocked(std::string_view reason, uint64_t n) {
  if (reason == "queue_full") {
    stats_.dropped_queue_full += n;
  } else if (reason == "server_unavailable") {
    stats_.dropped_server_unavailable += n;
  } else if (reason == "spam_filter") {
    stats_.dropped_spam += n;
  } else if (reason == "shutdown") {
    stats_.dropped_shutdown += n;
  } else {
    stats_.failed += n;  // rejected, retries_exhausted
  }
  if (dropped_metric_ != nullptr) {
    dropped_metric_->labels({std::string(reason)}).inc(static_cast<double>(n));
  }
}

void EventBroadcaster::publishQueueLocked() {
  queue_peak_ = std::max(queue_peak_, queue_.size());
  if (queue_length_metric_ != nullptr) {
    queue_length_metric_->set(static_cast<double>(queue_.size()));
  }
  if (queue_peak_metric_ != nullptr) {
    queue_peak_metric_->set(static_cast<double>(queue_peak_));
  }
}

void EventBroadcaster::setServerFailing(bool failing) {
  std::lock_guard lock(mu_);
  if (server_failing_ != failing) {
    server_failing_ = failing;
    room_cv_.notify_all();  // waiting producers stop waiting for a sender that is stuck
  }
}

EventBroadcaster::~EventBroadcaster() {
  shutdown();
}

EventRecorder EventBroadcaster::recorder(std::string component, bool may_wait) {
  return EventRecorder(this, std::move(component), may_wait);
}

void EventBroadcaster::enqueue(Pending p) {
  uint64_t dropped = 0;
  std::string_view why;
  {
    std::unique_lock lock(mu_);
    auto has_room = [this] { return queue_.size() < options_.queue_size; };
    if (p.may_wait && !shut_down_ && !has_room() && sender_running_ && !server_failing_) {
      // Pace the producer to the sender instead of dropping; bounded, so a server that stops
      // answering cannot hold a controller for long.
      room_cv_.wait_for(lock, options_.enqueue_wait,
                        [&] { return shut_down_ || server_failing_ || has_room(); });
    }
    if (!shut_down_ && has_room()) {
      queue_.push_back(std::move(p));
      publishQueueLocked();
      cv_.notify_one();
      return;
    }
    why = shut_down_ ? "shutdown" : (server_failing_ ? "server_unavailable" : "queue_full");
    countDropLocked(why);
    dropped = stats_.dropped_queue_full + stats_.dropped_server_unavailable;
    // Said once, then at most once a minute: a failing server can drop thousands.
    Clock::MonoTime now = clock_.now();
    if (shut_down_ || (dropped > 1 && now - last_drop_warning_ < std::chrono::minutes(1))) {
      return;
    }
    last_drop_warning_ = now;
  }
  log::warning("Event queue full; dropping events until the sender catches up",
               {{"queueSize", options_.queue_size}, {"droppedSoFar", dropped}, {"why", why}});
}

void EventBroadcaster::start() {
  if (thread_.joinable()) {
    return;
  }
  {
    std::lock_guard lock(mu_);
    sender_running_ = true;
  }
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void EventBroadcaster::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (shut_down_) {
      return;
    }
    shut_down_ = true;
    room_cv_.notify_all();
  }
  if (thread_.joinable()) {
    thread_.request_stop();
    cv_.notify_all();
    thread_.join();
  }
}

EventBroadcaster::Stats EventBroadcaster::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void EventBroadcaster::processQueuedForTest() {
  while (true) {
    std::vector<Pending> batch;
    {
      std::lock_guard lock(mu_);
      batch = takeLocked(options_.batch_size);
    }
    if (batch.empty()) {
      return;
    }
    processBatch(batch, true, {});
  }
}

std::vector<EventBroadcaster::Pending> EventBroadcaster::takeLocked(size_t most) {
  std::vector<Pending> batch;
  size_t take = std::min(std::max<size_t>(most, 1), queue_.size());
  batch.reserve(take);
  for (size_t i = 0; i < take; ++i) {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  if (take > 0) {
    publishQueueLocked();
    room_cv_.notify_all();
  }
  return batch;
}

void EventBroadcaster::run(std::stop_token stop) {
  runtime::nameThisThread("events");
  std::optional<std::chrono::steady_clock::time_point> flush_deadline;
  while (true) {
    std::vector<Pending> batch;
    bool stopping;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, stop, [this] { return !queue_.empty(); });
      stopping = stop.stop_requested();
      if (queue_.empty()) {
        return;
      }
      if (stopping) {
        auto now = std::chrono::steady_clock::now();
        if (!flush_deadline) {
          flush_deadline = now + options_.shutdown_grace;
        } else if (now >= *flush_deadline) {
          countDropLocked("shutdown", queue_.size());
          log::infoV(2, "Shutdown grace over; dropping queued events",
                     {{"dropped", queue_.size()}});
          queue_.clear();
          publishQueueLocked();
          return;
        }
      }
      // Shutting down, each event gets its one quick try on its own.
      batch = takeLocked(stopping ? 1 : options_.batch_size);
    }
    processBatch(batch, stopping, stop);
  }
}

std::optional<EventBroadcaster::Outgoing> EventBroadcaster::admit(const Pending& p) {
  const ObjectReference& o = p.object;
  // 1. Spam filter.
  std::string spam_key = join({p.component, options_.host, o.kind, o.namespace_, o.name, o.uid,
                               o.api_version, typeName(p.type)});
  std::unique_ptr<TokenBucket>* bucket = spam_.find(spam_key);
  if (bucket == nullptr) {
    bucket = &spam_.put(spam_key, std::make_unique<TokenBucket>(
                                      1.0 / static_cast<double>(options_.spam_refill.count()),
                                      options_.spam_burst, clock_));
  }
  if (!(*bucket)->tryAccept()) {
    std::lock_guard lock(mu_);
    countDropLocked("spam_filter");
    return std::nullopt;
  }
  // 2. Aggregation of similar events (same everything but the message).
  std::string aggregate_key =
      join({p.component, options_.host, o.kind, o.namespace_, o.name, o.uid, o.api_version,
            typeName(p.type), p.reason, p.component, options_.host});
  Clock::MonoTime now = clock_.now();
  Aggregate* agg = aggregates_.find(aggregate_key);
  if (agg == nullptr || now - agg->last > options_.aggregate_window) {
    agg = &aggregates_.put(aggregate_key, Aggregate{});
  }
  agg->last = now;
  Outgoing out;
  agg->messages.insert(p.message);
  if (agg->messages.size() < options_.aggregate_max_events) {
    out.message = p.message;
    out.dedup_key = aggregate_key + p.message;
  } else {
    agg->messages.erase(agg->messages.begin());
    out.message = "(combined from similar events): " + p.message;
    out.dedup_key = std::move(aggregate_key);
  }
  return out;
}

void EventBroadcaster::prepare(Outgoing* out, const Pending& p) {
  if (const Sent* previous = sent_.find(out->dedup_key)) {
    out->repeat = true;
    out->record = *previous;
    out->record.count += 1;
    return;
  }
  const ObjectReference& o = p.object;
  int64_t nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(p.time.time_since_epoch()).count();
  out->repeat = false;
  out->record.name = fmt::format("{}.{:x}", o.name, nanos);
  if (!validName(out->record.name)) {
    out->record.name = uuid4();
  }
  out->record.namespace_ = o.namespace_.empty() ? "default" : o.namespace_;
  out->record.count = 1;
  out->record.first_timestamp =
      std::chrono::floor<std::chrono::seconds>(p.time.time_since_epoch()).count();
}

void EventBroadcaster::processBatch(const std::vector<Pending>& batch, bool final_attempt_only,
                                    std::stop_token stop) {
  std::vector<std::pair<const Pending*, Outgoing>> ready;
  std::unordered_set<std::string> keys;
  auto flush = [&] {
    if (ready.empty()) {
      return;
    }
    std::vector<Write> writes;
    writes.reserve(ready.size());
    for (const auto& [p, out] : ready) {
      writes.push_back(writeFor(out, *p));
    }
    auto results = api_.writeBatch(std::move(writes), callOptions(final_attempt_only, stop),
                                   options_.batch_gather);
    for (size_t i = 0; i < ready.size(); ++i) {
      ApiStatus first = results[i].ok() ? ApiStatus() : results[i].status();
      deliver(ready[i].second, *ready[i].first, first, final_attempt_only, stop);
    }
    ready.clear();
    keys.clear();
  };
  for (const Pending& p : batch) {
    std::optional<Outgoing> out = admit(p);
    if (!out) {
      continue;
    }
    if (keys.contains(out->dedup_key)) {
      flush();  // a repeat is written as one once the first is known to be written
    }
    prepare(&*out, p);
    keys.insert(out->dedup_key);
    ready.emplace_back(&p, std::move(*out));
  }
  flush();
}

Write EventBroadcaster::writeFor(const Outgoing& out, const Pending& p) const {
  const ObjectReference& o = p.object;
  const Sent& r = out.record;
  int64_t now_s = std::chrono::floor<std::chrono::seconds>(p.time.time_since_epoch()).count();
  rapidjson::StringBuffer buf;
  Writer w(buf);
  if (out.repeat) {
    w.StartObject();
    w.Key("count");
    w.Int(r.count);
    w.Key("lastTimestamp");
    str(w, formatRfc3339(now_s));
    w.Key("message");
    str(w, out.message);
    w.EndObject();
    return Write{Write::Verb::Patch, eventPath(r.namespace_, r.name), buf.GetString(),
                 PatchType::Strategic};
  }
  w.StartObject();
  w.Key("kind");
  w.String("Event");
  w.Key("apiVersion");
  w.String("v1");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  str(w, r.name);
  w.Key("namespace");
  str(w, r.namespace_);
  w.EndObject();
  w.Key("involvedObject");
  w.StartObject();
  w.Key("kind");
  str(w, o.kind);
  optionalField(w, "namespace", o.namespace_);
  w.Key("name");
  str(w, o.name);
  optionalField(w, "uid", o.uid);
  optionalField(w, "apiVersion", o.api_version);
  optionalField(w, "resourceVersion", o.resource_version);
  optionalField(w, "fieldPath", o.field_path);
  w.EndObject();
  w.Key("reason");
  str(w, p.reason);
  w.Key("message");
  str(w, out.message);
  w.Key("source");
  w.StartObject();
  w.Key("component");
  str(w, p.component);
  w.Key("host");
  str(w, options_.host);
  w.EndObject();
  w.Key("firstTimestamp");
  str(w, formatRfc3339(r.first_timestamp));
  w.Key("lastTimestamp");
  str(w, formatRfc3339(now_s));
  w.Key("count");
  w.Int(r.count);
  w.Key("type");
  str(w, typeName(p.type));
  w.Key("reportingComponent");
  str(w, p.component);
  w.Key("reportingInstance");
  str(w, options_.host);
  w.EndObject();
  return Write{Write::Verb::Create, eventPath(r.namespace_), buf.GetString(), PatchType::Strategic};
}

void EventBroadcaster::deliver(Outgoing& out, const Pending& p, std::optional<ApiStatus> first,
                               bool final_attempt_only, std::stop_token stop) {
  const ObjectReference& o = p.object;
  CallOptions call = callOptions(final_attempt_only, stop);
  auto statusOf = [](const ApiResult<std::string>& r) { return r.ok() ? ApiStatus() : r.status(); };
  auto fail = [this](std::string_view reason) {
    std::lock_guard lock(mu_);
    countDropLocked(reason);
  };
  int attempts = final_attempt_only ? 1 : options_.max_attempts;
  // One write: the batch's outcome the first time, else a PATCH of a repeat or a POST.
  auto writeOnce = [&]() -> ApiStatus {
    if (first) {
      ApiStatus given = *first;
      first.reset();
      return given;
    }
    Write w = writeFor(out, p);
    return statusOf(out.repeat ? api_.patch(w.path, w.patch_type, std::move(w.body), call)
                               : api_.create(w.path, std::move(w.body), call));
  };
  ApiStatus st;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    st = writeOnce();
    bool patched = out.repeat && st.ok();
    if (out.repeat && st.isNotFound()) {
      // The event expired on the server: write it afresh.
      out.repeat = false;
      st = writeOnce();
    }
    if (st.ok()) {
      sent_.put(out.dedup_key, out.record);
      std::lock_guard lock(mu_);
      ++(patched ? stats_.patched : stats_.created);
      if (server_failing_) {
        server_failing_ = false;
        room_cv_.notify_all();
      }
      return;
    }
    if (st.httpCode() != 0 || st.isCancelled()) {
      // The server answered: retrying will not help (client-go gives up too).
      log::infoV(2, "Event rejected; dropping it",
                 {{"reason", p.reason}, {"object", o.name}, {"error", st.toString()}});
      fail(st.isCancelled() ? "shutdown" : "rejected");
      return;
    }
    if (attempt == attempts) {
      break;
    }
    // No answer from the server: while this event waits to be retried, a full queue drops
    // new events rather than holding their producers.
    setServerFailing(true);
    Random& random = random_ != nullptr ? *random_ : Random::threadLocal();
    auto wait = attempt == 1
                    ? std::chrono::duration_cast<std::chrono::nanoseconds>(options_.retry_interval *
                                                                           random.uniform())
                    : std::chrono::duration_cast<std::chrono::nanoseconds>(options_.retry_interval);
    if (!sleepFor(wait, stop)) {
      break;
    }
  }
  log::warning("Unable to write event (may retry no more)",
               {{"reason", p.reason}, {"object", o.name}, {"error", st.toString()}});
  fail("retries_exhausted");
}

}  // namespace ccm::kube
