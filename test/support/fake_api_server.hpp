// FakeApiServer: a small in-process HTTP/1.1 server for the client's unit tests. It serves
// list (paged), watch (chunked, with history, bookmarks and 410) and writes for collections
// of JSON objects, and injects faults on demand (errors with Retry-After, dropped watches,
// compaction, closed connections). Binds 127.0.0.1 port 0. kubesim is the real simulator;
// this one exists so unit tests are small and fully scripted.
//
// THREAD: every public method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ccm::kube::testing {

struct HttpRequest {
  std::string method;
  std::string target;  // path?query
  std::string path;
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

struct HttpReply {
  int code = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // drop the connection without answering
};

class FakeApiServer {
 public:
  FakeApiServer();
  ~FakeApiServer();

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // A hook that may answer any request first (return true when it did).
  using Hook = std::function<bool(const HttpRequest&, HttpReply*)>;
  void setHook(Hook hook);

  // Stores (creates or replaces) an object of `collection` ("/api/v1/nodes"); `json` is the
  // object without resourceVersion (it is set). Returns the new resourceVersion.
  int64_t upsert(const std::string& collection, const std::string& name, const std::string& json);
  // Namespaced helper for services: collection "/api/v1/services", key "ns/name".
  void remove(const std::string& collection, const std::string& key);
  // Forgets history: watches from versions before now get 410; open watches are ended.
  void compact();
  // Ends every open watch (cleanly, or by resetting the connection).
  void dropWatches(bool abrupt = false);
  // Sends a bookmark to every open watch.
  void bookmark();
  // The next `n` requests whose target starts with `prefix` get `code` (with Retry-After
  // when retry_after >= 0; body as given, or a Status when empty).
  void failNext(const std::string& prefix, int n, int code, int retry_after = -1,
                std::string body = {});
  // Appends `bytes` to a collection's watch stream exactly as given, newline included or not
  // (a new resourceVersion is taken, so a watch or list from after it does not see them): for
  // malformed or oddly framed events.
  void appendRawWatchLine(const std::string& collection, std::string bytes);
  // From now on every watch event is written in two pieces with `pause` between them, so a
  // client reading the stream receives half an event and must wait for the rest (0: whole).
  void splitWatchEvents(std::chrono::milliseconds pause);
  // Watch requests answer with an ERROR 410 event right away (n times).
  void expireNextWatches(int n);
  // Continue tokens expire (410) for the next n paged requests.
  void expireNextContinues(int n);

  int64_t currentRv() const;
  std::vector<std::string> requests() const;  // "GET /api/v1/nodes?..." in arrival order
  std::vector<HttpRequest> requestDetails() const;
  void clearRequests();
  int openWatches() const;
  // Number of objects in a collection.
  size_t count(const std::string& collection) const;
  // key -> resourceVersion of every object in a collection.
  std::map<std::string, int64_t> state(const std::string& collection) const;
  // TCP connections accepted so far.
  int connections() const;

  // Stops accepting and closes every connection (a server restart is stop() + a new server
  // on the same port via restart()).
  void stop();
  // Listens again on the same port (history and objects kept).
  void restart();

 private:
  struct Event {
    int64_t rv;
    std::string type;
    std::string key;
    std::string json;
  };
  struct Collection {
    std::map<std::string, std::pair<int64_t, std::string>> objects;  // key -> (rv, json)
    std::deque<Event> history;
  };
  struct Watch;

  void listenOn(int port);
  void acceptLoop(int listen_fd);
  void serveConnection(int fd);
  bool readRequest(int fd, std::string& buf, HttpRequest* req);
  void handle(int fd, const HttpRequest& req, bool* keep_open);
  void serveWatch(int fd, const HttpRequest& req, const std::string& collection);
  HttpReply serveList(const HttpRequest& req, const std::string& collection);
  HttpReply serveWrite(const HttpRequest& req, const std::string& collection,
                       const std::string& name);
  std::string collectionOf(const std::string& path, std::string* name) const;
  static bool sendAll(int fd, const std::string& data);
  static void sendReply(int fd, const HttpReply& reply);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Hook hook_;                                      // guarded by mu_
  std::map<std::string, Collection> collections_;  // guarded by mu_
  int64_t rv_ = 100;                               // guarded by mu_
  int64_t compacted_rv_ = 0;                       // guarded by mu_
  uint64_t drop_generation_ = 0;                   // guarded by mu_
  bool drop_abrupt_ = false;                       // guarded by mu_
  uint64_t bookmark_generation_ = 0;               // guarded by mu_
  struct Failure {
    std::string prefix;
    int n;
    int code;
    int retry_after;
    std::string body;
  };
  std::vector<Failure> failures_;             // guarded by mu_
  int expire_watches_ = 0;                    // guarded by mu_
  std::chrono::milliseconds split_pause_{0};  // guarded by mu_
  int expire_continues_ = 0;                  // guarded by mu_
  std::vector<std::string> requests_;         // guarded by mu_
  std::vector<HttpRequest> details_;          // guarded by mu_
  int open_watches_ = 0;                      // guarded by mu_
  std::vector<int> conn_fds_;                 // guarded by mu_
  int accepted_ = 0;                          // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_

  int port_ = 0;
  int listen_fd_ = -1;
  std::thread acceptor_;
  std::mutex threads_mu_;
  std::vector<std::thread> conn_threads_;  // guarded by threads_mu_
};

}  // namespace ccm::kube::testing
