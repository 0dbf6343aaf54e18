// Watcher: filtering, queueing and rendering of one watch.
#include "kubesim/watcher.hpp"

namespace ccm::kubesim {

std::string_view eventTypeName(EventType t) {
  switch (t) {
    case EventType::Added:
      return "ADDED";
    case EventType::Modified:
      return "MODIFIED";
    case EventType::Deleted:
      return "DELETED";
  }
  return "MODIFIED";
}

bool WatchFilter::matches(const StoredObject& obj) const {
  if (!ns.empty() && obj.ns != ns) {
    return false;
  }
  return labels.matches(obj.labels) && fields.matches(obj.fields);
}

void JsonWatchRenderer::appendEvent(std::string& out, std::string_view type,
                                    const StoredObject& obj) {
  out.reserve(out.size() + obj.json.size() + 40);
  out += R"({"type":")";
  out += type;
  out += R"(","object":)";
  out += obj.json;
  out += "}\n";
}

void JsonWatchRenderer::appendBookmark(std::string& out, uint64_t rv, bool initial_events_end) {
  out += R"({"type":"BOOKMARK","object":{"kind":")";
  out += type_.kind;
  out += R"(","apiVersion":")";
  out += type_.apiVersion();
  out += R"(","metadata":{"resourceVersion":")";
  out += decimal(rv);
  out += R"(","creationTimestamp":null)";
  if (initial_events_end) {
    out += R"(,"annotations":{"k8s.io/initial-events-end":"true"})";
  }
  out += "}}}\n";
}

Watcher::Watcher(const ResourceType& type, WatchFilter filter,
                 std::unique_ptr<WatchRenderer> renderer, size_t max_queue, bool bookmarks)
    : type_(type),
      filter_(std::move(filter)),
      renderer_(std::move(renderer)),
      max_queue_(max_queue),
      bookmarks_(bookmarks) {}

void Watcher::push(Item item) {
  if (ended_) {
    return;
  }
  if (queue_.size() >= max_queue_) {
    overflow_ = true;
    ended_ = true;
    queue_.clear();
  } else {
    queue_.push_back(std::move(item));
  }
  if (waker_) {
    auto w = std::move(waker_);
    waker_ = nullptr;
    w();
  }
}

void Watcher::offer(const WatchEvent& ev) {
  if (ev.rv <= floor_) {
    return;
  }
  bool now = ev.object && filter_.matches(*ev.object);
  bool before = ev.prev && filter_.matches(*ev.prev);
  Item item;
  item.rv = ev.rv;
  switch (ev.type) {
    case EventType::Added:
      if (!now) {
        return;
      }
      item.type = EventType::Added;
      item.object = ev.object;
      break;
    case EventType::Modified:
      if (now && before) {
        item.type = EventType::Modified;
        item.object = ev.object;
      } else if (now) {
        item.type = EventType::Added;
        item.object = ev.object;
      } else if (before) {
        // Stopped matching: the client sees the last matching state, at the new RV.
        auto tomb = std::make_shared<StoredObject>(*ev.prev);
        tomb->json = ev.prev->jsonWithRv(ev.rv);
        tomb->rv = ev.rv;
        tomb->rv_len = static_cast<uint32_t>(decimal(ev.rv).size());
        item.type = EventType::Deleted;
        item.object = std::move(tomb);
      } else {
        return;
      }
      break;
    case EventType::Deleted:
      if (!before && !now) {
        return;
      }
      item.type = EventType::Deleted;
      item.object = ev.object;
      break;
  }
  std::lock_guard lock(mu_);
  push(std::move(item));
}

void Watcher::enqueueInitial(const ObjectPtr& obj) {
  if (!filter_.matches(*obj)) {
    return;
  }
  Item item;
  item.type = EventType::Added;
  item.object = obj;
  item.rv = obj->rv;
  std::lock_guard lock(mu_);
  push(std::move(item));
}

void Watcher::enqueueBookmark(uint64_t rv, bool initial_events_end) {
  if (rv <= floor_) {
    return;
  }
  Item item;
  item.kind = Item::Bookmark;
  item.rv = rv;
  item.initial_end = initial_events_end;
  std::lock_guard lock(mu_);
  push(std::move(item));
}

void Watcher::enqueueError(std::string status_json) {
  Item item;
  item.kind = Item::Error;
  item.text = std::move(status_json);
  std::lock_guard lock(mu_);
  push(std::move(item));
  ended_ = true;
}

void Watcher::finish() {
  std::lock_guard lock(mu_);
  ended_ = true;
  if (waker_) {
    auto w = std::move(waker_);
    waker_ = nullptr;
    w();
  }
}

void Watcher::setWaker(std::function<void()> waker) {
  std::unique_lock lock(mu_);
  if (!queue_.empty() || ended_) {
    lock.unlock();
    waker();
    return;
  }
  waker_ = std::move(waker);
}

bool Watcher::drain(std::string& out) {
  std::deque<Item> items;
  bool ended;
  {
    std::lock_guard lock(mu_);
    items.swap(queue_);
    ended = ended_;
  }
  uint64_t last = 0;
  for (const auto& item : items) {
    switch (item.kind) {
      case Item::Event:
        renderer_->appendEvent(out, eventTypeName(item.type), *item.object);
        last = std::max(last, item.rv);
        break;
      case Item::Bookmark:
        renderer_->appendBookmark(out, item.rv, item.initial_end);
        last = std::max(last, item.rv);
        break;
      case Item::Error:
        out += R"({"type":"ERROR","object":)";
        out += item.text;
        out += "}\n";
        break;
    }
  }
  if (last != 0) {
    std::lock_guard lock(mu_);
    last_rv_ = std::max(last_rv_, last);
  }
  return !ended;
}

uint64_t Watcher::lastSentRv() const {
  std::lock_guard lock(mu_);
  return last_rv_;
}

bool Watcher::overflowed() const {
  std::lock_guard lock(mu_);
  return overflow_;
}

}  // namespace ccm::kubesim
