// Unit tests of HttpTransport against a scripted plain-HTTP server: body framings (length,
// chunked with extensions and trailers, end of connection), interim 1xx answers, keep-alive
// and Connection: close, a kept-alive connection closed by the server (sent again once, on a
// fresh connection), headers (Retry-After, Warning, and the field helpers both transports
// share), discarded success bodies, timeouts and cancellation, and when the transport stands
// aside for a proxy. TLS is covered by the kubesim tests (tokens, client certificates,
// verification, tls-server-name).
#include "host/kube/transport/http_transport.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/kube/transport/http_headers.hpp"
#include "test/support/wait.hpp"

namespace ccm::kube {
namespace {

using ccm::testing::waitUntil;

// One request as the server saw it.
struct Seen {
  std::string head;
  std::string body;
  int connection = 0;  // which accepted connection (1, 2, ...)
  size_t following = 0;  // bytes of later (pipelined) requests already received with it
};

// What the server does with a request.
struct Answer {
  std::string bytes;         // written as is
  bool close_after = false;  // then close the connection
  bool hang = false;         // write nothing, keep the connection open until the test ends
};

class ScriptedServer {
 public:
  using Script = std::function<Answer(const Seen&, int index)>;

  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~ScriptedServer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    acceptor_.join();
    {
      std::lock_guard lock(mu_);
      for (int c : open_) {
        ::shutdown(c, SHUT_RDWR);
      }
    }
    for (auto& t : conns_) {
      t.join();
    }
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Seen> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  int connections() const { return accepted_.load(); }

 private:
  void acceptLoop() {
    while (!stopping_) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        return;
      }
      int id = ++accepted_;
      std::lock_guard lock(mu_);
      open_.push_back(c);
      conns_.emplace_back([this, c, id] { serve(c, id); });
    }
  }

  void serve(int c, int id) {
    std::string buf;
    char tmp[4096];
    while (true) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
        if (n <= 0) {
          ::close(c);
          return;
        }
        buf.append(tmp, static_cast<size_t>(n));
      }
      Seen s;
      s.head = buf.substr(0, end + 4);
      s.connection = id;
      buf.erase(0, end + 4);
      size_t cl = s.head.find("Content-Length: ");
      size_t want = cl == std::string::npos ? 0 : std::stoul(s.head.substr(cl + 16));
      while (buf.size() < want) {
        ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
        if (n <= 0) {
          ::close(c);
          return;
        }
        buf.append(tmp, static_cast<size_t>(n));
      }
      s.body = buf.substr(0, want);
      buf.erase(0, want);
      s.following = buf.size();
      int index;
      {
        std::lock_guard lock(mu_);
        seen_.push_back(s);
        index = static_cast<int>(seen_.size()) - 1;
      }
      Answer a = script_(s, index);
      if (a.hang) {
        while (::recv(c, tmp, sizeof tmp, 0) > 0) {
        }
        ::close(c);
        return;
      }
      ::send(c, a.bytes.data(), a.bytes.size(), MSG_NOSIGNAL);
      if (a.close_after) {
        ::shutdown(c, SHUT_WR);
        while (::recv(c, tmp, sizeof tmp, 0) > 0) {
        }
        ::close(c);
        return;
      }
    }
  }

  Script script_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<Seen> seen_;          // guarded by mu_
  std::vector<int> open_;           // guarded by mu_
  std::vector<std::thread> conns_;  // guarded by mu_ (joined at destruction)
};

std::string ok(const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::unique_ptr<HttpTransport> transport(
    const std::string& url, std::chrono::milliseconds stall = std::chrono::seconds(30)) {
  RestConfig c;
  c.server = url;
  HttpTransport::Options o;
  o.stall = stall;
  auto t = HttpTransport::create(c, o);
  REQUIRE(t.ok());
  return std::move(t).value();
}

struct Result {
  Status status;
  HttpTransport::Response response;
  std::string body;
};

Result run(HttpTransport& t, std::string_view method, std::string_view target,
           std::string_view body = {}, std::stop_token stop = {},
           std::chrono::milliseconds timeout = {}, bool discard = false) {
  std::vector<std::string> headers = {"Accept: application/json", "User-Agent: test"};
  HttpTransport::Request r;
  r.method = method;
  r.target = target;
  r.headers = &headers;
  r.body = body;
  r.send_body = !body.empty() || method == "PATCH" || method == "POST";
  r.timeout = timeout;
  r.discard_success_body = discard;
  Result out;
  out.status = t.perform(r, Credentials::Current{}, stop, &out.response, &out.body);
  return out;
}

TEST_CASE("a request is one write with Host, headers and Content-Length; connections are kept") {
  ScriptedServer s(
      [](const Seen&, int i) { return Answer{ok("{\"n\":" + std::to_string(i) + "}")}; });
  auto t = transport(s.url());
  for (int i = 0; i < 3; ++i) {
    auto r = run(*t, "PATCH", "/api/v1/nodes/n1", "{\"a\":1}");
    REQUIRE(r.status.ok());
    CHECK(r.response.code == 200);
    CHECK(r.body == "{\"n\":" + std::to_string(i) + "}");
  }
  auto seen = s.seen();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].head.rfind("PATCH /api/v1/nodes/n1 HTTP/1.1\r\nHost: 127.0.0.1:", 0) == 0);
  CHECK(seen[0].head.find("\r\nAccept: application/json\r\n") != std::string::npos);
  CHECK(seen[0].head.find("\r\nContent-Length: 7\r\n") != std::string::npos);
  CHECK(seen[0].body == "{\"a\":1}");
  CHECK(s.connections() == 1);
  CHECK(t->connectionsOpened() == 1);
  // A GET without a body sends no Content-Length.
  auto g = run(*t, "GET", "/api/v1/nodes");
  REQUIRE(g.status.ok());
  CHECK(s.seen().back().head.find("Content-Length") == std::string::npos);
}

// A batch of POSTs with bodies e0, e1, ...
std::vector<HttpTransport::Exchange> batchOf(int n, const std::vector<std::string>* headers) {
  std::vector<HttpTransport::Exchange> batch(static_cast<size_t>(n));
  static std::vector<std::string> bodies;
  bodies.clear();
  for (int i = 0; i < n; ++i) {
    bodies.push_back("{\"e\":" + std::to_string(i) + "}");
  }
  for (int i = 0; i < n; ++i) {
    auto& r = batch[static_cast<size_t>(i)].request;
    r.method = "POST";
    r.target = "/events";
    r.headers = headers;
    r.body = bodies[static_cast<size_t>(i)];
    r.send_body = true;
  }
  return batch;
}

TEST_CASE("a batch is written at once and answered in order on one connection") {
  // Each framing once: Content-Length, chunked, no body (204), and a 1xx before an answer.
  ScriptedServer s([](const Seen& seen, int i) {
    switch (i % 4) {
      case 1:
        return Answer{"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n" +
                      fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", seen.body.size(), seen.body)};
      case 2:
        return Answer{"HTTP/1.1 204 No Content\r\n\r\n"};
      case 3:
        return Answer{"HTTP/1.1 100 Continue\r\n\r\n" +
                      std::string("HTTP/1.1 409 Conflict\r\nContent-Length: 1\r\n\r\nc")};
      default:
        return Answer{ok(seen.body)};
    }
  });
  auto t = transport(s.url());
  std::vector<std::string> headers = {"Accept: application/json"};
  for (auto gather : {std::chrono::microseconds(0), std::chrono::microseconds(2000)}) {
    auto batch = batchOf(8, &headers);
    t->performBatch(batch, Credentials::Current{}, {}, gather);
    for (size_t i = 0; i < batch.size(); ++i) {
      CAPTURE(i);
      REQUIRE(batch[i].status.ok());
      std::string e = "{\"e\":" + std::to_string(i) + "}";
      int codes[] = {200, 201, 204, 409};
      CHECK(batch[i].response.code == codes[i % 4]);
      CHECK(batch[i].body == (i % 4 == 2 ? "" : i % 4 == 3 ? "c" : e));
    }
  }
  auto seen = s.seen();
  REQUIRE(seen.size() == 16);
  for (size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].connection == 1);  // one connection, kept for the second batch
    CHECK(seen[i].body == "{\"e\":" + std::to_string(i % 8) + "}");
  }
  // The first request arrived with the others behind it: they were sent together.
  CHECK(seen[0].following > 0);
  CHECK(seen[8].following > 0);
  CHECK(t->connectionsOpened() == 1);
}

TEST_CASE("a batch: the requests after a closing answer are sent again, a cut-off batch fails") {
  // The second request on the first connection is answered with Connection: close; the
  // server never reads the requests behind it.
  ScriptedServer s([](const Seen& seen, int i) {
    if (seen.connection == 1 && i == 1) {
      return Answer{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx",
                    true};
    }
    return Answer{ok(seen.body)};
  });
  auto t = transport(s.url());
  std::vector<std::string> headers;
  auto batch = batchOf(4, &headers);
  t->performBatch(batch, Credentials::Current{}, {}, {});
  for (size_t i = 0; i < batch.size(); ++i) {
    CAPTURE(i);
    REQUIRE(batch[i].status.ok());
    CHECK(batch[i].body == (i == 1 ? "x" : "{\"e\":" + std::to_string(i) + "}"));
  }
  auto seen = s.seen();
  REQUIRE(seen.size() == 4);  // each request acted on once
  CHECK(seen[1].connection == 1);
  CHECK(seen[2].connection == 2);
  CHECK(seen[2].body == "{\"e\":2}");
  CHECK(seen[3].body == "{\"e\":3}");

  // A connection dropped after the first answer: that answer stands, the others fail (the
  // server may have acted on them) and are not sent again.
  ScriptedServer cut([](const Seen& seen, int i) {
    return i == 1 ? Answer{"", true} : Answer{ok(seen.body)};
  });
  auto t2 = transport(cut.url());
  auto batch2 = batchOf(3, &headers);
  t2->performBatch(batch2, Credentials::Current{}, {}, {});
  CHECK(batch2[0].status.ok());
  CHECK(batch2[1].status.code() == Code::Unavailable);
  CHECK(batch2[2].status.code() == Code::Unavailable);
  CHECK(cut.seen().size() == 2);

  // A kept-alive connection the server dropped while idle: the batch goes again, once, on a
  // fresh connection.
  std::atomic<int> drops{0};
  ScriptedServer stale([&](const Seen& seen, int) {
    if (seen.connection == 1 && seen.body == "{\"e\":0}" && drops++ == 0) {
      return Answer{"", true};
    }
    return Answer{ok(seen.body)};
  });
  auto t3 = transport(stale.url());
  REQUIRE(run(*t3, "GET", "/warm").status.ok());
  auto batch3 = batchOf(2, &headers);
  t3->performBatch(batch3, Credentials::Current{}, {}, {});
  CHECK(batch3[0].status.ok());
  CHECK(batch3[1].status.ok());
  CHECK(stale.connections() == 2);
}

TEST_CASE("a batch's gathering wait: applied before reading, ended by stop") {
  ScriptedServer s([](const Seen& seen, int) { return Answer{ok(seen.body)}; });
  auto t = transport(s.url());
  std::vector<std::string> headers;
  auto batch = batchOf(3, &headers);
  auto start = std::chrono::steady_clock::now();
  t->performBatch(batch, Credentials::Current{}, {}, std::chrono::milliseconds(300));
  // The server answers at once; the reader waits before its first read all the same.
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(300));
  CHECK(batch[2].status.ok());
  // A stop ends the wait: the batch is cancelled instead of waiting out a minute.
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.request_stop();
  });
  auto batch2 = batchOf(3, &headers);
  start = std::chrono::steady_clock::now();
  t->performBatch(batch2, Credentials::Current{}, stop.get_token(), std::chrono::seconds(60));
  stopper.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  CHECK(batch2[0].status.code() == Code::Cancelled);
  CHECK(batch2[2].status.code() == Code::Cancelled);
}

TEST_CASE("chunked bodies (extensions, trailers), end-of-connection bodies and 1xx answers") {
  ScriptedServer s([](const Seen& seen, int) {
    if (seen.head.find("/chunked") != std::string::npos) {
      return Answer{
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
          "5;ext=1\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\nX-Trailer: t\r\n\r\n"};
    }
    if (seen.head.find("/eof") != std::string::npos) {
      return Answer{"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", true};
    }
    if (seen.head.find("/continue") != std::string::npos) {
      return Answer{"HTTP/1.1 100 Continue\r\n\r\n" + ok("after interim")};
    }
    return Answer{"HTTP/1.1 204 No Content\r\n\r\n"};
  });
  auto t = transport(s.url());
  auto c = run(*t, "GET", "/chunked");
  REQUIRE(c.status.ok());
  CHECK(c.body == "hello world!");
  auto e = run(*t, "GET", "/eof");
  REQUIRE(e.status.ok());
  CHECK(e.body == "until the end");
  auto i = run(*t, "POST", "/continue", "{}");
  REQUIRE(i.status.ok());
  CHECK(i.response.code == 200);
  CHECK(i.body == "after interim");
  auto n = run(*t, "DELETE", "/nothing");
  REQUIRE(n.status.ok());
  CHECK(n.response.code == 204);
  CHECK(n.body.empty());
  // The end-of-connection answer closed its connection: one more was made after it.
  CHECK(s.connections() == 2);
}

TEST_CASE("Retry-After and Warning headers are read; error bodies are kept") {
  ScriptedServer s([](const Seen&, int) {
    std::string body = "{\"kind\":\"Status\",\"code\":429}";
    return Answer{
        "HTTP/1.1 429 Too Many Requests\r\nretry-after: 3\r\n"
        "Warning: 299 - \"deprecated thing\"\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body};
  });
  auto t = transport(s.url());
  auto r = run(*t, "PATCH", "/x", "{}", {}, {}, /*discard=*/true);
  REQUIRE(r.status.ok());
  CHECK(r.response.code == 429);
  CHECK(r.response.retry_after_seconds == 3);
  REQUIRE(r.response.warnings.size() == 1);
  CHECK(r.response.warnings[0] == "deprecated thing");
  CHECK(r.body.find("Status") != std::string::npos);  // kept: not a success
}

TEST_CASE("header fields: names by case, token lists, Warning texts, Retry-After seconds") {
  // The helpers both transports (this one and libcurl's header callback) read answers with.
  CHECK(http::iequals("Content-Length", "content-length"));
  CHECK(http::iequals("retry-after", "Retry-AFTER"));
  CHECK_FALSE(http::iequals("Content-Length", "content-lengt"));
  CHECK_FALSE(http::iequals("[", "{"));  // only ASCII letters fold
  auto f = http::splitField("Connection:  Keep-Alive, Upgrade \r\n");
  REQUIRE(f);
  CHECK(f->name == "Connection");
  CHECK(f->value == "Keep-Alive, Upgrade");
  CHECK_FALSE(http::splitField("no colon here\r\n"));
  CHECK(http::hasToken(f->value, "keep-alive"));
  CHECK(http::hasToken(f->value, "upgrade"));
  CHECK_FALSE(http::hasToken(f->value, "close"));
  CHECK_FALSE(http::hasToken("keep-aliveX", "keep-alive"));
  CHECK_FALSE(http::hasToken("", "close"));
  CHECK(http::hasToken("gzip,,chunked", "chunked"));
  CHECK(http::warningText("299 - \"the text\"") == "the text");
  CHECK(http::warningText("299 - no quotes") == "299 - no quotes");
  CHECK(http::warningText("299 - \"") == "299 - \"");
  CHECK(http::retryAfterSeconds("3") == 3);
  CHECK(http::retryAfterSeconds("0") == 0);
  CHECK(http::retryAfterSeconds("-1") == -1);
  CHECK(http::retryAfterSeconds("3s") == -1);
  CHECK(http::retryAfterSeconds("Wed, 21 Oct 2026 07:28:00 GMT") == -1);
  CHECK(http::retryAfterSeconds("") == -1);
}

TEST_CASE("a success body can be read and discarded; the connection stays usable") {
  ScriptedServer s([](const Seen&, int) { return Answer{ok(std::string(100000, 'x'))}; });
  auto t = transport(s.url());
  auto r = run(*t, "PATCH", "/x", "{}", {}, {}, /*discard=*/true);
  REQUIRE(r.status.ok());
  CHECK(r.response.code == 200);
  CHECK(r.body.empty());
  auto again = run(*t, "GET", "/x");
  REQUIRE(again.status.ok());
  CHECK(again.body.size() == 100000);
  CHECK(s.connections() == 1);
}

TEST_CASE("Connection: close is honoured") {
  ScriptedServer s([](const Seen&, int) {
    return Answer{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", true};
  });
  auto t = transport(s.url());
  for (int i = 0; i < 3; ++i) {
    auto r = run(*t, "GET", "/x");
    REQUIRE(r.status.ok());
    CHECK(r.body == "ok");
  }
  CHECK(s.connections() == 3);
}

TEST_CASE("a kept-alive connection the server closed while idle is not used") {
  // The server answers and then closes every connection without saying so.
  ScriptedServer s([](const Seen&, int i) {
    return Answer{ok(std::to_string(i)), /*close_after=*/true};
  });
  auto t = transport(s.url());
  for (int i = 0; i < 4; ++i) {
    auto r = run(*t, "POST", "/events", "{\"e\":" + std::to_string(i) + "}");
    REQUIRE(r.status.ok());
    CHECK(r.body == std::to_string(i));
  }
  auto seen = s.seen();
  REQUIRE(seen.size() == 4);  // never twice
  for (int i = 0; i < 4; ++i) {
    CHECK(seen[static_cast<size_t>(i)].body == "{\"e\":" + std::to_string(i) + "}");
  }
}

TEST_CASE("a request the server drops unanswered on a reused connection is sent again, once") {
  // The second request on every connection is dropped without an answer (a server closing an
  // idle connection just as the client reuses it).
  std::mutex mu;
  std::map<int, int> per_connection;
  ScriptedServer s([&](const Seen& seen, int i) {
    std::lock_guard lock(mu);
    if (++per_connection[seen.connection] == 2) {
      return Answer{"", /*close_after=*/true};
    }
    return Answer{ok(std::to_string(i))};
  });
  auto t = transport(s.url());
  REQUIRE(run(*t, "POST", "/events", "{\"e\":0}").status.ok());
  auto r = run(*t, "POST", "/events", "{\"e\":1}");
  REQUIRE(r.status.ok());
  auto seen = s.seen();
  REQUIRE(seen.size() == 3);  // e=1 reached the old connection (dropped) and a fresh one
  CHECK(seen[1].body == "{\"e\":1}");
  CHECK(seen[2].body == "{\"e\":1}");
  CHECK(seen[1].connection != seen[2].connection);
  // A fresh connection is never retried: the drop is an error.
  ScriptedServer always([](const Seen&, int) { return Answer{"", true}; });
  auto t2 = transport(always.url());
  CHECK(run(*t2, "POST", "/events", "{}").status.code() == Code::Unavailable);
  CHECK(always.seen().size() == 1);
}

TEST_CASE("a server that never answers: the request timeout, the stall timeout, cancellation") {
  ScriptedServer s([](const Seen&, int) { return Answer{"", false, true}; });
  SUBCASE("request timeout") {
    auto t = transport(s.url());
    auto r = run(*t, "GET", "/slow", {}, {}, std::chrono::milliseconds(200));
    CHECK(r.status.code() == Code::DeadlineExceeded);
  }
  SUBCASE("stall") {
    auto t = transport(s.url(), std::chrono::milliseconds(200));
    auto r = run(*t, "GET", "/slow");
    CHECK(r.status.code() == Code::DeadlineExceeded);
  }
  SUBCASE("stop token") {
    auto t = transport(s.url());
    std::stop_source src;
    std::thread stopper([&] {
      CHECK(waitUntil([&] { return !s.seen().empty(); }));
      src.request_stop();
    });
    auto r = run(*t, "GET", "/slow", {}, src.get_token());
    stopper.join();
    CHECK(r.status.code() == Code::Cancelled);
  }
}

TEST_CASE("a TLS handshake the server never answers ends on stop and on the deadline") {
  // The listener accepts and reads but never speaks TLS (the ClientHello is not an HTTP
  // request, so no answer ever comes).
  ScriptedServer s([](const Seen&, int) { return Answer{"", false, true}; });
  auto tls = [&s] {
    RestConfig c;
    c.server = "https://" + s.url().substr(std::string("http://").size());
    c.insecure_skip_tls_verify = true;
    auto t = HttpTransport::create(c, HttpTransport::Options{});
    REQUIRE(t.ok());
    return std::move(t).value();
  };
  SUBCASE("stop token") {
    auto t = tls();
    std::stop_source src;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      src.request_stop();
    });
    auto r = run(*t, "GET", "/", {}, src.get_token());
    stopper.join();
    CHECK(r.status.code() == Code::Cancelled);
  }
  SUBCASE("request timeout") {
    auto t = tls();
    auto r = run(*t, "GET", "/", {}, {}, std::chrono::milliseconds(300));
    CHECK(r.status.code() == Code::DeadlineExceeded);
  }
}

TEST_CASE("a refused connection and a broken answer are Unavailable") {
  int port = 0;
  {
    ScriptedServer gone([](const Seen&, int) { return Answer{ok("")}; });
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  auto t = transport("http://127.0.0.1:" + std::to_string(port));
  CHECK(run(*t, "GET", "/x").status.code() == Code::Unavailable);
  ScriptedServer bad([](const Seen&, int) { return Answer{"garbage\r\n\r\n", true}; });
  auto t2 = transport(bad.url());
  CHECK(run(*t2, "GET", "/x").status.code() == Code::Unavailable);
  ScriptedServer cut([](const Seen&, int) {
    return Answer{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true};
  });
  auto t3 = transport(cut.url());
  CHECK(run(*t3, "GET", "/x").status.code() == Code::Unavailable);
}

TEST_CASE("a server path prefix is kept") {
  ScriptedServer s([](const Seen&, int) { return Answer{ok("{}")}; });
  auto t = transport(s.url() + "/prefix/");
  REQUIRE(run(*t, "GET", "/api/v1/nodes").status.ok());
  CHECK(s.seen()[0].head.rfind("GET /prefix/api/v1/nodes HTTP/1.1\r\n", 0) == 0);
}

TEST_CASE("the transport stands aside when a proxy applies") {
  RestConfig c;
  c.server = "https://example.invalid:6443";
  const char* saved = std::getenv("HTTPS_PROXY");
  std::string keep = saved != nullptr ? saved : "";
  ::unsetenv("HTTPS_PROXY");
  ::unsetenv("https_proxy");
  bool env_clean = std::getenv("http_proxy") == nullptr && std::getenv("HTTP_PROXY") == nullptr &&
                   std::getenv("all_proxy") == nullptr && std::getenv("ALL_PROXY") == nullptr;
  if (env_clean) {
    CHECK(HttpTransport::usableFor(c));
  }
  c.proxy_url = "http://proxy:3128";
  CHECK_FALSE(HttpTransport::usableFor(c));
  c.proxy_url.clear();
  ::setenv("HTTPS_PROXY", "http://proxy:3128", 1);
  CHECK_FALSE(HttpTransport::usableFor(c));
  if (saved != nullptr) {
    ::setenv("HTTPS_PROXY", keep.c_str(), 1);
  } else {
    ::unsetenv("HTTPS_PROXY");
  }
}

}  // namespace
}  // namespace ccm::kube
