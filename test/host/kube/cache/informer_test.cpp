// Informers against the fake API server: paged list, watch events, bookmarks, dropped
// watches, 410 relists, 429s, continue-token expiry, server restarts, and a randomised soak
// that checks the handlers saw every change exactly once and the cache converged.
#include "host/kube/cache/informer.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "host/log/log.hpp"
#include "host/runtime/metrics.hpp"
#include "test/support/fake_api_server.hpp"
#include "test/support/kube_test_util.hpp"

namespace ccm::kube {
namespace {

using testing::FakeApiServer;
using testing::makeClient;
using testing::nodeJson;
using testing::waitUntil;

constexpr const char* kNodes = "/api/v1/nodes";

// CCM_TEST_V=<n> turns on verbose client logs when debugging a failure.
struct VerbosityFromEnv {
  VerbosityFromEnv() {
    if (const char* v = std::getenv("CCM_TEST_V")) {
      log::Config c;
      c.verbosity = std::atoi(v);
      log::configure(c);
    }
  }
} verbosity_from_env;

// Rebuilds the server's state from handler calls and checks each call makes sense: an add
// for an unknown key, an update for a known key with a new resourceVersion, a delete for a
// known key. Any violation (a lost or repeated event) is recorded.
class Model {
 public:
  EventHandlers<Node> handlers() {
    EventHandlers<Node> h;
    h.on_add = [this](const std::shared_ptr<const Node>& n) {
      std::lock_guard lock(mu_);
      ++adds;
      if (state_.count(std::string(n->name()))) {
        errors_.push_back(fmt::format("add of known {}", n->name()));
      }
      state_[std::string(n->name())] = std::stoll(std::string(n->resourceVersion()));
    };
    h.on_update = [this](const std::shared_ptr<const Node>& o,
                         const std::shared_ptr<const Node>& n) {
      std::lock_guard lock(mu_);
      ++updates;
      auto it = state_.find(std::string(n->name()));
      if (it == state_.end()) {
        errors_.push_back(fmt::format("update of unknown {}", n->name()));
        return;
      }
      int64_t rv = std::stoll(std::string(n->resourceVersion()));
      if (o == n) {
        ++resyncs;
        return;
      }
      if (rv <= it->second) {
        errors_.push_back(fmt::format("stale or repeated update of {}", n->name()));
      }
      if (std::stoll(std::string(o->resourceVersion())) != it->second) {
        errors_.push_back(fmt::format("update with an old object we did not have: {}", n->name()));
      }
      it->second = rv;
    };
    h.on_delete = [this](const std::shared_ptr<const Node>& n, bool unknown) {
      std::lock_guard lock(mu_);
      ++deletes;
      if (unknown)
        ++unknown_deletes;
      if (state_.erase(std::string(n->name())) == 0) {
        errors_.push_back(fmt::format("delete of unknown {}", n->name()));
      }
    };
    return h;
  }
  std::map<std::string, int64_t> state() const {
    std::lock_guard lock(mu_);
    return state_;
  }
  std::vector<std::string> errors() const {
    std::lock_guard lock(mu_);
    return errors_;
  }
  int adds = 0, updates = 0, deletes = 0, unknown_deletes = 0, resyncs = 0;

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> state_;
  std::vector<std::string> errors_;
};

std::map<std::string, int64_t> cacheState(const NodeInformer& inf) {
  std::map<std::string, int64_t> out;
  for (const auto& n : inf.list()) {
    out[std::string(n->name())] = std::stoll(std::string(n->resourceVersion()));
  }
  return out;
}

InformerOptions fastOptions() {
  InformerOptions o;
  o.initial_backoff = std::chrono::milliseconds(10);
  o.max_backoff = std::chrono::milliseconds(50);
  return o;
}

std::string describe(const std::map<std::string, int64_t>& m) {
  std::string out;
  for (const auto& [k, v] : m)
    out += k + fmt::format("@{}", v) + " ";
  return out;
}

bool converged(FakeApiServer& server, const NodeInformer& inf, const Model& model,
               bool report = false) {
  auto want = server.state(kNodes);
  bool ok = cacheState(inf) == want && model.state() == want;
  if (!ok && report) {
    MESSAGE("server: " << describe(want));
    MESSAGE("cache:  " << describe(cacheState(inf)));
    MESSAGE("model:  " << describe(model.state()));
    MESSAGE("informer rv " << inf.lastSyncResourceVersion() << ", server rv " << server.currentRv()
                           << ", open watches " << server.openWatches());
  }
  return ok;
}

// Adds Nodes n0..n{count-1}.
void seedNodes(FakeApiServer& server, int count) {
  for (int i = 0; i < count; ++i) {
    server.upsert(kNodes, fmt::format("n{}", i), nodeJson(fmt::format("n{}", i)));
  }
}

// Feeds the model from the informer, starts it and waits for the first sync.
void startSynced(NodeInformer& inf, Model& model) {
  inf.addEventHandler(model.handlers());
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
}

}  // namespace

TEST_CASE("the informer lists in pages, syncs, then follows the watch") {
  FakeApiServer server;
  seedNodes(server, 5);
  auto client = makeClient(server.url());
  InformerOptions o = fastOptions();
  o.page_size = 2;
  Model model;
  NodeInformer inf(client.get(), o);
  startSynced(inf, model);
  CHECK(inf.hasSynced());
  CHECK(inf.size() == 5);
  CHECK(model.adds == 5);
  auto reqs = server.requests();
  REQUIRE(reqs.size() >= 3);
  CHECK(reqs[0] == "GET /api/v1/nodes?limit=2&resourceVersion=0");
  CHECK(reqs[1] == "GET /api/v1/nodes?limit=2&continue=n1");
  CHECK(reqs[2] == "GET /api/v1/nodes?limit=2&continue=n3");
  REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
  auto watch = server.requests().back();
  CHECK(watch.find(
            "GET /api/v1/nodes?allowWatchBookmarks=true&resourceVersion=105&timeoutSeconds=") == 0);
  CHECK(watch.find("&watch=true") != std::string::npos);

  server.upsert(kNodes, "n9", nodeJson("n9"));
  server.upsert(kNodes, "n1", nodeJson("n1", "changed"));
  server.remove(kNodes, "n2");
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(inf.get("n1")->label("l") == "changed");
  CHECK(inf.get("n2") == nullptr);
  CHECK(model.adds == 6);
  CHECK(model.updates == 1);
  CHECK(model.deletes == 1);
  CHECK(model.unknown_deletes == 0);
  CHECK(model.errors().empty());
  CHECK(inf.lastSyncResourceVersion() == std::to_string(server.currentRv()));
}

namespace {

// A node informer synced against a fake server holding `seed` nodes, its watch open.
struct Watching {
  explicit Watching(int seed) {
    seedNodes(server, seed);
    startSynced(inf, model);
    REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
  }
  FakeApiServer server;
  std::unique_ptr<KubeClient> client = makeClient(server.url());
  Model model;
  NodeInformer inf{client.get(), fastOptions()};
};

// The bytes of an ADDED event for a bare Node `name` at the server's next resourceVersion,
// with `between` between its two fields and `after` after it.
std::string rawAdded(const FakeApiServer& server, std::string_view name, std::string_view between,
                     std::string_view after) {
  return fmt::format(R"({{"type":"ADDED",{}"object":{{"kind":"Node","metadata":{{"name":"{}",)"
                     R"("resourceVersion":"{}"}}}}}}{})",
                     between, name, server.currentRv() + 1, after);
}

}  // namespace

TEST_CASE("watch events that arrive in pieces are decoded whole, without a relist") {
  Watching w(2);
  auto& server = w.server;
  auto& model = w.model;
  auto& inf = w.inf;
  // Each event's second half comes 30 ms after its first: the buffered bytes end inside an
  // event, and the reader must wait there for the rest before decoding it.
  server.splitWatchEvents(std::chrono::milliseconds(30));
  server.upsert(kNodes, "n0", nodeJson("n0", "first"));
  server.upsert(kNodes, "n7", nodeJson("n7", "new"));
  server.upsert(kNodes, "n0", nodeJson("n0", "second"));
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(inf.get("n0")->label("l") == "second");
  CHECK(inf.get("n7")->label("l") == "new");
  CHECK(model.updates == 2);
  CHECK(model.errors().empty());
  CHECK(inf.stats().lists == 1);
  // Whole again: several events buffered at once are each decoded, and an event written
  // over two lines (which a line cannot hold) is read on from the stream.
  server.splitWatchEvents(std::chrono::milliseconds(0));
  server.appendRawWatchLine(kNodes, rawAdded(server, "two-lines", "\n", "\n"));
  REQUIRE(waitUntil([&] { return inf.get("two-lines") != nullptr; }));
  server.remove(kNodes, "n7");
  for (int i = 0; i < 20; ++i) {
    server.upsert(kNodes, fmt::format("m{}", i), nodeJson(fmt::format("m{}", i), "bulk"));
  }
  REQUIRE(waitUntil([&] { return inf.get("m19") != nullptr && inf.get("n7") == nullptr; }));
  CHECK(inf.size() == 23);
  CHECK(model.errors().empty());
  CHECK(inf.stats().lists == 1);
}

TEST_CASE("a realistic Node from a watch event decodes as decodeNode reads it") {
  std::ifstream file(std::string(CCM_TESTDATA) + "/node.json");
  REQUIRE(file);
  std::stringstream json;
  json << file.rdbuf();
  const std::string name = "ip-10-0-12-34.eu-west-1.compute.internal";
  Watching w(0);
  auto& server = w.server;
  auto& model = w.model;
  auto& inf = w.inf;
  // Once whole in the buffer, once split (the reader waits inside the event for its rest).
  for (int split_ms : {0, 30}) {
    server.splitWatchEvents(std::chrono::milliseconds(split_ms));
    int64_t rv = server.upsert(kNodes, name, json.str());
    REQUIRE(waitUntil([&] {
      auto n = inf.get(name);
      return n != nullptr && n->resourceVersion() == std::to_string(rv);
    }));
    auto got = inf.get(name);
    auto want = decodeNode(json.str());
    REQUIRE(want.ok());
    const Node& a = *got;
    const Node& b = **want;
    CHECK(a.uid() == b.uid());
    auto same = [](const auto& x, const auto& y) {
      return std::ranges::equal(x, y, [](const KeyValue& p, const KeyValue& q) {
        return p.key == q.key && p.value == q.value;
      });
    };
    CHECK(a.labels().size() == 13);
    CHECK(same(a.labels(), b.labels()));
    CHECK(same(a.annotations(), b.annotations()));
    CHECK(a.providerId() == b.providerId());
    CHECK(std::ranges::equal(a.podCidrs(), b.podCidrs()));
    REQUIRE(a.taints().size() == b.taints().size());
    CHECK(a.taints()[1].time_added == b.taints()[1].time_added);
    REQUIRE(a.addresses().size() == 3);
    CHECK(a.addresses()[2].address == b.addresses()[2].address);
    REQUIRE(a.conditions().size() == b.conditions().size());
    CHECK(a.condition("Ready")->reason == "KubeletReady");
    CHECK(a.condition("MemoryPressure") == std::nullopt);
    CHECK(a.nodeInfo().kubelet_version == b.nodeInfo().kubelet_version);
    CHECK(a.nodeInfo().architecture == "amd64");
  }
  CHECK(model.errors().empty());
  CHECK(inf.stats().lists == 1);
}

TEST_CASE("heartbeat watch events update the version and heartbeat, then any change is seen") {
  std::ifstream file(std::string(CCM_TESTDATA) + "/node.json");
  REQUIRE(file);
  std::stringstream json;
  json << file.rdbuf();
  const std::string base = json.str();
  const std::string name = "ip-10-0-12-34.eu-west-1.compute.internal";
  auto with = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
      s.replace(pos, from.size(), to);
    }
    return s;
  };
  Watching w(0);
  auto& server = w.server;
  auto& model = w.model;
  auto& inf = w.inf;
  std::mutex mu;
  std::vector<std::pair<std::shared_ptr<const Node>, std::shared_ptr<const Node>>> updates;
  EventHandlers<Node> h;
  h.on_update = [&](const std::shared_ptr<const Node>& o, const std::shared_ptr<const Node>& n) {
    std::lock_guard lock(mu);
    updates.emplace_back(o, n);
  };
  inf.addEventHandler(h);
  auto arrived = [&](int64_t rv) {
    return waitUntil([&] {
      auto n = inf.get(name);
      return n != nullptr && n->resourceVersion() == std::to_string(rv);
    });
  };
  REQUIRE(arrived(server.upsert(kNodes, name, base)));
  // Three heartbeats: each arrives with its version and heartbeat time, the rest unchanged.
  for (int beat = 1; beat <= 3; ++beat) {
    std::string stamp = fmt::format("2026-07-24T10:05:{:02}Z", beat * 10);
    std::string sent = with(base, R"("lastHeartbeatTime":"2026-07-24T10:05:00Z")",
                            R"("lastHeartbeatTime":")" + stamp + "\"");
    REQUIRE(arrived(server.upsert(kNodes, name, sent)));
    auto got = inf.get(name);
    auto want = decodeNode(sent);
    REQUIRE(want.ok());
    CHECK(got->condition("Ready")->last_heartbeat_time == 1784887500 + beat * 10);
    CHECK(got->condition("Ready")->last_heartbeat_time ==
          (*want)->condition("Ready")->last_heartbeat_time);
    CHECK(got->labels().size() == (*want)->labels().size());
    CHECK(got->providerId() == (*want)->providerId());
    CHECK(got->addresses()[0].address == "10.0.12.34");
  }
  // Each heartbeat was made from the cached node without a parse (the added node was parsed
  // and keeps its event's fingerprint).
  CHECK(inf.stats().scanned_heartbeats == 3);
  // A label change after the heartbeats is seen, by the cache and by the handler.
  int64_t rv = server.upsert(kNodes, name,
                             with(base, R"("node.kubernetes.io/instance-type":"m5.xlarge")",
                                  R"("node.kubernetes.io/instance-type":"m5.2xlarge")"));
  REQUIRE(arrived(rv));
  CHECK(inf.get(name)->label("node.kubernetes.io/instance-type") == "m5.2xlarge");
  {
    std::lock_guard lock(mu);
    REQUIRE(updates.size() == 4);
    CHECK(updates[3].first->label("node.kubernetes.io/instance-type") == "m5.xlarge");
    CHECK(updates[3].second->label("node.kubernetes.io/instance-type") == "m5.2xlarge");
    // The old objects the handler saw are the versions it saw before, heartbeats included.
    CHECK(updates[3].first->condition("Ready")->last_heartbeat_time == 1784887530);
    CHECK(updates[1].first == updates[0].second);
  }
  CHECK(inf.stats().scanned_heartbeats == 3);  // the label change was parsed
  CHECK(model.errors().empty());
}

TEST_CASE("a watch event without its newline is delivered without waiting for one") {
  Watching w(1);
  auto& server = w.server;
  auto& inf = w.inf;
  // Nothing follows the event: a reader waiting for a line end would wait until the watch
  // times out (minutes), well past waitUntil's 30 s.
  server.appendRawWatchLine(kNodes, rawAdded(server, "no-newline", "", ""));
  REQUIRE(waitUntil([&] { return inf.get("no-newline") != nullptr; }));
  CHECK(inf.stats().lists == 1);
}

TEST_CASE("a malformed watch event relists; the events around it are not lost") {
  Watching w(2);
  auto& server = w.server;
  auto& model = w.model;
  auto& inf = w.inf;
  server.upsert(kNodes, "n0", nodeJson("n0", "before"));
  server.appendRawWatchLine(kNodes,
                            R"({"type":"MODIFIED","object":{"metadata":{"name":"n1"]}})" "\n");
  server.upsert(kNodes, "n1", nodeJson("n1", "after"));
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(inf.get("n0")->label("l") == "before");
  CHECK(inf.get("n1")->label("l") == "after");
  CHECK(model.errors().empty());
  CHECK(inf.stats().lists == 2);
}

TEST_CASE("a list that stalls times out and is retried, so the cache still syncs") {
  FakeApiServer server;
  seedNodes(server, 3);
  std::atomic<int> lists{0};
  // The first list request is answered only after 3 s (a stalled connection).
  server.setHook([&](const testing::HttpRequest& req, testing::HttpReply*) {
    if (req.method == "GET" && req.path == kNodes && req.query.count("watch") == 0 &&
        lists.fetch_add(1) == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
    }
    return false;
  });
  auto client = makeClient(server.url());
  InformerOptions o = fastOptions();
  o.list_timeout = std::chrono::milliseconds(300);
  Model model;
  NodeInformer inf(client.get(), o);
  startSynced(inf, model);
  CHECK(inf.size() == 3);
  // The stalled request was given up on and a second one made the sync.
  CHECK(lists.load() >= 2);
  inf.stop();
  server.setHook(nullptr);
}

TEST_CASE("dropped watches resume from the last version without loss or repeats") {
  FakeApiServer server;
  server.upsert(kNodes, "a", nodeJson("a"));
  auto client = makeClient(server.url());
  Model model;
  NodeInformer inf(client.get(), fastOptions());
  startSynced(inf, model);
  for (int round = 0; round < 6; ++round) {
    REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
    server.upsert(kNodes, "a", nodeJson("a", fmt::format("r{}", round)));
    server.upsert(kNodes, fmt::format("b{}", round), nodeJson(fmt::format("b{}", round)));
    REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
    server.dropWatches(/*abrupt=*/round % 2 == 1);
    // Changes while no watch is open are delivered by the next one.
    server.upsert(kNodes, fmt::format("c{}", round), nodeJson(fmt::format("c{}", round)));
  }
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(model.errors().empty());
  CHECK(inf.stats().lists == 1);
  CHECK(inf.stats().watches >= 7);
}

TEST_CASE("a 410 relists and delivers only the differences") {
  FakeApiServer server;
  for (const char* n : {"keep", "change", "remove"}) {
    server.upsert(kNodes, n, nodeJson(n));
  }
  auto client = makeClient(server.url());
  Model model;
  NodeInformer inf(client.get(), fastOptions());
  startSynced(inf, model);
  REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
  // While the server is away, things change and history is forgotten: the resumed watch
  // gets 410.
  server.stop();
  server.upsert(kNodes, "change", nodeJson("change", "v2"));
  server.remove(kNodes, "remove");
  server.upsert(kNodes, "new", nodeJson("new"));
  server.compact();
  server.restart();
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(model.errors().empty());
  CHECK(inf.stats().lists >= 2);
  CHECK(model.adds == 4);
  CHECK(model.updates == 1);
  CHECK(model.deletes == 1);
  CHECK(model.unknown_deletes == 1);
}

TEST_CASE("a watch answered with an ERROR 410 event relists") {
  FakeApiServer server;
  server.upsert(kNodes, "a", nodeJson("a"));
  auto client = makeClient(server.url());
  Model model;
  NodeInformer inf(client.get(), fastOptions());
  inf.addEventHandler(model.handlers());
  server.expireNextWatches(2);
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
  REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
  CHECK(inf.stats().relists_after_expired == 2);
  CHECK(inf.stats().lists == 3);
  server.upsert(kNodes, "b", nodeJson("b"));
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(model.errors().empty());
}

TEST_CASE("429 and 500 on the watch and the list are survived") {
  FakeApiServer server;
  server.upsert(kNodes, "a", nodeJson("a"));
  auto client = makeClient(server.url());
  Model model;
  NodeInformer inf(client.get(), fastOptions());
  inf.addEventHandler(model.handlers());
  server.failNext("/api/v1/nodes?limit", 2, 500);
  server.failNext("/api/v1/nodes?allowWatchBookmarks", 3, 429);
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
  REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
  server.upsert(kNodes, "b", nodeJson("b"));
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(inf.stats().lists == 1);  // 429s on the watch do not force a relist
  CHECK(model.errors().empty());
}

TEST_CASE("an expired continue token falls back to one unpaged list") {
  FakeApiServer server;
  seedNodes(server, 6);
  auto client = makeClient(server.url());
  InformerOptions o = fastOptions();
  o.page_size = 2;
  NodeInformer inf(client.get(), o);
  server.expireNextContinues(1);
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
  CHECK(inf.size() == 6);
  auto reqs = server.requests();
  CHECK(reqs[2] == "GET /api/v1/nodes?resourceVersion=0");
}

TEST_CASE("bookmarks move the resume version forward") {
  FakeApiServer server;
  server.upsert(kNodes, "a", nodeJson("a"));
  server.upsert("/api/v1/other", "x", nodeJson("x"));  // bumps the global version
  auto client = makeClient(server.url());
  NodeInformer inf(client.get(), fastOptions());
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
  REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
  server.upsert("/api/v1/other", "y", nodeJson("y"));
  server.bookmark();
  REQUIRE(
      waitUntil([&] { return inf.lastSyncResourceVersion() == std::to_string(server.currentRv()); }));
}

TEST_CASE("a server restart with changes while it was down converges") {
  FakeApiServer server;
  server.upsert(kNodes, "a", nodeJson("a"));
  auto client = makeClient(server.url());
  Model model;
  NodeInformer inf(client.get(), fastOptions());
  startSynced(inf, model);
  REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
  server.stop();
  server.upsert(kNodes, "b", nodeJson("b"));
  server.remove(kNodes, "a");
  server.restart();
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(model.errors().empty());
}

TEST_CASE("watches that time out are reopened from the last version") {
  FakeApiServer server;
  server.upsert(kNodes, "a", nodeJson("a"));
  auto client = makeClient(server.url());
  InformerOptions o = fastOptions();
  o.min_watch_timeout = std::chrono::seconds(1);
  Model model;
  NodeInformer inf(client.get(), o);
  startSynced(inf, model);
  int i = 0;
  REQUIRE(waitUntil([&] {
    std::string name = fmt::format("n{}", i++ % 7);
    server.upsert(kNodes, name, nodeJson(name));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return inf.stats().watches >= 3;
  }));
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(model.errors().empty());
  CHECK(inf.stats().lists == 1);
  for (const auto& r : server.requests()) {
    if (r.find("watch=true") != std::string::npos) {
      bool one = r.find("timeoutSeconds=1&") != std::string::npos;
      bool two = r.find("timeoutSeconds=2&") != std::string::npos;
      CHECK((one || two));
    }
  }
}

TEST_CASE("soak: random changes and faults; every change is seen exactly once") {
  FakeApiServer server;
  std::mt19937 rng(12345);
  seedNodes(server, 30);
  auto client = makeClient(server.url());
  InformerOptions o = fastOptions();
  o.page_size = 7;
  Model model;
  NodeInformer inf(client.get(), o);
  startSynced(inf, model);
  for (int step = 0; step < 400; ++step) {
    int what = static_cast<int>(rng() % 100);
    std::string name = fmt::format("n{}", rng() % 40);
    if (what < 50) {
      server.upsert(kNodes, name, nodeJson(name, std::to_string(step)));
    } else if (what < 70) {
      server.remove(kNodes, name);
    } else if (what < 76) {
      server.dropWatches(what % 2 == 0);
    } else if (what < 80) {
      server.compact();
      server.dropWatches(true);
    } else if (what < 83) {
      server.expireNextWatches(1);
      server.dropWatches(false);
    } else if (what < 86) {
      server.failNext("/api/v1/nodes?allowWatchBookmarks", 1, 429, -1);
      server.dropWatches(false);
    } else if (what < 88) {
      server.failNext("/api/v1/nodes?", 1, 500, -1);
      server.dropWatches(true);
    } else if (what < 90) {
      server.bookmark();
    }
    // Pacing only (correctness never depends on it): lets watches deliver some changes.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (what >= 70 && what < 90 && rng() % 2 == 0) {
      // Let the informer get back to watching, so resumption (not only relisting) is hit.
      REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
    }
    if (step % 50 == 49) {
      bool ok = waitUntil([&] { return converged(server, inf, model); });
      if (!ok) {
        converged(server, inf, model, true);
        for (const auto& r : server.requests())
          MESSAGE(r);
      }
      REQUIRE(ok);
    }
  }
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  auto errors = model.errors();
  for (const auto& e : errors) {
    MESSAGE(e);
  }
  CHECK(errors.empty());
  MESSAGE("soak: lists " << inf.stats().lists << ", watches " << inf.stats().watches << ", events "
                         << inf.stats().events);
}

TEST_CASE("resync re-delivers cached objects as updates") {
  FakeApiServer server;
  server.upsert(kNodes, "a", nodeJson("a"));
  auto client = makeClient(server.url());
  Model model;
  NodeInformer inf(client.get(), fastOptions());
  inf.addEventHandler(model.handlers(), std::chrono::milliseconds(100));
  inf.start();
  REQUIRE(waitUntil([&] { return model.resyncs >= 2; }));
  CHECK(model.errors().empty());
}

TEST_CASE("a handler added late first receives the cached objects") {
  FakeApiServer server;
  server.upsert(kNodes, "a", nodeJson("a"));
  server.upsert(kNodes, "b", nodeJson("b"));
  auto client = makeClient(server.url());
  Model model;  // outlives the informer; its handler is added after the sync
  NodeInformer inf(client.get(), fastOptions());
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
  inf.addEventHandler(model.handlers());
  CHECK(model.adds == 2);
  server.upsert(kNodes, "c", nodeJson("c"));
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
}

TEST_CASE("waitForSync returns false when stopped before syncing") {
  FakeApiServer server;
  server.failNext("/api/v1/nodes", 1000, 500);
  auto client = makeClient(server.url());
  NodeInformer inf(client.get(), fastOptions());
  inf.start();
  std::stop_source stop;
  std::thread t([&] {
    waitUntil([&] { return server.requests().size() >= 2; });
    stop.request_stop();
  });
  CHECK_FALSE(waitForCacheSync(stop.get_token(), {&inf}));
  t.join();
  inf.stop();
  CHECK_FALSE(inf.hasSynced());
}

TEST_CASE("a service informer keys objects by namespace/name") {
  FakeApiServer server;
  server.upsert("/api/v1/services", "ns1/web",
                R"({"metadata":{"name":"web","namespace":"ns1"},"spec":{"type":"LoadBalancer"}})");
  auto client = makeClient(server.url());
  ServiceInformer inf(client.get(), fastOptions());
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
  auto svc = inf.get("ns1/web");
  REQUIRE(svc);
  CHECK(svc->type == "LoadBalancer");
  CHECK(svc->raw_json.find("\"resourceVersion\"") != std::string_view::npos);
}

TEST_CASE("a detached informer is fed by injectForTest") {
  Model model;
  NodeInformer inf(nullptr);
  inf.addEventHandler(model.handlers());
  inf.start();
  CHECK(inf.hasSynced());
  auto n1 = decodeNode(R"({"metadata":{"name":"n1","resourceVersion":"1"}})");
  auto n1b = decodeNode(R"({"metadata":{"name":"n1","resourceVersion":"2"}})");
  inf.injectForTest("ADDED", *n1);
  inf.injectForTest("MODIFIED", *n1b);
  CHECK(inf.get("n1")->resourceVersion() == "2");
  inf.injectForTest("DELETED", *n1b);
  CHECK(inf.size() == 0);
  CHECK(model.adds == 1);
  CHECK(model.updates == 1);
  CHECK(model.deletes == 1);
}

TEST_CASE("the cache's size follows adds, updates, deletes and relists, in bytes and on /metrics") {
  metrics::Registry registry;
  InformerOptions options;
  options.metrics = &registry;
  NodeInformer inf(nullptr, options);
  inf.start();
  auto bytes = [&] { return registry.valueForTest("ccm_informer_cached_bytes", {"nodes"}); };
  auto objects = [&] { return registry.valueForTest("ccm_informer_cached_objects", {"nodes"}); };
  CHECK(inf.cachedBytes() == 0);
  auto small = *decodeNode(R"({"metadata":{"name":"n1","resourceVersion":"1"}})");
  auto big = *decodeNode(R"({"metadata":{"name":"n1","resourceVersion":"2","labels":{"a":"b"},)"
                         R"("annotations":{"note":")" +
                         std::string(4000, 'x') + R"("}}})");
  auto other = *decodeNode(R"({"metadata":{"name":"n2","resourceVersion":"3"}})");
  inf.injectForTest("ADDED", small);
  size_t one = inf.cachedBytes();
  CHECK(one >= sizeof(Node) + small->arenaBytes());
  CHECK(bytes() == static_cast<double>(one));
  CHECK(objects() == 1);
  // An update replaces the old object's bytes with the new one's (the 4,000-byte annotation
  // is the Node's own; nothing of the old version stays counted).
  inf.injectForTest("MODIFIED", big);
  size_t updated = inf.cachedBytes();
  CHECK(updated - one == big->arenaBytes() - small->arenaBytes());
  CHECK(updated > 4000);
  inf.injectForTest("ADDED", other);
  CHECK(objects() == 2);
  size_t with_other = inf.cachedBytes();
  inf.injectForTest("DELETED", big);
  CHECK(inf.cachedBytes() == with_other - updated);
  CHECK(objects() == 1);
  CHECK(bytes() == static_cast<double>(inf.cachedBytes()));
  CHECK(inf.cachedBytes() < 4000);
  inf.injectForTest("DELETED", other);
  CHECK(inf.cachedBytes() == 0);
  CHECK(bytes() == 0);
  CHECK(objects() == 0);
}

TEST_CASE("a relist that drops objects takes their bytes off the cache's size") {
  FakeApiServer server;
  for (const char* n : {"keep", "remove"}) {
    server.upsert(kNodes, n, nodeJson(n));
  }
  auto client = makeClient(server.url());
  Model model;
  NodeInformer inf(client.get(), fastOptions());
  startSynced(inf, model);
  REQUIRE(waitUntil([&] { return server.openWatches() == 1; }));
  size_t two = inf.cachedBytes();
  size_t keep_bytes = sizeof(Node) + inf.get("keep")->arenaBytes() + 2 * sizeof(void*);
  CHECK(two == keep_bytes + sizeof(Node) + inf.get("remove")->arenaBytes() + 2 * sizeof(void*));
  server.stop();
  server.remove(kNodes, "remove");
  server.compact();
  server.restart();
  REQUIRE(waitUntil([&] { return converged(server, inf, model); }));
  CHECK(model.unknown_deletes == 1);
  CHECK(inf.cachedBytes() == keep_bytes);
}

}  // namespace ccm::kube
