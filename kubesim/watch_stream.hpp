// WatchStream: the HTTP body of one watch. Adapts a registered Watcher to the connection's
// StreamSource interface and runs the watch's clocks on the connection's strand: periodic
// bookmarks (when the client allows them) and the timeoutSeconds deadline, at which a last
// bookmark is sent and the body ends cleanly. Also the renderers for Table watches
// (kubectl get -w), metadata-only watches and the events.k8s.io/v1 view of stored Events.
//
// THREAD: StreamSource methods run on the connection's strand; see http_types.hpp.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "kubesim/http_types.hpp"
#include "kubesim/object_store.hpp"
#include "kubesim/table_printer.hpp"
#include "kubesim/watcher.hpp"

namespace ccm::kubesim {

class WatchStream : public StreamSource, public std::enable_shared_from_this<WatchStream> {
 public:
  // watcher must already be registered with store (or hold only an ERROR event).
  WatchStream(ObjectStore& store, std::shared_ptr<Watcher> watcher,
              std::chrono::milliseconds timeout,
              std::optional<std::chrono::milliseconds> bookmark_interval);
  ~WatchStream() override;

  void start(const boost::asio::any_io_executor& strand) override;
  bool poll(std::string& out) override;
  void arm(std::function<void()> wake) override;
  void stop() override;

 private:
  void scheduleBookmark();

  ObjectStore& store_;
  std::shared_ptr<Watcher> watcher_;
  const std::chrono::milliseconds timeout_;
  const std::optional<std::chrono::milliseconds> bookmark_interval_;
  std::optional<boost::asio::steady_timer> deadline_;
  std::optional<boost::asio::steady_timer> bookmark_timer_;
  bool stopped_ = false;
};

// Renders each event's object as a one-row meta.k8s.io/v1 Table.
class TableWatchRenderer : public WatchRenderer {
 public:
  TableWatchRenderer(const ResourceType& type, TablePrinter::IncludeObject include,
                     bool events_v1_view)
      : type_(type), include_(include), events_v1_view_(events_v1_view) {}
  void appendEvent(std::string& out, std::string_view type, const StoredObject& obj) override;
  void appendBookmark(std::string& out, uint64_t rv, bool initial_events_end) override;

 private:
  const ResourceType& type_;
  TablePrinter::IncludeObject include_;
  bool events_v1_view_;
};

// Renders each event's object as meta.k8s.io/v1 PartialObjectMetadata (bookmarks too).
class MetadataWatchRenderer : public WatchRenderer {
 public:
  MetadataWatchRenderer(const ResourceType& type, bool events_v1_view)
      : type_(type), events_v1_view_(events_v1_view) {}
  void appendEvent(std::string& out, std::string_view type, const StoredObject& obj) override;
  void appendBookmark(std::string& out, uint64_t rv, bool initial_events_end) override;

 private:
  const ResourceType& type_;
  bool events_v1_view_;
};

// Renders stored core/v1 Events as events.k8s.io/v1 Events.
class EventsV1WatchRenderer : public JsonWatchRenderer {
 public:
  explicit EventsV1WatchRenderer(const ResourceType& type) : JsonWatchRenderer(type) {}
  void appendEvent(std::string& out, std::string_view type, const StoredObject& obj) override;
};

}  // namespace ccm::kubesim
