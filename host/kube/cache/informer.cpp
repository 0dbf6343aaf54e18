// Informer<T>: the reflector loop (list + watch), the cache and handler dispatch.
#include "host/kube/cache/informer.hpp"

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "host/kube/api/retry.hpp"
#include "host/kube/objects/envelope_decoder.hpp"
#include "host/kube/objects/node_decoder.hpp"
#include "host/kube/objects/service_decoder.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "host/log/log.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/rate_limiter.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::kube {
namespace {

template <typename T>
struct Traits;

template <>
struct Traits<Node> {
  using Decoder = NodeDecoder;
  static constexpr std::string_view kPath = "/api/v1/nodes";
  static constexpr std::string_view kName = "nodes";
};

template <>
struct Traits<Service> {
  using Decoder = ServiceDecoder;
  static constexpr std::string_view kPath = "/api/v1/services";
  static constexpr std::string_view kName = "services";
};

// Heap bytes one cached object holds on its own (Informer::cachedBytes): the object, its
// arena, and the control block of make_shared (about two pointers).
template <typename T>
size_t ownBytes(const T& obj) {
  return sizeof(T) + obj.arenaBytes() + 2 * sizeof(void*);
}

// What the watch loop wants next.
enum class After { Rewatch, Relist, Stop };

}  // namespace

bool waitForCacheSync(std::stop_token stop, std::initializer_list<const InformerBase*> informers) {
  for (const InformerBase* i : informers) {
    if (!i->waitForSync(stop)) {
      return false;
    }
  }
  return true;
}

template <typename T>
struct Informer<T>::Impl {
  using Decoder = typename Traits<T>::Decoder;
  using Ptr = std::shared_ptr<const T>;

  struct Registered {
    EventHandlers<T> handlers;
    std::chrono::milliseconds resync;
    Clock::MonoTime next_resync;
  };

  Impl(KubeClient* c, InformerOptions o, Clock& clk)
      : client(c),
        options(std::move(o)),
        clock(clk),
        rng(std::random_device{}()),
        backoff(options.initial_backoff, options.max_backoff, options.backoff_reset, 1.0, clk,
                random) {
    path = options.path.empty() ? std::string(Traits<T>::kPath) : options.path;
    if constexpr (std::is_same_v<T, Service>) {
      decoder.keepJson(options.keep_object_json);
    }
    if (options.metrics != nullptr) {
      std::string resource(Traits<T>::kName);
      if (auto* g = options.metrics->gauge("ccm_informer_cached_objects",
                                           "Objects in an informer's cache.", {"resource"})) {
        objects_gauge = &g->labels({resource});
      }
      if (auto* g = options.metrics->gauge(
              "ccm_informer_cached_bytes",
              "Heap bytes the objects in an informer's cache hold on their own (shared "
              "interned strings not counted).",
              {"resource"})) {
        bytes_gauge = &g->labels({resource});
      }
    }
  }

  KubeClient* client;
  InformerOptions options;
  Clock& clock;
  std::string path;

  // The cache. Written only by the informer thread (or injectForTest); read by anyone.
  mutable std::shared_mutex store_mu;
  std::unordered_map<std::string_view, Ptr> store;  // guarded by store_mu; keys view values
  std::atomic<size_t> store_bytes{0};               // ownBytes() of every cached object
  metrics::Gauge* objects_gauge = nullptr;
  metrics::Gauge* bytes_gauge = nullptr;

  // Handlers; dispatch happens with this mutex held, so handlers see events one at a time.
  mutable std::mutex handlers_mu;
  std::vector<Registered> handlers;  // guarded by handlers_mu

  mutable std::mutex sync_mu;
  mutable std::condition_variable_any sync_cv;
  bool synced = false;  // guarded by sync_mu

  mutable std::mutex rv_mu;
  std::string last_rv;  // guarded by rv_mu

  std::atomic<uint64_t> n_lists{0}, n_watches{0}, n_events{0}, n_expired{0}, n_scanned{0};

  std::mt19937 rng;
  SeededRandom random;
  BackoffManager backoff;
  Decoder decoder;
  std::string event_scratch;  // a watch event's bytes, parsed in situ (parseEvent)
  NodeEventScan scan;         // Nodes: the scan of the next watch event (scannedHeartbeat)
  uint64_t scanned_fingerprint = 0;
  std::jthread thread;

  // ---- cache + dispatch ----------------------------------------------------------------------

  Ptr find(std::string_view key) const {
    std::shared_lock lock(store_mu);
    auto it = store.find(key);
    return it == store.end() ? nullptr : it->second;
  }

  // Stores obj; returns the previous object under that key (or null).
  Ptr put(const Ptr& obj) {
    std::unique_lock lock(store_mu);
    auto it = store.find(obj->key());
    if (it == store.end()) {
      store.emplace(obj->key(), obj);
      accountLocked(ownBytes(*obj), 0);
      return nullptr;
    }
    Ptr old = std::move(it->second);
    auto node = store.extract(it);
    node.key() = obj->key();
    node.mapped() = obj;
    store.insert(std::move(node));
    accountLocked(ownBytes(*obj), ownBytes(*old));
    return old;
  }

  Ptr erase(std::string_view key) {
    std::unique_lock lock(store_mu);
    auto it = store.find(key);
    if (it == store.end()) {
      return nullptr;
    }
    Ptr old = std::move(it->second);
    store.erase(it);
    accountLocked(0, ownBytes(*old));
    return old;
  }

  // Keeps store_bytes and the gauges in step with the store (store_mu held exclusively).
  void accountLocked(size_t added, size_t removed) {
    size_t bytes = store_bytes.load(std::memory_order_relaxed) + added - removed;
    store_bytes.store(bytes, std::memory_order_relaxed);
    if (objects_gauge != nullptr) {
      objects_gauge->set(static_cast<double>(store.size()));
    }
    if (bytes_gauge != nullptr) {
      bytes_gauge->set(static_cast<double>(bytes));
    }
  }

  std::vector<Ptr> snapshot() const {
    std::shared_lock lock(store_mu);
    std::vector<Ptr> out;
    out.reserve(store.size());
    for (const auto& [k, v] : store) {
      out.push_back(v);
    }
    return out;
  }

  void notifyAdd(const Ptr& obj) {
    std::lock_guard lock(handlers_mu);
    for (auto& r : handlers) {
      if (r.handlers.on_add) {
        r.handlers.on_add(obj);
      }
    }
  }
  void notifyUpdate(const Ptr& old_obj, const Ptr& new_obj) {
    std::lock_guard lock(handlers_mu);
    for (auto& r : handlers) {
      if (r.handlers.on_update) {
        r.handlers.on_update(old_obj, new_obj);
      }
    }
  }
  void notifyDelete(const Ptr& obj, bool unknown) {
    std::lock_guard lock(handlers_mu);
    for (auto& r : handlers) {
      if (r.handlers.on_delete) {
        r.handlers.on_delete(obj, unknown);
      }
    }
  }

  void maybeResync() {
    Clock::MonoTime now = clock.now();
    std::lock_guard lock(handlers_mu);
    std::vector<Ptr> all;
    bool taken = false;
    for (auto& r : handlers) {
      if (r.resync.count() <= 0 || now < r.next_resync) {
        continue;
      }
      r.next_resync = now + r.resync;
      if (!r.handlers.on_update) {
        continue;
      }
      if (!taken) {
        all = snapshot();
        taken = true;
      }
      for (const auto& obj : all) {
        r.handlers.on_update(obj, obj);
      }
    }
  }

  void setRv(std::string_view rv) {
    std::lock_guard lock(rv_mu);
    last_rv.assign(rv);
  }
  std::string rv() const {
    std::lock_guard lock(rv_mu);
    return last_rv;
  }

  void markSynced() {
    std::lock_guard lock(sync_mu);
    if (!synced) {
      synced = true;
      sync_cv.notify_all();
    }
  }

  // Applies one watch event; returns false for unknown types.
  bool apply(WatchEventType type, const Ptr& obj) {
    switch (type) {
      case WatchEventType::Added:
      case WatchEventType::Modified: {
        Ptr existing = find(obj->key());
        if (existing && existing->resourceVersion() == obj->resourceVersion()) {
          return true;  // already have exactly this version
        }
        Ptr old = put(obj);
        if (old) {
          notifyUpdate(old, obj);
        } else {
          notifyAdd(obj);
        }
        return true;
      }
      case WatchEventType::Deleted: {
        Ptr old = erase(obj->key());
        if (old) {
          notifyDelete(obj, false);
        }
        return true;
      }
      default:
        return false;
    }
  }

  // The decoded object; a Node is made from `cached` (the version in the cache) when only its
  // heartbeat changed (NodeDecoder::finish), and keeps the fingerprint of the event it was
  // parsed from, if the scan read that event (scannedHeartbeat).
  Ptr finishObject(const Ptr& cached) {
    if constexpr (std::is_same_v<T, Node>) {
      decoder.fingerprint(std::exchange(scanned_fingerprint, 0));
      return decoder.finish(cached.get());
    } else {
      return decoder.finish();
    }
  }

  // Nodes: the next watch event when it is a heartbeat of a cached node, made from that node
  // without parsing the event (scanNodeEvent, NodeDecoder::finishScanned) and consumed;
  // nullptr otherwise, with the event's fingerprint noted for the parse that follows.
  Ptr scannedHeartbeat(ResponseStream& stream) {
    scanned_fingerprint = 0;
    if constexpr (std::is_same_v<T, Node>) {
      std::optional<std::string_view> line = stream.bufferLine();
      if (!line || !scanNodeEvent(*line, scan)) {
        return nullptr;
      }
      scanned_fingerprint = scan.fingerprint;
      if (scan.type != "MODIFIED") {
        return nullptr;
      }
      Ptr cached = find(scan.name);
      Ptr beat = cached ? decoder.finishScanned(*cached, scan) : nullptr;
      if (beat) {
        n_scanned.fetch_add(1);
        stream.consume(line->size() + 1);
        scanned_fingerprint = 0;
      }
      return beat;
    } else {
      return nullptr;
    }
  }

  // A watch event's object, into the cache and to the handlers.
  void deliver(WatchEventType type, const Ptr& obj) {
    n_events.fetch_add(1);
    log::infoV(6, "Watch event",
               {{"resource", Traits<T>::kName},
                {"type", static_cast<int>(type)},
                {"key", obj->key()},
                {"resourceVersion", obj->resourceVersion()}});
    apply(type, obj);
    setRv(obj->resourceVersion());
  }

  // Parses from the stream, skipping the values the decoder does not want as raw bytes when
  // it allows that.
  template <unsigned kFlags = rapidjson::kParseDefaultFlags, typename Handler>
  rapidjson::ParseResult parse(rapidjson::Reader& reader, ResponseStream& stream,
                               Handler& handler) {
    if constexpr (Decoder::kRawSkip) {
      detail::SkippingStream<ResponseStream> in(stream, decoder.skipSignal());
      return reader.Parse<kFlags>(in, handler);
    } else {
      return reader.Parse<kFlags>(stream, handler);
    }
  }

  // Parses one watch event. The server writes one event per line: once the line is
  // buffered whole it is parsed from memory. An event that does not parse that way (it spans
  // lines, or is malformed) is parsed again from the stream, which reads across lines and
  // reports the error where there is one.
  template <typename Handler>
  rapidjson::ParseResult parseEvent(rapidjson::Reader& reader, ResponseStream& stream,
                                    Handler& handler) {
    constexpr unsigned kFlags = rapidjson::kParseStopWhenDoneFlag;
    if (std::optional<std::string_view> line = stream.bufferLine()) {
      detail::SkipSignal* skips = Decoder::kRawSkip ? &decoder.skipSignal() : nullptr;
      if constexpr (requires { decoder.deferStrings(); }) {
        // event_scratch holds the event, in place, until the object is finished.
        decoder.deferStrings();
      }
      size_t used = 0;
      rapidjson::ParseResult ok =
          detail::parseInMemory<kFlags>(reader, *line, event_scratch, handler, skips, &used);
      if (ok) {
        stream.consume(used);
        return ok;
      }
      handler.reset();
    }
    scanned_fingerprint = 0;  // what the stream parse reads may not be the scanned line
    return parse<kFlags>(reader, stream, handler);
  }

  // ---- list ----------------------------------------------------------------------------------

  std::string selectors() const {
    std::string q;
    if (!options.label_selector.empty()) {
      q += "&labelSelector=" + urlEscape(options.label_selector);
    }
    if (!options.field_selector.empty()) {
      q += "&fieldSelector=" + urlEscape(options.field_selector);
    }
    return q;
  }

  // Reads a full list at `rv` ("" = consistent, "0" = any), paged when `paged`, and applies
  // it to the cache as a diff. On success `list_rv` is the list's resourceVersion.
  ApiStatus listOnce(std::stop_token stop, const std::string& rv, bool paged,
                     std::string* list_rv) {
    std::vector<Ptr> changed;
    std::unordered_set<std::string_view> seen;
    std::string token;
    std::string snapshot_rv;
    bool fallback_unpaged = false;
    int page = 0;
    while (true) {
      std::string query = "?";
      bool use_limit = paged && !fallback_unpaged;
      if (use_limit) {
        query += fmt::format("limit={}", options.page_size);
      }
      if (!token.empty()) {
        query += "&continue=" + urlEscape(token);
      } else if (!rv.empty()) {
        query.append(query.size() > 1 ? "&" : "").append("resourceVersion=").append(urlEscape(rv));
      }
      query += selectors();
      if (query == "?") {
        query.clear();
      } else if (query.size() > 1 && query[1] == '&') {
        query.erase(1, 1);
      }
      Request req;
      req.verb = Verb::Get;
      req.path = path + query;
      StreamOptions so;
      so.max_duration = options.list_timeout;
      auto opened = client->rest().stream(req, stop, so);
      if (!opened.ok()) {
        const ApiStatus& st = opened.status();
        if (page > 0 && st.isExpired() && !fallback_unpaged) {
          // The continue token expired: list everything in one go at the original version.
          log::infoV(2, "List continue token expired; relisting without paging",
                     {{"resource", Traits<T>::kName}});
          fallback_unpaged = true;
          token.clear();
          changed.clear();
          seen.clear();
          page = 0;
          continue;
        }
        return st;
      }
      ResponseStream& stream = **opened;
      scanned_fingerprint = 0;  // a listed object has none
      ListHandler<Decoder> handler(decoder, [&]() {
        std::string_view key = decoder.key();
        Ptr existing = find(key);
        if (existing && existing->resourceVersion() == decoder.resourceVersion()) {
          seen.insert(existing->key());
          return true;
        }
        Ptr obj = finishObject(existing);
        seen.insert(obj->key());
        changed.push_back(std::move(obj));
        return true;
      });
      rapidjson::Reader reader;
      rapidjson::ParseResult ok = parse(reader, stream, handler);
      if (!ok) {
        if (stream.endState() == ResponseStream::End::Cancelled) {
          return ApiStatus::cancelled();
        }
        if (stream.endState() == ResponseStream::End::Failed ||
            stream.endState() == ResponseStream::End::TimedOut) {
          return ApiStatus::transport(
              fmt::format("list of {} interrupted: {}", Traits<T>::kName, stream.error()));
        }
        return ApiStatus(0, Reason::Decode,
                         fmt::format("list of {}: invalid JSON at byte {}: {}", Traits<T>::kName,
                                     ok.Offset(), rapidjson::GetParseError_En(ok.Code())));
      }
      if (page == 0) {
        snapshot_rv = handler.resource_version;
      }
      ++page;
      token = handler.continue_token;
      if (token.empty() || !use_limit) {
        break;
      }
    }
    n_lists.fetch_add(1);
    // Apply the diff: new and changed objects, then objects the list no longer has.
    std::vector<std::pair<Ptr, Ptr>> updates;  // (old, new); old null = add
    updates.reserve(changed.size());
    for (const auto& obj : changed) {
      updates.emplace_back(put(obj), obj);
    }
    std::vector<Ptr> deleted;
    {
      std::unique_lock lock(store_mu);
      for (auto it = store.begin(); it != store.end();) {
        if (!seen.contains(it->first)) {
          size_t bytes = ownBytes(*it->second);
          deleted.push_back(std::move(it->second));
          it = store.erase(it);
          accountLocked(0, bytes);
        } else {
          ++it;
        }
      }
    }
    seen.clear();
    for (const auto& [old_obj, new_obj] : updates) {
      if (old_obj) {
        notifyUpdate(old_obj, new_obj);
      } else {
        notifyAdd(new_obj);
      }
    }
    for (const auto& obj : deleted) {
      notifyDelete(obj, true);
    }
    log::infoV(4, "Listed",
               {{"resource", Traits<T>::kName},
                {"resourceVersion", snapshot_rv},
                {"changed", changed.size()},
                {"deleted", deleted.size()}});
    *list_rv = snapshot_rv;
    return ApiStatus();
  }

  // The first list (resourceVersion=0, paged) or a relist (at the last version; if the
  // server cannot serve it, a consistent paged list).
  ApiStatus list(std::stop_token stop, bool relist) {
    std::string list_rv;
    ApiStatus st;
    std::string from = rv();
    if (relist && !from.empty()) {
      st = listOnce(stop, from, false, &list_rv);
      if (!st.ok() && (st.isExpired() || st.isTooLargeResourceVersion())) {
        st = listOnce(stop, "", true, &list_rv);
      }
    } else {
      st = listOnce(stop, "0", true, &list_rv);
    }
    if (!st.ok()) {
      return st;
    }
    setRv(list_rv);
    markSynced();
    return st;
  }

  // ---- watch ---------------------------------------------------------------------------------

  After watch(std::stop_token stop, ApiStatus* error) {
    int64_t min_s = std::max<int64_t>(1, options.min_watch_timeout.count());
    int64_t timeout = std::uniform_int_distribution<int64_t>(min_s, 2 * min_s)(rng);
    std::string from = rv();
    Request req;
    req.verb = Verb::Get;
    req.path =
        fmt::format("{}?allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}&watch=true{}",
                    path, urlEscape(from), timeout, selectors());
    StreamOptions so;
    so.max_duration = std::chrono::seconds(timeout + 30);
    so.on_idle = [this] { maybeResync(); };
    so.gather = options.watch_gather;
    so.gather_max = options.watch_gather_max;
    auto started = clock.now();
    auto opened = client->rest().stream(req, stop, so);
    if (!opened.ok()) {
      const ApiStatus& st = opened.status();
      if (st.isCancelled()) {
        return After::Stop;
      }
      if (st.isExpired() || st.isTooLargeResourceVersion()) {
        n_expired.fetch_add(1);
        log::infoV(2, "Watch expired; relisting",
                   {{"resource", Traits<T>::kName}, {"message", st.message()}});
        return After::Relist;
      }
      if (st.isTooManyRequests() || st.isTransport()) {
        // The server is busy or restarting: back off and resume from the same version.
        log::infoV(2, "Cannot open watch; will retry",
                   {{"resource", Traits<T>::kName}, {"error", st.toString()}});
        if (!sleepFor(backoff.next(), stop)) {
          return After::Stop;
        }
        return After::Rewatch;
      }
      *error = st.withPrefix("watch");
      return After::Relist;
    }
    n_watches.fetch_add(1);
    ResponseStream& stream = **opened;
    WatchEventHandler<Decoder> handler(decoder);
    rapidjson::Reader reader;
    uint64_t events = 0;
    while (!stream.atEnd()) {
      handler.reset();
      if (Ptr beat = scannedHeartbeat(stream)) {
        ++events;
        deliver(WatchEventType::Modified, beat);
        continue;
      }
      rapidjson::ParseResult ok = parseEvent(reader, stream, handler);
      if (!ok) {
        if (stream.endState() != ResponseStream::End::Open) {
          break;  // the connection ended mid-event; resume from the last complete one
        }
        *error = ApiStatus(0, Reason::Decode,
                           fmt::format("watch of {}: invalid JSON: {}", Traits<T>::kName,
                                       rapidjson::GetParseError_En(ok.Code())));
        return After::Relist;
      }
      ++events;
      switch (handler.type) {
        case WatchEventType::Added:
        case WatchEventType::Modified:
        case WatchEventType::Deleted: {
          if (!handler.has_object) {
            break;
          }
          deliver(handler.type, finishObject(find(decoder.key())));
          break;
        }
        case WatchEventType::Bookmark: {
          std::string_view brv = decoder.resourceVersion();
          log::infoV(6, "Watch bookmark",
                     {{"resource", Traits<T>::kName}, {"resourceVersion", brv}});
          if (!brv.empty()) {
            setRv(brv);
          }
          break;
        }
        case WatchEventType::Error: {
          ApiStatus st = ApiStatus::fromStatusObject(handler.status_code, handler.status_reason,
                                                     handler.status_message);
          if (st.isExpired() || st.isTooLargeResourceVersion()) {
            n_expired.fetch_add(1);
            log::infoV(2, "Watch expired; relisting",
                       {{"resource", Traits<T>::kName}, {"message", st.message()}});
            return After::Relist;
          }
          *error = st.withPrefix("watch error event");
          return After::Relist;
        }
        case WatchEventType::Unknown:
          log::warning("Ignoring a watch event of unknown type", {{"resource", Traits<T>::kName}});
          break;
      }
      maybeResync();
    }
    if (stream.endState() == ResponseStream::End::Cancelled || stop.stop_requested()) {
      return After::Stop;
    }
    auto lasted = clock.now() - started;
    if (events == 0 && lasted < std::chrono::seconds(1)) {
      *error = ApiStatus::transport(fmt::format(
          "very short watch of {}: it ended after {} ms without an event ({})", Traits<T>::kName,
          std::chrono::duration_cast<std::chrono::milliseconds>(lasted).count(),
          stream.endState() == ResponseStream::End::Clean ? "closed by the server"
                                                          : stream.error()));
      return After::Relist;
    }
    log::infoV(4, "Watch ended; resuming",
               {{"resource", Traits<T>::kName}, {"events", events}, {"resourceVersion", rv()}});
    return After::Rewatch;
  }

  // ---- the loop ------------------------------------------------------------------------------

  void run(std::stop_token stop) {
    runtime::nameThisThread(fmt::format("inf-{}", Traits<T>::kName));
    bool listed = false;
    while (!stop.stop_requested()) {
      ApiStatus st = list(stop, listed);
      if (st.isCancelled() || stop.stop_requested()) {
        break;
      }
      if (!st.ok()) {
        log::warning("Failed to list", {{"resource", Traits<T>::kName}, {"error", st.toString()}});
        if (!sleepFor(backoff.next(), stop)) {
          break;
        }
        continue;
      }
      listed = true;
      After next = After::Rewatch;
      while (next == After::Rewatch && !stop.stop_requested()) {
        ApiStatus error;
        next = watch(stop, &error);
        if (!error.ok()) {
          log::warning("Watch failed",
                       {{"resource", Traits<T>::kName}, {"error", error.toString()}});
          if (!sleepFor(backoff.next(), stop)) {
            next = After::Stop;
          }
        }
      }
      if (next == After::Stop) {
        break;
      }
    }
  }
};

template <typename T>
Informer<T>::Informer(KubeClient* client, InformerOptions options, Clock& clock)
    : impl_(std::make_unique<Impl>(client, std::move(options), clock)) {}

template <typename T>
Informer<T>::~Informer() {
  stop();
}

template <typename T>
void Informer<T>::addEventHandler(EventHandlers<T> handlers, std::chrono::milliseconds resync) {
  std::vector<std::shared_ptr<const T>> existing = impl_->snapshot();
  std::lock_guard lock(impl_->handlers_mu);
  if (handlers.on_add) {
    for (const auto& obj : existing) {
      handlers.on_add(obj);
    }
  }
  impl_->handlers.push_back(
      typename Impl::Registered{std::move(handlers), resync, impl_->clock.now() + resync});
}

template <typename T>
void Informer<T>::start() {
  if (impl_->thread.joinable()) {
    return;
  }
  if (impl_->client == nullptr) {
    impl_->markSynced();
    return;
  }
  Impl* impl = impl_.get();
  impl_->thread = std::jthread([impl](std::stop_token stop) { impl->run(stop); });
}

template <typename T>
void Informer<T>::stop() {
  if (impl_->thread.joinable()) {
    impl_->thread.request_stop();
    impl_->thread.join();
  }
}

template <typename T>
bool Informer<T>::hasSynced() const {
  std::lock_guard lock(impl_->sync_mu);
  return impl_->synced;
}

template <typename T>
bool Informer<T>::waitForSync(std::stop_token stop) const {
  std::unique_lock lock(impl_->sync_mu);
  return impl_->sync_cv.wait(lock, stop, [this] { return impl_->synced; });
}

template <typename T>
std::shared_ptr<const T> Informer<T>::get(std::string_view key) const {
  return impl_->find(key);
}

template <typename T>
std::vector<std::shared_ptr<const T>> Informer<T>::list() const {
  return impl_->snapshot();
}

template <typename T>
size_t Informer<T>::size() const {
  std::shared_lock lock(impl_->store_mu);
  return impl_->store.size();
}

template <typename T>
size_t Informer<T>::cachedBytes() const {
  return impl_->store_bytes.load(std::memory_order_relaxed);
}

template <typename T>
std::string Informer<T>::lastSyncResourceVersion() const {
  return impl_->rv();
}

template <typename T>
typename Informer<T>::Stats Informer<T>::stats() const {
  return Stats{impl_->n_lists.load(), impl_->n_watches.load(), impl_->n_events.load(),
               impl_->n_expired.load(), impl_->n_scanned.load()};
}

template <typename T>
void Informer<T>::injectForTest(std::string_view type, std::shared_ptr<const T> obj) {
  impl_->apply(WatchEventHandler<typename Impl::Decoder>::parseType(type), obj);
  if (!obj->resourceVersion().empty()) {
    impl_->setRv(obj->resourceVersion());
  }
  impl_->markSynced();
}

template class Informer<Node>;
template class Informer<Service>;

}  // namespace ccm::kube
