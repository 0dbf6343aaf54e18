// WatchStream and the Table / metadata-only / events.k8s.io watch renderers.
#include "kubesim/watch_stream.hpp"

#include "kubesim/event_conversion.hpp"
#include "kubesim/json_util.hpp"

namespace ccm::kubesim {

WatchStream::WatchStream(ObjectStore& store, std::shared_ptr<Watcher> watcher,
                         std::chrono::milliseconds timeout,
                         std::optional<std::chrono::milliseconds> bookmark_interval)
    : store_(store),
      watcher_(std::move(watcher)),
      timeout_(timeout),
      bookmark_interval_(bookmark_interval) {}

WatchStream::~WatchStream() {
  stop();
}

void WatchStream::start(const boost::asio::any_io_executor& strand) {
  deadline_.emplace(strand);
  deadline_->expires_after(timeout_);
  std::weak_ptr<WatchStream> weak = shared_from_this();
  deadline_->async_wait([weak](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || self->stopped_) {
      return;
    }
    // A real server sends a bookmark shortly before the deadline; then the body ends.
    if (self->watcher_->bookmarksAllowed()) {
      self->store_.bookmark(*self->watcher_);
    }
    self->watcher_->finish();
  });
  if (bookmark_interval_ && watcher_->bookmarksAllowed()) {
    bookmark_timer_.emplace(strand);
    scheduleBookmark();
  }
}

void WatchStream::scheduleBookmark() {
  bookmark_timer_->expires_after(*bookmark_interval_);
  std::weak_ptr<WatchStream> weak = shared_from_this();
  bookmark_timer_->async_wait([weak](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || self->stopped_) {
      return;
    }
    self->store_.bookmark(*self->watcher_);
    self->scheduleBookmark();
  });
}

bool WatchStream::poll(std::string& out) {
  return watcher_->drain(out);
}

void WatchStream::arm(std::function<void()> wake) {
  watcher_->setWaker(std::move(wake));
}

void WatchStream::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  if (deadline_) {
    deadline_->cancel();
  }
  if (bookmark_timer_) {
    bookmark_timer_->cancel();
  }
  store_.unregister(watcher_);
  watcher_->finish();
}

void TableWatchRenderer::appendEvent(std::string& out, std::string_view type,
                                     const StoredObject& obj) {
  std::string json = events_v1_view_ ? coreEventJsonToV1(obj.json) : obj.json;
  out += R"({"type":")";
  out += type;
  out += R"(","object":)";
  out += TablePrinter::table(type_, {json}, decimal(obj.rv), "", include_, true);
  out += "}\n";
}

void TableWatchRenderer::appendBookmark(std::string& out, uint64_t rv, bool initial_events_end) {
  // Table watches carry bookmarks as the watched kind, like plain ones.
  JsonWatchRenderer(type_).appendBookmark(out, rv, initial_events_end);
}

void MetadataWatchRenderer::appendEvent(std::string& out, std::string_view type,
                                        const StoredObject& obj) {
  out += R"({"type":")";
  out += type;
  out += R"(","object":)";
  out += partialObjectMetadata(events_v1_view_ ? coreEventJsonToV1(obj.json) : obj.json);
  out += "}\n";
}

void MetadataWatchRenderer::appendBookmark(std::string& out, uint64_t rv, bool initial_events_end) {
  // The watched kind's bookmark, its object in the metadata-only form.
  std::string plain;
  JsonWatchRenderer(type_).appendBookmark(plain, rv, initial_events_end);
  std::string_view object = rawTopLevelMember(plain, "object");
  out += R"({"type":"BOOKMARK","object":)";
  out += partialObjectMetadata(object);
  out += "}\n";
}

void EventsV1WatchRenderer::appendEvent(std::string& out, std::string_view type,
                                        const StoredObject& obj) {
  out += R"({"type":")";
  out += type;
  out += R"(","object":)";
  out += coreEventJsonToV1(obj.json);
  out += "}\n";
}

}  // namespace ccm::kubesim
