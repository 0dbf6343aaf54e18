// The client over HTTP/2 against kubesim (run by run_with_kubesim.py), which offers h2 by ALPN
// as kube-apiserver does: libcurl's lists and watches negotiate h2 (proved by kubesim's
// per-protocol request counters, not assumed), the node informer survives a GOAWAY and stream
// resets in the middle of a watch by watching again from its last resourceVersion (no relist)
// and misses no change, and the pipelined writer (HTTP/1.1 only, ALPN http/1.1) still gets
// HTTP/1.1 from a server that prefers h2.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <rapidjson/document.h>

#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "host/kube/cache/informer.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "test/support/kube_test_util.hpp"
#include "test/support/kubesim_admin.hpp"
#include "test/support/test_files.hpp"

namespace ccm::kube {
namespace {

using namespace std::chrono_literals;
using ccm::testing::kubesimAdminCall;
using ccm::testing::kubesimAdminClient;
using testing::waitUntil;

// kubesim's /admin/status.
struct ServerStatus {
  std::map<std::string, uint64_t> http2;  // requests over HTTP/2 by verb
  std::map<std::string, uint64_t> http1;
  int64_t watch_streams_open = 0;
  uint64_t goaways = 0;
  uint64_t resets = 0;
};

ServerStatus serverStatus(KubeClient& c) {
  rapidjson::Document d;
  std::string body = kubesimAdminCall(c, Verb::Get, "/admin/status");
  d.Parse(body.c_str());
  REQUIRE(d.IsObject());
  ServerStatus s;
  for (const char* verb : {"get", "list", "watch", "create", "update", "patch", "delete"}) {
    for (auto [protocol, out] : {std::pair{"HTTP/2", &s.http2}, std::pair{"HTTP/1.1", &s.http1}}) {
      const auto& counts = d["requests"][protocol];
      auto it = counts.FindMember(verb);
      if (it != counts.MemberEnd()) {
        (*out)[verb] = it->value.GetUint64();
      }
    }
  }
  s.watch_streams_open = d["transport"]["http2WatchStreamsOpen"].GetInt64();
  s.goaways = d["transport"]["goawaysSent"].GetUint64();
  s.resets = d["transport"]["streamsReset"].GetUint64();
  return s;
}

uint64_t count(const std::map<std::string, uint64_t>& m, const std::string& verb) {
  auto it = m.find(verb);
  return it == m.end() ? 0 : it->second;
}

// name -> resourceVersion, as the server has them.
std::map<std::string, std::string> serverNodes(KubeClient& c) {
  auto r = c.get(ResourcePath{"v1", "nodes", "", "", ""});
  REQUIRE_MESSAGE(r.ok(), r.status().toString());
  rapidjson::Document d;
  d.Parse(r->c_str());
  std::map<std::string, std::string> out;
  for (const auto& item : d["items"].GetArray()) {
    out[item["metadata"]["name"].GetString()] = item["metadata"]["resourceVersion"].GetString();
  }
  return out;
}

// What the handlers saw: every node's latest resourceVersion and round label, and any
// event out of order.
struct Seen {
  std::mutex mu;
  std::map<std::string, std::string> rv;
  std::map<std::string, std::string> round;
  std::vector<std::string> errors;

  void record(const std::shared_ptr<const Node>& n) {
    std::lock_guard lock(mu);
    std::string name(n->name());
    std::string v(n->resourceVersion());
    auto it = rv.find(name);
    if (it != rv.end() && std::stoll(v) < std::stoll(it->second)) {
      errors.push_back(fmt::format("{} went back from {} to {}", name, it->second, v));
    }
    rv[name] = v;
    if (auto label = n->label("ccm-test/round")) {
      round[name] = std::string(*label);
    }
  }
  EventHandlers<Node> handlers() {
    EventHandlers<Node> h;
    h.on_add = [this](const auto& n) { record(n); };
    h.on_update = [this](const auto&, const auto& n) { record(n); };
    h.on_delete = [this](const auto& n, bool) {
      std::lock_guard lock(mu);
      rv.erase(std::string(n->name()));
    };
    return h;
  }
  std::map<std::string, std::string> rvs() {
    std::lock_guard lock(mu);
    return rv;
  }
  std::string roundOf(const std::string& name) {
    std::lock_guard lock(mu);
    auto it = round.find(name);
    return it == round.end() ? std::string() : it->second;
  }
};

// Labels the first `n` nodes with round `r`; returns their names.
std::vector<std::string> touch(KubeClient& c, int r, size_t n = 8) {
  std::vector<std::string> names;
  for (const auto& [name, rv] : serverNodes(c)) {
    if (names.size() >= n) {
      break;
    }
    auto res = c.patch(ResourcePath{"v1", "nodes", "", name, ""}, PatchType::Strategic,
                       NodePatch().setLabel("ccm-test/round", std::to_string(r)).build());
    REQUIRE_MESSAGE(res.ok(), res.status().toString());
    names.push_back(name);
  }
  return names;
}

}  // namespace

TEST_CASE("lists and watches go over HTTP/2; the informer survives GOAWAY and stream resets") {
  auto adm = kubesimAdminClient("kubesim-http2-test");
  auto client = kubesimAdminClient("kubesim-http2-test");
  ServerStatus before = serverStatus(*adm);

  InformerOptions o;
  o.initial_backoff = 50ms;
  o.max_backoff = 500ms;
  Seen seen;  // declared first: it must outlive the informer thread that calls it
  NodeInformer inf(client.get(), o);
  inf.addEventHandler(seen.handlers());
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
  REQUIRE(inf.size() >= 20);

  // Proved on the server: the pages and the watch arrived as HTTP/2 streams.
  REQUIRE(waitUntil([&] { return serverStatus(*adm).watch_streams_open >= 1; }, 30s));
  ServerStatus synced = serverStatus(*adm);
  CHECK(count(synced.http2, "list") >= count(before.http2, "list") + 1);
  CHECK(count(synced.http2, "watch") >= count(before.http2, "watch") + 1);
  CHECK(count(synced.http1, "list") == count(before.http1, "list"));
  CHECK(count(synced.http1, "watch") == count(before.http1, "watch"));

  int r = 0;
  auto caughtUp = [&](const std::vector<std::string>& names, int round) {
    for (const auto& n : names) {
      if (seen.roundOf(n) != std::to_string(round)) {
        return false;
      }
    }
    return seen.rvs() == serverNodes(*adm);
  };
  // Let the first watch deliver before it is disturbed (a watch that ends before delivering
  // anything counts as failed and is followed by a relist rather than a resume).
  auto names = touch(*adm, ++r);
  REQUIRE(waitUntil([&] { return caughtUp(names, r); }, 30s));
  auto stats0 = inf.stats();

  SUBCASE("RST_STREAM after a few events of a watch") {
    kubesimAdminCall(*adm, Verb::Post, "/admin/faults",
              R"({"verb":"watch","path":"/api/v1/nodes","action":"reset","afterEvents":3,)"
              R"("count":2})");
    kubesimAdminCall(*adm, Verb::Post, "/admin/http2/reset");  // the running watch: reset now
    for (int i = 0; i < 4; ++i) {
      names = touch(*adm, ++r);
    }
    REQUIRE(waitUntil([&] { return serverStatus(*adm).resets >= before.resets + 3; }, 30s));
  }
  SUBCASE("GOAWAY ends the watch and the connection") {
    kubesimAdminCall(*adm, Verb::Post, "/admin/http2/goaway", R"({"endStreams":true})");
    names = touch(*adm, ++r);
    kubesimAdminCall(*adm, Verb::Post, "/admin/faults",
              R"({"verb":"get","path":"/api/v1/nodes/*","action":"goaway","count":3})");
    for (int i = 0; i < 3; ++i) {
      CHECK(adm->get(ResourcePath{"v1", "nodes", "", names.at(i), ""}).ok());
      names = touch(*adm, ++r);
    }
    kubesimAdminCall(*adm, Verb::Post, "/admin/http2/goaway", R"({"endStreams":true})");
    names = touch(*adm, ++r);
    CHECK(serverStatus(*adm).goaways >= before.goaways + 2);
  }

  REQUIRE(waitUntil([&] { return caughtUp(names, r); }, 60s));
  REQUIRE(waitUntil([&] { return serverStatus(*adm).watch_streams_open >= 1; }, 30s));
  kubesimAdminCall(*adm, Verb::Delete, "/admin/faults");
  auto stats1 = inf.stats();
  // Watched again from where it was, without listing again.
  CHECK(stats1.watches > stats0.watches);
  CHECK(stats1.lists == stats0.lists);
  CHECK(stats1.relists_after_expired == stats0.relists_after_expired);
  std::lock_guard lock(seen.mu);
  for (const auto& e : seen.errors) {
    MESSAGE(e);
  }
  CHECK(seen.errors.empty());
}

TEST_CASE("the pipelined writer speaks HTTP/1.1 to a server that prefers h2") {
  auto adm = kubesimAdminClient("kubesim-http2-test");
  ServerStatus before = serverStatus(*adm);
  std::vector<Write> writes;
  for (int i = 0; i < 4; ++i) {
    Write w;
    w.path = ResourcePath{"v1", "configmaps", "default", "", ""};
    w.verb = Write::Verb::Create;
    w.body = fmt::format(R"({{"metadata":{{"name":"h2-pipelined-{}"}},"data":{{"k":"v"}}}})", i);
    writes.push_back(w);
  }
  CallOptions want;
  want.want_response = true;
  auto results = adm->writeBatch(writes, want, std::chrono::microseconds(500));
  REQUIRE(results.size() == 4);
  for (size_t i = 0; i < results.size(); ++i) {
    CAPTURE(i);
    REQUIRE_MESSAGE(results[i].ok(), results[i].status().toString());
    CHECK(results[i]->find(fmt::format(R"("name":"h2-pipelined-{}")", i)) != std::string::npos);
  }
  ServerStatus after = serverStatus(*adm);
  CHECK(count(after.http1, "create") == count(before.http1, "create") + 4);
  CHECK(count(after.http2, "create") == count(before.http2, "create"));
}

}  // namespace ccm::kube
