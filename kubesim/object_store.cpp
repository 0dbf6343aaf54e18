// ObjectStore: objects, the global resourceVersion, the watch window and watcher fan-out.
#include "kubesim/object_store.hpp"

#include <algorithm>
#include <random>

namespace ccm::kubesim {
namespace {

// Key range of one namespace: ["ns/", "ns0") ('0' follows '/').
std::pair<std::string, std::string> namespaceRange(std::string_view ns) {
  std::string lo(ns);
  lo += "/";
  std::string hi(ns);
  hi += "0";
  return {lo, hi};
}

// What etcd's "required revision has been compacted" becomes for a list.
constexpr std::string_view kListTooOld = "The resourceVersion for the provided list is too old.";

std::string tooOldMessage(uint64_t requested, uint64_t compacted) {
  return "too old resource version: " + decimal(requested) + " (" + decimal(compacted) + ")";
}

// The store key of (ns, name), built in this thread's buffer: a lookup allocates nothing once
// the buffer has grown. Valid until the thread's next call.
std::string_view scratchKey(std::string_view ns, std::string_view name) {
  thread_local std::string buf;
  buf.clear();
  if (!ns.empty()) {
    buf.append(ns).push_back('/');
  }
  buf.append(name);
  return buf;
}

// Go's map iteration order: different on every list.
void shuffle(std::vector<ObjectPtr>& items) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::shuffle(items.begin(), items.end(), rng);
}

}  // namespace

uint64_t ObjectStore::cacheRv(const Storage& s) const {
  if (options_.watch_cache_lag.count() <= 0) {
    return rv_;
  }
  auto cutoff = std::chrono::steady_clock::now() - options_.watch_cache_lag;
  auto it = s.history.end();
  while (it != s.history.begin() && (*std::prev(it))->committed > cutoff) {
    --it;
  }
  return it == s.history.end() ? rv_ : (*it)->rv - 1;
}

ObjectStore::ObjectStore(const ResourceRegistry& registry, Options options)
    : registry_(registry), options_(options), storages_(registry.storageCount()) {}

uint64_t ObjectStore::currentRv() const {
  std::lock_guard lock(mu_);
  return rv_;
}

ObjectPtr ObjectStore::get(const ResourceType& type, std::string_view ns,
                           std::string_view name) const {
  std::string_view key = scratchKey(type.namespaced ? ns : std::string_view(), name);
  std::lock_guard lock(mu_);
  const ObjectPtr* found = storage(type).objects.find(key);
  return found == nullptr ? nullptr : *found;
}

ObjectPtr ObjectStore::getCached(const ResourceType& type, std::string_view ns,
                                 std::string_view name) const {
  std::string_view want_ns = type.namespaced ? ns : std::string_view();
  std::lock_guard lock(mu_);
  const Storage& s = storage(type);
  const ObjectPtr* found = s.objects.find(scratchKey(want_ns, name));
  ObjectPtr result = found == nullptr ? nullptr : *found;
  if (options_.watch_cache_lag.count() <= 0) {
    return result;
  }
  // Undo the young changes of this object: the oldest one's previous state is what the
  // cache holds.
  auto cutoff = std::chrono::steady_clock::now() - options_.watch_cache_lag;
  for (auto it = s.history.rbegin(); it != s.history.rend() && (*it)->committed > cutoff; ++it) {
    const StoredObject& o = *(*it)->object;
    if (o.name == name && o.ns == want_ns) {
      result = (*it)->prev;
    }
  }
  return result;
}

size_t ObjectStore::count(const ResourceType& type, std::string_view ns) const {
  std::lock_guard lock(mu_);
  const Storage& s = storage(type);
  if (ns.empty()) {
    return s.objects.size();
  }
  auto [lo, hi] = namespaceRange(ns);
  return static_cast<size_t>(std::distance(s.objects.lowerBound(lo), s.objects.lowerBound(hi)));
}

ApiOr<ObjectStore::ListResult> ObjectStore::list(const ResourceType& type,
                                                 const ListRequest& req) const {
  ListResult result;
  std::lock_guard lock(mu_);
  const Storage& s = storage(type);
  result.rv = rv_;

  // State at an older RV: undo newer history entries (first change after at_rv wins).
  std::map<std::string, ObjectPtr, std::less<>> overlay;
  bool use_overlay = false;
  std::optional<uint64_t> at_rv = req.at_rv;
  if (req.from_cache) {
    // The cache's state, but never older than what the request asked for (at_rv: "at least").
    at_rv = std::max(cacheRv(s), req.at_rv.value_or(0));
  }
  if (at_rv && *at_rv < rv_) {
    if (*at_rv < s.compacted) {
      return ApiError::expired(std::string(kListTooOld));
    }
    result.rv = *at_rv;
    auto first = std::upper_bound(s.history.begin(), s.history.end(), *at_rv,
                                  [](uint64_t rv, const EventPtr& e) { return rv < e->rv; });
    for (auto it = first; it != s.history.end(); ++it) {
      const auto& ev = *it;
      std::string key = ev->object->key();
      if (overlay.find(key) == overlay.end()) {
        overlay.emplace(std::move(key), ev->prev);
      }
    }
    use_overlay = !overlay.empty();
  }

  std::string from;
  std::string to;
  bool bounded = false;
  if (!req.ns.empty() && type.namespaced) {
    auto range = namespaceRange(req.ns);
    from = range.first;
    to = range.second;
    bounded = true;
  }
  if (!req.start_key.empty() && req.start_key > from) {
    from = req.start_key;
  }
  auto it = s.objects.lowerBound(from);
  auto ot = overlay.lower_bound(from);
  const bool selecting = !req.labels.empty() || !req.fields.empty();
  bool full = false;
  std::string last_key;
  while (true) {
    const std::string* key = nullptr;
    ObjectPtr obj;
    bool have_it = it != s.objects.end();
    bool have_ot = use_overlay && ot != overlay.end();
    if (!have_it && !have_ot) {
      break;
    }
    if (have_it && (!have_ot || it->first < ot->first)) {
      key = &it->first;
      obj = it->second;
      ++it;
    } else if (have_ot && (!have_it || ot->first < it->first)) {
      key = &ot->first;
      obj = ot->second;
      ++ot;
    } else {
      key = &ot->first;
      obj = ot->second;
      ++ot;
      ++it;
    }
    if (bounded && *key >= to) {
      break;
    }
    if (!obj) {
      continue;  // did not exist at that RV
    }
    if (full) {
      // More keys follow the page, whether or not they match (etcd's "more").
      if (result.next_key.empty()) {
        result.next_key = last_key;
        result.next_key.push_back('\0');
      }
      ++result.remaining;
      if (selecting) {
        break;  // the count is not reported with selectors
      }
      continue;
    }
    if (selecting && !(req.labels.matches(obj->labels) && req.fields.matches(obj->fields))) {
      continue;
    }
    result.items.push_back(std::move(obj));
    last_key = *key;
    if (req.limit != 0 && result.items.size() >= req.limit) {
      full = true;
    }
  }
  if (req.from_cache) {
    shuffle(result.items);
  }
  return result;
}

void ObjectStore::publish(Storage& s, const EventPtr& ev) {
  s.history.push_back(ev);
  while (s.history.size() > options_.history_size) {
    s.compacted = s.history.front()->rv;
    s.history.pop_front();
  }
  for (const auto& w : s.watchers) {
    w->offer(*ev);
  }
}

void ObjectStore::notify(const EventPtr& ev) {
  std::vector<Observer> observers;
  {
    std::lock_guard lock(observers_mu_);
    observers = observers_;
  }
  for (const auto& o : observers) {
    o(*ev);
  }
}

ObjectStore::CommitResult ObjectStore::put(const ResourceType& type, const ObjectPtr& expected,
                                           const PreparedObject& next) {
  PreparedObject copy = next;
  return put(type, expected, std::move(copy));
}

ObjectStore::CommitResult ObjectStore::put(const ResourceType& type, const ObjectPtr& expected,
                                           PreparedObject&& next) {
  std::string_view key =
      scratchKey(type.namespaced ? std::string_view(next.ns) : std::string_view(), next.name);
  EventPtr ev;
  CommitResult result;
  {
    std::lock_guard lock(mu_);
    Storage& s = storage(type);
    ObjectPtr* slot = s.objects.find(key);
    ObjectPtr cur = slot == nullptr ? nullptr : *slot;
    if (cur != expected) {
      return {CommitStatus::Stale, cur};
    }
    if (cur && next.sameContentAs(*cur)) {
      return {CommitStatus::NoOp, cur};
    }
    uint64_t rv = ++rv_;
    ObjectPtr obj = std::move(next).finish(rv);
    if (slot == nullptr) {
      s.objects.insertOrAssign(key, obj);
    } else {
      *slot = obj;
    }
    auto e = std::make_shared<WatchEvent>();
    e->type = cur ? EventType::Modified : EventType::Added;
    e->rv = rv;
    e->type_id = type.id;
    e->object = obj;
    e->prev = cur;
    e->committed = std::chrono::steady_clock::now();
    ev = e;
    publish(s, ev);
    result = {CommitStatus::Ok, obj};
  }
  notify(ev);
  return result;
}

ObjectStore::CommitResult ObjectStore::remove(const ResourceType& type, const ObjectPtr& expected,
                                              const PreparedObject* final_state) {
  if (!expected) {
    return {CommitStatus::Stale, nullptr};
  }
  EventPtr ev;
  CommitResult result;
  {
    std::lock_guard lock(mu_);
    Storage& s = storage(type);
    std::string_view key = scratchKey(expected->ns, expected->name);
    const ObjectPtr* slot = s.objects.find(key);
    ObjectPtr cur = slot == nullptr ? nullptr : *slot;
    if (cur != expected) {
      return {CommitStatus::Stale, cur};
    }
    uint64_t rv = ++rv_;
    ObjectPtr tomb;
    if (final_state != nullptr) {
      tomb = final_state->finish(rv);
    } else {
      auto t = std::make_shared<StoredObject>(*cur);
      t->json = cur->jsonWithRv(rv);
      t->rv = rv;
      t->rv_len = static_cast<uint32_t>(decimal(rv).size());
      tomb = std::move(t);
    }
    s.objects.erase(key);
    auto e = std::make_shared<WatchEvent>();
    e->type = EventType::Deleted;
    e->rv = rv;
    e->type_id = type.id;
    e->object = tomb;
    e->prev = cur;
    e->committed = std::chrono::steady_clock::now();
    ev = e;
    publish(s, ev);
    result = {CommitStatus::Ok, tomb};
  }
  notify(ev);
  return result;
}

ApiOr<bool> ObjectStore::watch(const std::shared_ptr<Watcher>& w, WatchMode mode, uint64_t rv) {
  std::lock_guard lock(mu_);
  Storage& s = storage(w->type());
  if (mode == WatchMode::FromRv) {
    if (rv > rv_) {
      // The watch cache accepts it and stays silent until it has seen rv.
      w->setFloor(rv);
      s.watchers.push_back(w);
      return true;
    }
    if (rv < s.compacted) {
      return ApiError::expired(tooOldMessage(rv, s.compacted));
    }
    auto first = std::upper_bound(s.history.begin(), s.history.end(), rv,
                                  [](uint64_t v, const EventPtr& e) { return v < e->rv; });
    for (auto it = first; it != s.history.end(); ++it) {
      w->offer(**it);
    }
  } else if (mode == WatchMode::InitialCachedState && cacheRv(s) < rv_) {
    // The state the cache has reached (young changes undone), then the young changes.
    const uint64_t cached = cacheRv(s);
    auto first = std::upper_bound(s.history.begin(), s.history.end(), cached,
                                  [](uint64_t v, const EventPtr& e) { return v < e->rv; });
    std::map<std::string, ObjectPtr, std::less<>> undone;
    for (auto it = first; it != s.history.end(); ++it) {
      undone.emplace((*it)->object->key(), (*it)->prev);  // the first change wins
    }
    for (const auto& [key, obj] : s.objects) {
      if (undone.find(key) == undone.end()) {
        w->enqueueInitial(obj);
      }
    }
    for (const auto& [key, obj] : undone) {
      if (obj) {
        w->enqueueInitial(obj);
      }
    }
    for (auto it = first; it != s.history.end(); ++it) {
      w->offer(**it);
    }
  } else {
    for (const auto& [key, obj] : s.objects) {
      w->enqueueInitial(obj);
    }
    if (mode == WatchMode::InitialStateWithBookmark) {
      w->enqueueBookmark(rv_, true);
    }
  }
  s.watchers.push_back(w);
  return true;
}

void ObjectStore::unregister(const std::shared_ptr<Watcher>& w) {
  std::lock_guard lock(mu_);
  auto& list = storage(w->type()).watchers;
  list.erase(std::remove(list.begin(), list.end(), w), list.end());
}

void ObjectStore::bookmark(Watcher& w) {
  std::lock_guard lock(mu_);
  w.enqueueBookmark(rv_, false);
}

size_t ObjectStore::closeAllWatchers() {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (auto& s : storages_) {
    for (auto& w : s.watchers) {
      w->finish();
      ++n;
    }
    s.watchers.clear();
  }
  return n;
}

size_t ObjectStore::watcherCount() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& s : storages_) {
    n += s.watchers.size();
  }
  return n;
}

void ObjectStore::compact() {
  std::lock_guard lock(mu_);
  for (auto& s : storages_) {
    s.history.clear();
    s.compacted = rv_;
  }
}

void ObjectStore::compactTo(uint64_t rv) {
  std::lock_guard lock(mu_);
  rv = std::min(rv, rv_);
  for (auto& s : storages_) {
    while (!s.history.empty() && s.history.front()->rv <= rv) {
      s.history.pop_front();
    }
    s.compacted = std::max(s.compacted, rv);
  }
}

uint64_t ObjectStore::compactedRv(const ResourceType& type) const {
  std::lock_guard lock(mu_);
  return storage(type).compacted;
}

ObjectStore::Snapshot ObjectStore::snapshot() const {
  Snapshot snap;
  std::lock_guard lock(mu_);
  snap.rv = rv_;
  for (const auto& type : registry_.all()) {
    if (!type.stored) {
      continue;
    }
    // Types sharing a storage are written once, under the first type using it.
    if (registry_.at(type.id).storage_id != type.storage_id) {
      continue;
    }
    bool first_user = true;
    for (const auto& other : registry_.all()) {
      if (other.id < type.id && other.storage_id == type.storage_id) {
        first_user = false;
      }
    }
    if (!first_user) {
      continue;
    }
    for (const auto& [key, obj] : storage(type).objects) {
      snap.objects.emplace_back(type.id, obj);
    }
  }
  return snap;
}

void ObjectStore::load(const Snapshot& snap) {
  std::lock_guard lock(mu_);
  for (auto& s : storages_) {
    s.objects.clear();
    s.history.clear();
  }
  for (const auto& [id, obj] : snap.objects) {
    const ResourceType& type = registry_.at(id);
    storage(type).objects.insertOrAssign(obj->key(), obj);
  }
  rv_ = std::max(rv_, snap.rv);
  for (auto& s : storages_) {
    s.compacted = rv_;
  }
}

void ObjectStore::clear() {
  std::lock_guard lock(mu_);
  for (auto& s : storages_) {
    s.objects.clear();
    s.history.clear();
    s.compacted = rv_;
  }
}

void ObjectStore::addObserver(Observer observer) {
  std::lock_guard lock(observers_mu_);
  observers_.push_back(std::move(observer));
}

}  // namespace ccm::kubesim
