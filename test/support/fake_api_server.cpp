// FakeApiServer implementation: sockets, HTTP/1.1 parsing, list/watch/write semantics.
#include "test/support/fake_api_server.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ccm::kube::testing {
namespace {

std::string lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else if (s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string statusJson(int code, const std::string& reason, const std::string& message) {
  return fmt::format(
      R"({{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{}","reason":"{}","code":{}}})",
      message, reason, code);
}

std::string reasonFor(int code) {
  switch (code) {
    case 404:
      return "NotFound";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    default:
      return "";
  }
}

// Sets metadata.resourceVersion in an object's JSON.
std::string withRv(const std::string& json, int64_t rv) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  if (doc.HasParseError() || !doc.IsObject()) {
    throw std::runtime_error("FakeApiServer: invalid object JSON: " + json);
  }
  auto& a = doc.GetAllocator();
  if (!doc.HasMember("metadata")) {
    doc.AddMember("metadata", rapidjson::Value(rapidjson::kObjectType), a);
  }
  auto& meta = doc["metadata"];
  std::string rvs = std::to_string(rv);
  if (meta.HasMember("resourceVersion")) {
    meta["resourceVersion"].SetString(rvs.c_str(), static_cast<rapidjson::SizeType>(rvs.size()), a);
  } else {
    meta.AddMember("resourceVersion",
                   rapidjson::Value(rvs.c_str(), static_cast<rapidjson::SizeType>(rvs.size()), a),
                   a);
  }
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  doc.Accept(w);
  return buf.GetString();
}

// The history entry type of appendRawWatchLine (sent as it is, not wrapped in an event).
constexpr const char* kRawLine = "RAW";

std::string chunk(const std::string& data) {
  return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
}

}  // namespace

FakeApiServer::FakeApiServer() {
  listenOn(0);
}

FakeApiServer::~FakeApiServer() {
  stop();
}

void FakeApiServer::listenOn(int port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 64) != 0) {
    throw std::runtime_error(std::string("FakeApiServer: bind/listen: ") + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  int fd = listen_fd_;
  acceptor_ = std::thread([this, fd] { acceptLoop(fd); });
}

void FakeApiServer::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && listen_fd_ < 0) {
      return;
    }
    stopping_ = true;
    for (int fd : conn_fds_) {
      shutdown(fd, SHUT_RDWR);
    }
    cv_.notify_all();
  }
  if (listen_fd_ >= 0) {
    shutdown(listen_fd_, SHUT_RDWR);
    close(listen_fd_);
    listen_fd_ = -1;
  }
  if (acceptor_.joinable()) {
    acceptor_.join();
  }
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(threads_mu_);
    threads.swap(conn_threads_);
  }
  for (auto& t : threads) {
    t.join();
  }
}

void FakeApiServer::restart() {
  stop();
  listenOn(port_);
}

void FakeApiServer::acceptLoop(int listen_fd) {
  while (true) {
    pollfd p{listen_fd, POLLIN, 0};
    int r = poll(&p, 1, 100);
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        return;
      }
    }
    if (r <= 0) {
      continue;
    }
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    {
      std::lock_guard lock(mu_);
      conn_fds_.push_back(fd);
      ++accepted_;
    }
    std::lock_guard lock(threads_mu_);
    conn_threads_.emplace_back([this, fd] { serveConnection(fd); });
  }
}

bool FakeApiServer::sendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

void FakeApiServer::sendReply(int fd, const HttpReply& reply) {
  std::string head =
      fmt::format("HTTP/1.1 {} X\r\nContent-Length: {}\r\n", reply.code, reply.body.size());
  bool has_type = false;
  for (const auto& [k, v] : reply.headers) {
    head += fmt::format("{}: {}\r\n", k, v);
    has_type = has_type || lower(k) == "content-type";
  }
  if (!has_type) {
    head += "Content-Type: application/json\r\n";
  }
  head += "\r\n";
  sendAll(fd, head + reply.body);
}

bool FakeApiServer::readRequest(int fd, std::string& buf, HttpRequest* req) {
  char tmp[65536];
  size_t header_end;
  while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) {
      return false;
    }
    buf.append(tmp, static_cast<size_t>(n));
  }
  std::string head = buf.substr(0, header_end);
  buf.erase(0, header_end + 4);
  size_t line_end = head.find("\r\n");
  std::string first = head.substr(0, line_end);
  size_t sp1 = first.find(' ');
  size_t sp2 = first.find(' ', sp1 + 1);
  req->method = first.substr(0, sp1);
  req->target = first.substr(sp1 + 1, sp2 - sp1 - 1);
  size_t q = req->target.find('?');
  req->path = req->target.substr(0, q);
  req->query.clear();
  if (q != std::string::npos) {
    std::string qs = req->target.substr(q + 1);
    size_t start = 0;
    while (start <= qs.size()) {
      size_t amp = qs.find('&', start);
      std::string kv = qs.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
      size_t eq = kv.find('=');
      if (!kv.empty()) {
        req->query[unescape(kv.substr(0, eq))] =
            eq == std::string::npos ? "" : unescape(kv.substr(eq + 1));
      }
      if (amp == std::string::npos) {
        break;
      }
      start = amp + 1;
    }
  }
  req->headers.clear();
  size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    std::string line = head.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string v = line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') {
        v.erase(0, 1);
      }
      req->headers[lower(line.substr(0, colon))] = v;
    }
    if (e == std::string::npos) {
      break;
    }
    pos = e + 2;
  }
  size_t length = 0;
  if (auto it = req->headers.find("content-length"); it != req->headers.end()) {
    length = std::stoul(it->second);
  }
  while (buf.size() < length) {
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) {
      return false;
    }
    buf.append(tmp, static_cast<size_t>(n));
  }
  req->body = buf.substr(0, length);
  buf.erase(0, length);
  return true;
}

void FakeApiServer::serveConnection(int fd) {
  std::string buf;
  while (true) {
    HttpRequest req;
    if (!readRequest(fd, buf, &req)) {
      break;
    }
    bool keep_open = true;
    handle(fd, req, &keep_open);
    if (!keep_open) {
      break;
    }
  }
  {
    std::lock_guard lock(mu_);
    conn_fds_.erase(std::remove(conn_fds_.begin(), conn_fds_.end(), fd), conn_fds_.end());
  }
  close(fd);
}

std::string FakeApiServer::collectionOf(const std::string& path, std::string* name) const {
  // /api/v1/nodes[/name[/status]], /api/v1/namespaces/ns/services[/name[/status]],
  // /apis/g/v/namespaces/ns/leases[/name]
  std::vector<std::string> parts;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    parts.push_back(
        path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) {
      break;
    }
    start = slash + 1;
  }
  size_t base = parts.size() > 0 && parts[0] == "api" ? 2 : 3;
  if (parts.size() <= base) {
    return {};
  }
  std::string prefix = "/" + parts[0] + "/" + parts[1] + (base == 3 ? "/" + parts[2] : "");
  std::string ns;
  size_t i = base;
  if (parts[i] == "namespaces" && parts.size() > i + 2) {
    ns = parts[i + 1];
    i += 2;
  }
  std::string collection = prefix + "/" + parts[i];
  name->clear();
  if (parts.size() > i + 1) {
    *name = ns.empty() ? parts[i + 1] : ns + "/" + parts[i + 1];
  } else if (!ns.empty()) {
    *name = ns + "/";  // namespaced collection
  }
  return collection;
}

void FakeApiServer::handle(int fd, const HttpRequest& req, bool* keep_open) {
  Hook hook;
  {
    std::lock_guard lock(mu_);
    requests_.push_back(req.method + " " + req.target);
    details_.push_back(req);
    hook = hook_;
    for (auto& f : failures_) {
      if (f.n > 0 && req.target.rfind(f.prefix, 0) == 0) {
        --f.n;
        HttpReply reply;
        reply.code = f.code;
        reply.body =
            f.body.empty() ? statusJson(f.code, reasonFor(f.code), "injected failure") : f.body;
        if (!f.body.empty() && f.body.front() != '{') {
          reply.headers.emplace_back("Content-Type", "text/plain");
        }
        if (f.retry_after >= 0) {
          reply.headers.emplace_back("Retry-After", std::to_string(f.retry_after));
        }
        sendReply(fd, reply);
        return;
      }
    }
  }
  if (hook) {
    HttpReply reply;
    if (hook(req, &reply)) {
      if (reply.close) {
        *keep_open = false;
        return;
      }
      sendReply(fd, reply);
      return;
    }
  }
  std::string name;
  std::string collection = collectionOf(req.path, &name);
  if (collection.empty()) {
    sendReply(fd, HttpReply{404, statusJson(404, "NotFound", "no such path"), {}, false});
    return;
  }
  if (req.method == "GET" && (name.empty() || name.back() == '/')) {
    auto w = req.query.find("watch");
    if (w != req.query.end() && (w->second == "true" || w->second == "1")) {
      serveWatch(fd, req, collection);
      *keep_open = false;
      return;
    }
    sendReply(fd, serveList(req, collection));
    return;
  }
  sendReply(fd, serveWrite(req, collection, name));
}

HttpReply FakeApiServer::serveList(const HttpRequest& req, const std::string& collection) {
  std::lock_guard lock(mu_);
  Collection& c = collections_[collection];
  size_t limit = 0;
  if (auto it = req.query.find("limit"); it != req.query.end()) {
    limit = std::stoul(it->second);
  }
  std::string start_after;
  if (auto it = req.query.find("continue"); it != req.query.end()) {
    if (expire_continues_ > 0) {
      --expire_continues_;
      return HttpReply{
          410, statusJson(410, "Expired", "The provided continue parameter is too old"), {}, false};
    }
    start_after = it->second;
  }
  std::string items;
  size_t n = 0;
  std::string next;
  auto it = start_after.empty() ? c.objects.begin() : c.objects.upper_bound(start_after);
  for (; it != c.objects.end(); ++it) {
    if (limit > 0 && n == limit) {
      next = std::prev(it)->first;
      break;
    }
    if (!items.empty()) {
      items += ",";
    }
    items += it->second.second;
    ++n;
  }
  std::string meta = fmt::format(R"("resourceVersion":"{}")", rv_);
  if (!next.empty()) {
    meta += fmt::format(R"(,"continue":"{}")", next);
  }
  return HttpReply{
      200,
      fmt::format(R"({{"kind":"List","apiVersion":"v1","metadata":{{{}}},"items":[{}]}})", meta,
                  items),
      {},
      false};
}

HttpReply FakeApiServer::serveWrite(const HttpRequest& req, const std::string& collection,
                                    const std::string& name) {
  std::lock_guard lock(mu_);
  Collection& c = collections_[collection];
  auto it = c.objects.find(name);
  if (req.method == "GET") {
    if (it == c.objects.end()) {
      return HttpReply{
          404, statusJson(404, "NotFound", "\\\"" + name + "\\\" not found"), {}, false};
    }
    return HttpReply{200, it->second.second, {}, false};
  }
  if (req.method == "DELETE") {
    if (it == c.objects.end()) {
      return HttpReply{404, statusJson(404, "NotFound", "not found"), {}, false};
    }
    int64_t rv = ++rv_;
    std::string json = withRv(it->second.second, rv);
    c.history.push_back(Event{rv, "DELETED", name, json});
    c.objects.erase(it);
    cv_.notify_all();
    return HttpReply{200, json, {}, false};
  }
  // POST/PUT/PATCH: echo (tests of writes inspect requests()).
  return HttpReply{req.method == "POST" ? 201 : 200,
                   it == c.objects.end() ? std::string("{}") : it->second.second,
                   {},
                   false};
}

void FakeApiServer::serveWatch(int fd, const HttpRequest& req, const std::string& collection) {
  int64_t from = 0;
  if (auto it = req.query.find("resourceVersion"); it != req.query.end() && !it->second.empty()) {
    from = std::stoll(it->second);
  }
  bool bookmarks = req.query.count("allowWatchBookmarks") > 0;
  int timeout_s = 0;
  if (auto it = req.query.find("timeoutSeconds"); it != req.query.end()) {
    timeout_s = std::stoi(it->second);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::unique_lock lock(mu_);
  if (expire_watches_ > 0) {
    --expire_watches_;
    lock.unlock();
    std::string ev = fmt::format(
        R"({{"type":"ERROR","object":{}}})"
        "\n",
        statusJson(410, "Expired", fmt::format("too old resource version: {} ({})", from, rv_)));
    sendAll(fd, head + chunk(ev) + "0\r\n\r\n");
    return;
  }
  if (from < compacted_rv_) {
    lock.unlock();
    std::string ev = fmt::format(
        R"({{"type":"ERROR","object":{}}})"
        "\n",
        statusJson(410, "Expired",
                   fmt::format("too old resource version: {} ({})", from, compacted_rv_)));
    sendAll(fd, head + chunk(ev) + "0\r\n\r\n");
    return;
  }
  ++open_watches_;
  uint64_t drop_gen = drop_generation_;
  uint64_t bm_gen = bookmark_generation_;
  lock.unlock();
  bool ok = sendAll(fd, head);
  lock.lock();
  int64_t sent_rv = from;
  bool abrupt = false;
  while (ok && !stopping_) {
    if (drop_generation_ != drop_gen) {
      abrupt = drop_abrupt_;
      break;
    }
    if (sent_rv < compacted_rv_) {
      // History this watcher still needed is gone: like a real server that fell behind,
      // end the watch with 410.
      std::string ev = fmt::format(
          R"({{"type":"ERROR","object":{}}})"
          "\n",
          statusJson(410, "Expired",
                     fmt::format("too old resource version: {} ({})", sent_rv, compacted_rv_)));
      lock.unlock();
      ok = sendAll(fd, chunk(ev));
      lock.lock();
      break;
    }
    Collection& c = collections_[collection];
    std::vector<std::string> lines;
    for (const auto& e : c.history) {
      if (e.rv > sent_rv) {
        lines.push_back(e.type == kRawLine ? e.json
                                           : fmt::format(R"({{"type":"{}","object":{}}})"
                                                         "\n",
                                                         e.type, e.json));
        sent_rv = e.rv;
      }
    }
    if (split_pause_.count() > 0 && !lines.empty()) {
      // Half an event, a pause, the rest: the reader must wait in the middle of each.
      auto pause = split_pause_;
      lock.unlock();
      for (size_t i = 0; ok && i < lines.size(); ++i) {
        const std::string& line = lines[i];
        ok = sendAll(fd, chunk(line.substr(0, line.size() / 2)));
        std::this_thread::sleep_for(pause);
        ok = ok && sendAll(fd, chunk(line.substr(line.size() / 2)));
      }
      lock.lock();
      continue;
    }
    std::string out;
    for (const auto& line : lines) {
      out += chunk(line);
    }
    if (bookmarks && bookmark_generation_ != bm_gen) {
      bm_gen = bookmark_generation_;
      out += chunk(fmt::format(
          R"({{"type":"BOOKMARK","object":{{"kind":"Node","apiVersion":"v1","metadata":{{"resourceVersion":"{}","creationTimestamp":null}}}}}})"
          "\n",
          rv_));
      sent_rv = std::max(sent_rv, rv_);
    }
    if (!out.empty()) {
      lock.unlock();
      ok = sendAll(fd, out);
      lock.lock();
      continue;
    }
    if (timeout_s > 0 && std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  --open_watches_;
  lock.unlock();
  if (abrupt) {
    linger lg{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    shutdown(fd, SHUT_RDWR);
    return;
  }
  if (ok) {
    sendAll(fd, "0\r\n\r\n");
  }
}

void FakeApiServer::appendRawWatchLine(const std::string& collection, std::string bytes) {
  std::lock_guard lock(mu_);
  collections_[collection].history.push_back(Event{++rv_, kRawLine, "", std::move(bytes)});
  cv_.notify_all();
}

void FakeApiServer::splitWatchEvents(std::chrono::milliseconds pause) {
  std::lock_guard lock(mu_);
  split_pause_ = pause;
}

void FakeApiServer::setHook(Hook hook) {
  std::lock_guard lock(mu_);
  hook_ = std::move(hook);
}

int64_t FakeApiServer::upsert(const std::string& collection, const std::string& key,
                              const std::string& json) {
  std::lock_guard lock(mu_);
  Collection& c = collections_[collection];
  int64_t rv = ++rv_;
  std::string stored = withRv(json, rv);
  bool existed = c.objects.count(key) > 0;
  c.objects[key] = {rv, stored};
  c.history.push_back(Event{rv, existed ? "MODIFIED" : "ADDED", key, stored});
  cv_.notify_all();
  return rv;
}

void FakeApiServer::remove(const std::string& collection, const std::string& key) {
  std::lock_guard lock(mu_);
  Collection& c = collections_[collection];
  auto it = c.objects.find(key);
  if (it == c.objects.end()) {
    return;
  }
  int64_t rv = ++rv_;
  c.history.push_back(Event{rv, "DELETED", key, withRv(it->second.second, rv)});
  c.objects.erase(it);
  cv_.notify_all();
}

void FakeApiServer::compact() {
  std::lock_guard lock(mu_);
  compacted_rv_ = rv_;
  for (auto& [name, c] : collections_) {
    c.history.clear();
  }
  // Open watches cannot be served from a forgotten history: end them (their clients resume
  // and get 410 if they are behind).
  ++drop_generation_;
  drop_abrupt_ = true;
  cv_.notify_all();
}

void FakeApiServer::dropWatches(bool abrupt) {
  std::lock_guard lock(mu_);
  ++drop_generation_;
  drop_abrupt_ = abrupt;
  cv_.notify_all();
}

void FakeApiServer::bookmark() {
  std::lock_guard lock(mu_);
  ++bookmark_generation_;
  cv_.notify_all();
}

void FakeApiServer::failNext(const std::string& prefix, int n, int code, int retry_after,
                             std::string body) {
  std::lock_guard lock(mu_);
  failures_.push_back(Failure{prefix, n, code, retry_after, std::move(body)});
}

void FakeApiServer::expireNextWatches(int n) {
  std::lock_guard lock(mu_);
  expire_watches_ += n;
}

void FakeApiServer::expireNextContinues(int n) {
  std::lock_guard lock(mu_);
  expire_continues_ += n;
}

int64_t FakeApiServer::currentRv() const {
  std::lock_guard lock(mu_);
  return rv_;
}

std::vector<std::string> FakeApiServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

std::vector<HttpRequest> FakeApiServer::requestDetails() const {
  std::lock_guard lock(mu_);
  return details_;
}

void FakeApiServer::clearRequests() {
  std::lock_guard lock(mu_);
  requests_.clear();
  details_.clear();
}

int FakeApiServer::openWatches() const {
  std::lock_guard lock(mu_);
  return open_watches_;
}

size_t FakeApiServer::count(const std::string& collection) const {
  std::lock_guard lock(mu_);
  auto it = collections_.find(collection);
  return it == collections_.end() ? 0 : it->second.objects.size();
}

}  // namespace ccm::kube::testing

namespace ccm::kube::testing {

std::map<std::string, int64_t> FakeApiServer::state(const std::string& collection) const {
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> out;
  auto it = collections_.find(collection);
  if (it != collections_.end()) {
    for (const auto& [k, v] : it->second.objects) {
      out[k] = v.first;
    }
  }
  return out;
}

int FakeApiServer::connections() const {
  std::lock_guard lock(mu_);
  return accepted_;
}

}  // namespace ccm::kube::testing
