// The client against a server that offers HTTP/2 by ALPN, as kube-apiserver does (run by
// h2_server.py): lists and watches, which go through libcurl, are carried over HTTP/2 with its
// flow control (a 1,200-node list is larger than the initial window); single requests, which
// go through our HTTP/1.1 transport, get HTTP/1.1 from the same server; error answers become
// typed statuses on both.
#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "test/support/test_files.hpp"
#include "host/kube/cache/informer.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "test/support/kube_test_util.hpp"

namespace ccm::kube {
namespace {

using namespace std::chrono_literals;
using testing::waitUntil;

std::string env(const char* name) { return ccm::testing::requiredEnv(name, "h2_server.py"); }

using ccm::testing::readFile;

struct LoggedRequest {
  std::string proto;
  int conn = 0;
  std::string target;
};

// The server's request log, in arrival order.
std::vector<LoggedRequest> requests() {
  std::vector<LoggedRequest> out;
  std::istringstream in(readFile(env("H2_LOG")));
  std::string line;
  while (std::getline(in, line)) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    REQUIRE(d.IsObject());
    out.push_back({d["proto"].GetString(), d["conn"].GetInt(), d["target"].GetString()});
  }
  return out;
}

std::unique_ptr<KubeClient> client() {
  RestConfig config;
  config.server = env("H2_URL");
  config.ca_pem = readFile(env("H2_CA"));
  ClientOptions o;
  o.qps = -1;
  o.user_agent = defaultUserAgent("h2-test", "0.1.0", "");
  auto rest = RestClient::create(config, o);
  REQUIRE_MESSAGE(rest.ok(), rest.status().toString());
  return std::make_unique<KubeClient>(std::move(rest).value());
}

bool isWatch(const LoggedRequest& r) { return r.target.find("watch=") != std::string::npos; }
bool isList(const LoggedRequest& r) {
  return r.target.rfind("/api/v1/nodes?", 0) == 0 && !isWatch(r);
}

TEST_CASE("an informer lists and watches over HTTP/2 when the server offers it") {
  const int nodes = std::stoi(env("H2_NODES"));
  auto c = client();
  InformerOptions o;
  o.page_size = 500;  // three pages of up to ~100 KB each: more than HTTP/2's initial window
  NodeInformer inf(c.get(), o);
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
  CHECK(inf.size() == static_cast<size_t>(nodes));
  auto first = inf.get("node-0");
  REQUIRE(first);
  CHECK(first->resourceVersion() == "1");
  CHECK(first->providerId() == "h2://node-0");

  // The watch's script: node-<nodes> added, node-0 modified, node-1 deleted, a bookmark.
  REQUIRE(waitUntil([&] {
    auto n0 = inf.get("node-0");
    return inf.get("node-1") == nullptr && inf.get("node-" + std::to_string(nodes)) != nullptr &&
           n0 && n0->resourceVersion() == "1002";
  }));
  CHECK(inf.size() == static_cast<size_t>(nodes));
  REQUIRE(waitUntil([&] { return inf.lastSyncResourceVersion() == "1004"; }));
  inf.stop();

  auto log = requests();
  int lists = 0, watches = 0;
  for (const auto& r : log) {
    INFO(r.target);
    if (isList(r)) {
      ++lists;
      CHECK(r.proto == "h2");
    } else if (isWatch(r)) {
      ++watches;
      CHECK(r.proto == "h2");
    }
  }
  CHECK(lists == (nodes + 499) / 500);
  CHECK(watches >= 1);
}

TEST_CASE("single requests speak HTTP/1.1 to the same server; errors are typed on both paths") {
  auto c = client();
  auto r = c->get(ResourcePath{"v1", "nodes", "", "node-7", ""});
  REQUIRE_MESSAGE(r.ok(), r.status().toString());
  CHECK(r->find("\"node-7\"") != std::string::npos);

  auto missing = c->get(ResourcePath{"v1", "nodes", "", "nope", ""});
  CHECK(missing.status().isNotFound());
  CHECK(missing.status().message().find("nodes \"nope\" not found") != std::string::npos);

  // A streamed request (libcurl, HTTP/2) for something that does not exist.
  Request req;
  req.path = "/api/v1/nodes/nope";
  auto s = c->rest().stream(req, {});
  CHECK(s.status().isNotFound());
  CHECK(s.status().message().find("nodes \"nope\" not found") != std::string::npos);

  std::set<std::string> protos_for_gets;
  bool saw_streamed_get = false;
  for (const auto& r : requests()) {
    if (r.target == "/api/v1/nodes/node-7") protos_for_gets.insert(r.proto);
    if (r.target == "/api/v1/nodes/nope" && r.proto == "h2") saw_streamed_get = true;
  }
  CHECK(protos_for_gets == std::set<std::string>{"http/1.1"});
  CHECK(saw_streamed_get);
}

}  // namespace
}  // namespace ccm::kube
