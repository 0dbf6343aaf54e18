// RestClient and KubeClient against the fake API server: headers, typed errors, Retry-After
// retries, re-authentication, connection reuse, metrics, streams and cancellation.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "host/kube/transport/kube_client.hpp"
#include "test/support/fake_api_server.hpp"
#include "test/support/kube_test_util.hpp"

namespace ccm::kube {
namespace {

using testing::FakeApiServer;
using testing::HttpReply;
using testing::HttpRequest;
using testing::makeClient;
using testing::makeRest;
using testing::nodeJson;
using testing::waitUntil;

std::string tempDir() {
  char tmpl[] = "/tmp/ccm-kube-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// The server answers 401 unless a request carries the token it accepts: "old-token-value",
// or "new-token-value" once `accept_new` is set.
void acceptOnlyToken(FakeApiServer& server, const std::atomic<bool>& accept_new) {
  server.setHook([&accept_new](const HttpRequest& req, HttpReply* reply) {
    std::string want = accept_new ? "Bearer new-token-value" : "Bearer old-token-value";
    if (req.headers.at("authorization") != want) {
      reply->code = 401;
      reply->body =
          R"({"kind":"Status","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})";
      return true;
    }
    return false;
  });
}

}  // namespace

TEST_CASE("GET sends the client's headers and returns the body") {
  FakeApiServer server;
  server.upsert("/api/v1/nodes", "n1", nodeJson("n1"));
  RestConfig config;
  config.token = "secret-token-123";
  auto client = makeClient(server.url(), {}, nullptr, config);
  REQUIRE(client);
  auto r = client->get(nodePath("n1"));
  REQUIRE(r.ok());
  CHECK(r->find("\"name\":\"n1\"") != std::string::npos);
  auto reqs = server.requestDetails();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].method == "GET");
  CHECK(reqs[0].path == "/api/v1/nodes/n1");
  CHECK(reqs[0].headers["user-agent"] == "ccm-test/v0.0.0 (linux/amd64) kubernetes/abcdef0");
  CHECK(reqs[0].headers["authorization"] == "Bearer secret-token-123");
  CHECK(reqs[0].headers["accept"].find("application/json") == 0);
  CHECK(reqs[0].headers.count("accept-encoding") == 0);
}

TEST_CASE("writes send the right verb, content type and body") {
  FakeApiServer server;
  server.upsert("/api/v1/nodes", "n1", nodeJson("n1"));
  auto client = makeClient(server.url());
  REQUIRE(client);
  REQUIRE(client->patch(nodeStatusPath("n1"), PatchType::Strategic, R"({"status":{}})").ok());
  REQUIRE(client->patch(nodePath("n1"), PatchType::Merge, R"({"metadata":{}})").ok());
  REQUIRE(client->create(eventPath("default"), R"({"kind":"Event"})").ok());
  REQUIRE(client->update(leasePath("kube-system", "l"), R"({"kind":"Lease"})").ok());
  REQUIRE(client->remove(nodePath("n1"), Preconditions{"uid-n1", "7"}).ok());
  auto reqs = server.requestDetails();
  REQUIRE(reqs.size() == 5);
  CHECK(reqs[0].method == "PATCH");
  CHECK(reqs[0].path == "/api/v1/nodes/n1/status");
  CHECK(reqs[0].headers["content-type"] == "application/strategic-merge-patch+json");
  CHECK(reqs[0].body == R"({"status":{}})");
  CHECK(reqs[1].headers["content-type"] == "application/merge-patch+json");
  CHECK(reqs[2].method == "POST");
  CHECK(reqs[2].path == "/api/v1/namespaces/default/events");
  CHECK(reqs[3].method == "PUT");
  CHECK(reqs[3].path == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l");
  CHECK(reqs[4].method == "DELETE");
  CHECK(
      reqs[4].body ==
      R"({"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"uid-n1","resourceVersion":"7"}})");
  CHECK(server.count("/api/v1/nodes") == 0);
}

TEST_CASE("writes ask for the answer's metadata only, unless the caller reads it whole") {
  FakeApiServer server;
  server.upsert("/api/v1/nodes", "n1", nodeJson("n1"));
  auto client = makeClient(server.url());
  REQUIRE(client);
  const std::string metadata_first =
      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json, */*";
  CallOptions whole;
  whole.want_response = true;
  CallOptions metadata = whole;
  metadata.metadata_only = true;
  REQUIRE(client->patch(nodePath("n1"), PatchType::Merge, R"({"metadata":{}})").ok());
  auto read_whole = client->patch(nodePath("n1"), PatchType::Merge, R"({"metadata":{}})", whole);
  REQUIRE(read_whole.ok());
  CHECK(read_whole->find(R"("name":"n1")") != std::string::npos);
  REQUIRE(client->patch(nodePath("n1"), PatchType::Merge, R"({"metadata":{}})", metadata).ok());
  REQUIRE(client->create(eventPath("default"), R"({"kind":"Event"})").ok());
  REQUIRE(client->get(nodePath("n1")).ok());
  auto reqs = server.requestDetails();
  REQUIRE(reqs.size() == 5);
  CHECK(reqs[0].headers["accept"] == metadata_first);  // the answer is discarded
  CHECK(reqs[1].headers["accept"] == "application/json, */*");
  CHECK(reqs[2].headers["accept"] == metadata_first);
  CHECK(reqs[3].headers["accept"] == metadata_first);
  CHECK(reqs[4].headers["accept"] == "application/json, */*");  // reads: whole objects
}

TEST_CASE("API errors become typed statuses with the server's message") {
  FakeApiServer server;
  auto client = makeClient(server.url());
  REQUIRE(client);
  auto nf = client->get(nodePath("missing"));
  REQUIRE_FALSE(nf.ok());
  CHECK(nf.status().isNotFound());
  CHECK(nf.status().httpCode() == 404);
  CHECK(nf.status().toStatus().code() == Code::NotFound);

  server.failNext(
      "/api/v1/nodes/a", 1, 409, -1,
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Operation cannot be fulfilled on nodes \"a\": the object has been modified","reason":"Conflict","code":409})");
  auto conflict = client->patch(nodePath("a"), PatchType::Strategic, "{}");
  CHECK(conflict.status().isConflict());
  CHECK(conflict.status().message().find("the object has been modified") != std::string::npos);
  CHECK(conflict.status().toStatus().code() == Code::Aborted);

  server.failNext(
      "/api/v1/nodes/b", 1, 422, -1,
      R"({"kind":"Status","status":"Failure","message":"Node \"b\" is invalid: spec.taints[1]: Duplicate value","reason":"Invalid","details":{"causes":[{"reason":"FieldValueDuplicate","message":"Duplicate value","field":"spec.taints[1]"}]},"code":422})");
  auto invalid = client->patch(nodePath("b"), PatchType::Strategic, "{}");
  CHECK(invalid.status().isInvalid());
  REQUIRE(invalid.status().causes().size() == 1);
  CHECK(invalid.status().causes()[0].field == "spec.taints[1]");

  // Plain-text bodies (API priority and fairness, proxies).
  server.failNext("/api/v1/nodes/c", 1, 429, -1, "Too many requests, please try again later.\n");
  auto throttled = client->get(nodePath("c"));
  CHECK(throttled.status().isTooManyRequests());
  CHECK(throttled.status().message() == "Too many requests, please try again later.");
  CHECK(throttled.status().toStatus().code() == Code::ResourceExhausted);

  server.failNext("/api/v1/nodes/d", 1, 502, -1, "<html>Bad Gateway</html>");
  auto gateway = client->get(nodePath("d"));
  CHECK(gateway.status().httpCode() == 502);
  CHECK(gateway.status().message() == "<html>Bad Gateway</html>");
  CHECK(gateway.status().toStatus().code() == Code::Unavailable);

  server.failNext("/api/v1/nodes/e", 1, 403, -1, "");
  auto forbidden = client->get(nodePath("e"));
  CHECK(forbidden.status().isForbidden());
  CHECK_FALSE(forbidden.status().message().empty());
}

TEST_CASE("429 and 5xx with Retry-After are retried; without it they are not") {
  FakeApiServer server;
  server.upsert("/api/v1/nodes", "n1", nodeJson("n1"));
  metrics::Registry registry;
  auto client = makeClient(server.url(), {}, &registry);
  REQUIRE(client);
  server.failNext("/api/v1/nodes/n1", 2, 429, 0);
  server.failNext("/api/v1/nodes/n1", 1, 503, 0);
  auto r = client->get(nodePath("n1"));
  CHECK(r.ok());
  CHECK(server.requests().size() == 4);
  std::string host = client->rest().host();
  CHECK(registry.valueForTest("rest_client_requests_total", {"429", host, "GET"}) == 2);
  CHECK(registry.valueForTest("rest_client_requests_total", {"503", host, "GET"}) == 1);
  CHECK(registry.valueForTest("rest_client_requests_total", {"200", host, "GET"}) == 1);
  CHECK(registry.valueForTest("rest_client_request_duration_seconds", {"GET", host}) == 4);
  CHECK(registry.valueForTest("rest_client_rate_limiter_duration_seconds", {"GET", host}) == 4);

  server.clearRequests();
  server.failNext("/api/v1/nodes/n1", 1, 500, -1);
  auto no_retry = client->get(nodePath("n1"));
  CHECK(no_retry.status().httpCode() == 500);
  CHECK(server.requests().size() == 1);

  server.clearRequests();
  server.failNext("/api/v1/nodes/n1", 20, 429, 0);
  auto exhausted = client->get(nodePath("n1"));
  CHECK(exhausted.status().isTooManyRequests());
  CHECK(server.requests().size() == 11);  // the first try and 10 retries
}

TEST_CASE("a batch of writes: an answer each; Retry-After and 401 retried through call()") {
  FakeApiServer server;
  metrics::Registry registry;
  auto client = makeClient(server.url(), {}, &registry);
  REQUIRE(client);
  server.failNext("/api/v1/nodes/b2", 1, 429, 0);
  server.failNext("/api/v1/nodes/b3", 1, 404);
  std::vector<Write> writes;
  for (int i = 1; i <= 4; ++i) {
    writes.push_back(
        Write{Write::Verb::Patch, nodePath(fmt::format("b{}", i)), R"({"a":1})", PatchType::Merge});
  }
  auto results = client->writeBatch(writes, {}, std::chrono::microseconds(0));
  REQUIRE(results.size() == 4);
  CHECK(results[0].ok());
  CHECK(results[1].ok());  // after its Retry-After
  CHECK(results[2].status().isNotFound());
  CHECK(results[3].ok());
  auto seen = server.requestDetails();
  REQUIRE(seen.size() == 5);
  CHECK(seen[1].path == "/api/v1/nodes/b2");
  CHECK(seen[4].path == "/api/v1/nodes/b2");
  CHECK(seen[4].headers.at("content-type") == "application/merge-patch+json");
  std::string host = client->rest().host();
  CHECK(registry.valueForTest("rest_client_requests_total", {"429", host, "PATCH"}) == 1);
  CHECK(registry.valueForTest("rest_client_requests_total", {"404", host, "PATCH"}) == 1);
  CHECK(registry.valueForTest("rest_client_requests_total", {"200", host, "PATCH"}) == 3);
  CHECK(registry.valueForTest("rest_client_rate_limiter_duration_seconds", {"PATCH", host}) == 5);

  // A token rotated on disk: every request of the batch gets a 401, the credentials are
  // read again once, and each request is sent again with the new token.
  std::string dir = tempDir();
  std::string token_file = dir + "/token";
  writeFile(token_file, "old-token-value\n");
  std::atomic<bool> accept_new{false};
  FakeApiServer guarded;
  acceptOnlyToken(guarded, accept_new);
  RestConfig config;
  config.token_file = token_file;
  auto tokened = makeClient(guarded.url(), {}, nullptr, config);
  REQUIRE(tokened);
  writeFile(token_file, "new-token-value\n");
  accept_new = true;
  auto renewed = tokened->writeBatch({Write{Write::Verb::Create, eventPath("default"), "{}"},
                                      Write{Write::Verb::Create, eventPath("default"), "{}"},
                                      Write{Write::Verb::Create, eventPath("default"), "{}"}});
  for (const auto& r : renewed) {
    CHECK(r.ok());
  }
  auto tries = guarded.requestDetails();
  REQUIRE(tries.size() == 6);
  CHECK(tries[0].headers.at("authorization") == "Bearer old-token-value");
  CHECK(tries[5].headers.at("authorization") == "Bearer new-token-value");
  std::filesystem::remove_all(dir);
}

TEST_CASE("connections are reused") {
  FakeApiServer server;
  server.upsert("/api/v1/nodes", "n1", nodeJson("n1"));
  auto client = makeClient(server.url());
  REQUIRE(client);
  for (int i = 0; i < 20; ++i) {
    REQUIRE(client->get(nodePath("n1")).ok());
    REQUIRE(client->patch(nodePath("n1"), PatchType::Strategic, "{}").ok());
  }
  CHECK(server.connections() == 1);
}

TEST_CASE("the write guard is asked before connecting and again right before sending") {
  FakeApiServer server;
  server.upsert("/api/v1/nodes", "n1", nodeJson("n1"));
  auto client = makeClient(server.url());
  REQUIRE(client);
  std::atomic<int> asked{0};
  std::atomic<int> refuse_from{1000};
  client->rest().setWriteGuard([&](const Request&) {
    return ++asked >= refuse_from ? ApiStatus(0, Reason::Cancelled, "fenced") : ApiStatus();
  });
  REQUIRE(client->get(nodePath("n1")).ok());
  CHECK(asked == 0);  // reads are never fenced
  REQUIRE(client->patch(nodePath("n1"), PatchType::Strategic, "{}").ok());
  CHECK(asked == 2);
  // Leadership lost between the two questions (a pause while connecting or a frozen
  // process): the request is not sent.
  asked = 0;
  refuse_from = 2;
  auto r = client->patch(nodePath("n1"), PatchType::Strategic, "{}");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().reason() == Reason::Cancelled);
  CHECK(r.status().message() == "fenced");
  CHECK(asked == 2);
  CHECK(server.requestDetails().size() == 2);
  // Refused from the start: not even a connection is needed.
  asked = 0;
  refuse_from = 1;
  REQUIRE_FALSE(client->remove(nodePath("n1"), {}).ok());
  CHECK(asked == 1);
  CHECK(server.requestDetails().size() == 2);
  // Allowed again: writes flow.
  refuse_from = 1000;
  REQUIRE(client->patch(nodePath("n1"), PatchType::Strategic, "{}").ok());
  CHECK(server.requestDetails().size() == 3);
  // Cleared: the old guard, which would refuse now, is no longer asked.
  client->rest().setWriteGuard(nullptr);
  asked = 0;
  refuse_from = 1;
  REQUIRE(client->patch(nodePath("n1"), PatchType::Strategic, "{}").ok());
  CHECK(asked == 0);
  CHECK(server.requestDetails().size() == 4);
}

TEST_CASE("a transport failure is a Transport status") {
  int port;
  {
    FakeApiServer gone;
    port = gone.port();
  }
  auto client = makeClient(fmt::format("http://127.0.0.1:{}", port));
  REQUIRE(client);
  auto r = client->get(nodePath("n1"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().isTransport());
  CHECK(r.status().toStatus().code() == Code::Unavailable);
}

TEST_CASE("a rotated token file is picked up after a 401") {
  FakeApiServer server;
  server.upsert("/api/v1/nodes", "n1", nodeJson("n1"));
  std::string dir = tempDir();
  std::string token_file = dir + "/token";
  writeFile(token_file, "old-token-value\n");
  std::atomic<bool> accept_new{false};
  acceptOnlyToken(server, accept_new);
  RestConfig config;
  config.token_file = token_file;
  auto client = makeClient(server.url(), {}, nullptr, config);
  REQUIRE(client);
  REQUIRE(client->get(nodePath("n1")).ok());
  // The token rotates; the server stops accepting the old one.
  writeFile(token_file, "new-token-value\n");
  accept_new = true;
  auto r = client->get(nodePath("n1"));
  CHECK(r.ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("an exec plugin's token is used, cached, and refreshed after a 401") {
  FakeApiServer server;
  server.upsert("/api/v1/nodes", "n1", nodeJson("n1"));
  std::string dir = tempDir();
  std::string counter = dir + "/count";
  std::string script = dir + "/plugin.sh";
  writeFile(
      script,
      "#!/bin/sh\n"
      "n=$(cat " +
          counter + " 2>/dev/null || echo 0); n=$((n+1)); echo $n > " + counter +
          "\n"
          "test -n \"$KUBERNETES_EXEC_INFO\" || exit 3\n"
          "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
          "\"status\":{\"token\":\"exec-token-'$n'\"}}'\n");
  chmod(script.c_str(), 0755);
  std::atomic<int> accepted{1};
  server.setHook([&](const HttpRequest& req, HttpReply* reply) {
    if (req.headers.at("authorization") != fmt::format("Bearer exec-token-{}", accepted)) {
      reply->code = 401;
      return true;
    }
    return false;
  });
  RestConfig config;
  ExecConfig exec;
  exec.command = script;
  exec.api_version = "client.authentication.k8s.io/v1";
  exec.interactive_mode = "Never";
  config.exec = exec;
  auto client = makeClient(server.url(), {}, nullptr, config);
  REQUIRE(client);
  REQUIRE(client->get(nodePath("n1")).ok());
  REQUIRE(client->get(nodePath("n1")).ok());
  std::ifstream c1(counter);
  int runs = 0;
  c1 >> runs;
  CHECK(runs == 1);  // cached
  accepted = 2;      // the server revokes token 1
  CHECK(client->get(nodePath("n1")).ok());
  std::ifstream c2(counter);
  c2 >> runs;
  CHECK(runs == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the client-side rate limiter is shared by all requests of a client") {
  FakeApiServer server;
  server.upsert("/api/v1/nodes", "n1", nodeJson("n1"));
  ClientOptions options;
  options.qps = 0.001;
  options.burst = 3;
  auto client = makeClient(server.url(), options);
  REQUIRE(client);
  CHECK(client->rest().rateLimiter().qps() == 0.001);
  CHECK(client->rest().rateLimiter().burst() == 3);
  REQUIRE(client->get(nodePath("n1")).ok());
  REQUIRE(client->get(nodePath("n1")).ok());
  REQUIRE(client->get(nodePath("n1")).ok());
  // The burst is spent: the next token is only available after a wait.
  CHECK(client->rest().rateLimiter().reserve().count() > 0);
  ClientOptions defaults;
  CHECK(defaults.qps == 20);
  CHECK(defaults.burst == 30);
  // client-go's meaning of 0 and of a negative QPS.
  ClientOptions zero;
  zero.qps = 0;
  zero.burst = 0;
  auto z = makeClient(server.url(), zero);
  CHECK(z->rest().rateLimiter().qps() == 5);
  CHECK(z->rest().rateLimiter().burst() == 10);
  ClientOptions off;
  off.qps = -1;
  CHECK_FALSE(makeClient(server.url(), off)->rest().rateLimiter().enabled());
}

TEST_CASE("a stream can be cancelled while it waits for data, also while it gathers") {
  using namespace std::chrono_literals;
  for (auto gather : {0s, 60s}) {
    CAPTURE(gather.count());
    FakeApiServer server;
    auto rest = makeRest(server.url());
    REQUIRE(rest);
    std::stop_source stop;
    Request req;
    req.path = "/api/v1/nodes?watch=true&resourceVersion=1&timeoutSeconds=600";
    StreamOptions options;
    options.gather = gather;
    auto s = rest->stream(req, stop.get_token(), options);
    REQUIRE(s.ok());
    std::thread canceller([&] {
      waitUntil([&] { return server.openWatches() == 1; });
      std::this_thread::sleep_for(100ms);
      stop.request_stop();
    });
    auto start = std::chrono::steady_clock::now();
    CHECK((*s)->Peek() == '\0');
    CHECK((*s)->endState() == ResponseStream::End::Cancelled);
    CHECK(std::chrono::steady_clock::now() - start < 30s);  // not the 60 s gathering wait
    canceller.join();
  }
}

// A node watch from resourceVersion 0 on `server`, read with `options`.
struct NodeWatch {
  NodeWatch(FakeApiServer& server, const StreamOptions& options) : rest(makeRest(server.url())) {
    REQUIRE(rest);
    Request req;
    req.path = "/api/v1/nodes?watch=true&resourceVersion=0&timeoutSeconds=600";
    auto opened = rest->stream(req, {}, options);
    REQUIRE(opened.ok());
    stream = std::move(*opened);
  }
  std::unique_ptr<RestClient> rest;
  std::unique_ptr<ResponseStream> stream;
};

TEST_CASE("a gathering stream reads events that come close together in one wake-up") {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  // Three watch events 100 ms apart: read one by one without gathering, together when the
  // stream waits 500 ms after handling what it had. A fourth event after a quiet spell is
  // read on its own, as soon as it arrives. (The gaps leave the reader 100 ms and the writer
  // 300 ms of slack on a busy machine.)
  for (auto gather : {0ms, 500ms}) {
    CAPTURE(gather.count());
    FakeApiServer server;
    StreamOptions options;
    options.gather = gather;
    NodeWatch watch(server, options);
    ResponseStream& s = *watch.stream;
    std::atomic<bool> three_read{false};
    std::atomic<Clock::rep> fourth_sent{0};
    std::thread writer([&] {
      waitUntil([&] { return server.openWatches() == 1; });
      for (int i = 0; i < 3; ++i) {
        server.upsert("/api/v1/nodes", fmt::format("n{}", i), nodeJson(fmt::format("n{}", i)));
        std::this_thread::sleep_for(100ms);
      }
      waitUntil([&] { return three_read.load(); });
      std::this_thread::sleep_for(gather + 300ms);  // the reader's gathering wait is over
      fourth_sent = Clock::now().time_since_epoch().count();
      server.upsert("/api/v1/nodes", "n3", nodeJson("n3"));
    });
    for (int i = 0; i < 4; ++i) {
      if (i == 3) {
        CHECK(s.reads() == (gather.count() == 0 ? 3u : 1u));
        three_read = true;
      }
      auto line = s.bufferLine();
      REQUIRE(line.has_value());
      CHECK(line->find(fmt::format("\"name\":\"n{}\"", i)) != std::string_view::npos);
      s.consume(line->size() + 1);
    }
    auto delivered = Clock::now().time_since_epoch().count();
    writer.join();
    CHECK(s.reads() == (gather.count() == 0 ? 4u : 2u));
    if (gather.count() > 0) {
      CHECK(Clock::duration(delivered - fourth_sent.load()) < gather);
    }
  }
}

TEST_CASE("a gathering stream waits longer while events keep coming, and not after a pause") {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  // 200 watch events 5 ms apart (a busy node watch), read with a 20 ms gathering wait: each
  // wait finds events waiting, so with gather_max 80 ms the wait doubles to 80 ms and the
  // stream wakes about 12 times a second instead of 50. Without gather_max it stays 20 ms.
  // One more event after a quiet spell resets the wait to 20 ms.
  for (auto gather_max : {0ms, 80ms}) {
    CAPTURE(gather_max.count());
    FakeApiServer server;
    StreamOptions options;
    options.gather = 20ms;
    options.gather_max = gather_max;
    NodeWatch watch(server, options);
    ResponseStream& s = *watch.stream;
    constexpr int kBurst = 200;
    std::atomic<bool> burst_read{false};
    std::thread writer([&] {
      waitUntil([&] { return server.openWatches() == 1; });
      for (int i = 0; i < kBurst; ++i) {
        server.upsert("/api/v1/nodes", fmt::format("n{}", i), nodeJson(fmt::format("n{}", i)));
        std::this_thread::sleep_for(5ms);
      }
      waitUntil([&] { return burst_read.load(); });
      std::this_thread::sleep_for(300ms);
      server.upsert("/api/v1/nodes", "last", nodeJson("last"));
    });
    std::chrono::milliseconds longest{0};
    Clock::time_point first_read{};
    for (int i = 0; i <= kBurst; ++i) {
      if (i == kBurst) {
        burst_read = true;
      }
      auto line = s.bufferLine();
      REQUIRE(line.has_value());
      if (i == 0) {
        first_read = Clock::now();
      }
      s.consume(line->size() + 1);
      if (i < kBurst) {
        longest = std::max(longest, s.gatherWait());
      }
    }
    writer.join();
    double seconds = std::chrono::duration<double>(Clock::now() - first_read).count() - 0.3;
    double reads_per_second = static_cast<double>(s.reads()) / std::max(seconds, 0.1);
    CAPTURE(reads_per_second);
    CHECK(longest == std::max(gather_max, 20ms));
    CHECK(s.gatherWait() == 20ms);  // the quiet spell before the last event
    if (gather_max > 20ms) {
      CHECK(reads_per_second < 25);  // about 12 at 80 ms; 50 if the wait did not grow
    }
  }
}

TEST_CASE("a streamed error answer becomes a status") {
  FakeApiServer server;
  auto rest = makeRest(server.url());
  REQUIRE(rest);
  server.failNext("/api/v1/nodes", 1, 403, -1);
  Request req;
  req.path = "/api/v1/nodes?limit=500";
  auto s = rest->stream(req, {});
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().isForbidden());
}

}  // namespace ccm::kube
