// The client against kubesim (run by run_with_kubesim.py): TLS with token and client
// certificate auth, TLS verification and tls-server-name, in-cluster configuration with a
// rotating service-account token, informers converging under kubesim's fault injection
// (watch drops, 410, 409, 429, 500, dropped connections, server restart), the controllers'
// writes against the real patch semantics, and events.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "host/kube/api/retry.hpp"
#include "host/kube/cache/informer.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "host/kube/write/event_recorder.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "host/log/log.hpp"
#include "host/runtime/metrics.hpp"
#include "test/support/kube_test_util.hpp"
#include "test/support/kubesim_admin.hpp"
#include "test/support/test_files.hpp"

namespace ccm::kube {
namespace {

using ccm::testing::kubesimAdminCall;
using testing::waitUntil;
using namespace std::chrono_literals;

std::string env(const char* name) { return ccm::testing::requiredEnv(name, "run_with_kubesim.py"); }

using ccm::testing::readFile;

std::unique_ptr<KubeClient> clientFrom(const std::string& kubeconfig,
                                       metrics::Registry* r = nullptr) {
  ClientOptions o;
  o.kubeconfig = kubeconfig;
  o.qps = -1;  // unthrottled
  o.user_agent = defaultUserAgent("kubesim-test", "0.1.0", "");
  auto c = KubeClient::create(o, Clock::real(), r);
  REQUIRE_MESSAGE(c.ok(), c.status().toString());
  return std::move(c).value();
}

std::unique_ptr<KubeClient> admin() {
  return clientFrom(env("KUBESIM_KUBECONFIG"));
}

std::unique_ptr<KubeClient> clientWith(RestConfig config) {
  ClientOptions o;
  o.qps = -1;  // unthrottled
  auto rest = RestClient::create(config, o);
  REQUIRE_MESSAGE(rest.ok(), rest.status().toString());
  return std::make_unique<KubeClient>(std::move(rest).value());
}

std::map<std::string, int64_t> serverNodes(KubeClient& c) {
  // The injected faults hit this test's own reads too: retry them.
  auto r = c.get(ResourcePath{"v1", "nodes", "", "", ""});
  for (int i = 0; i < 100 && !r.ok(); ++i) {
    std::this_thread::sleep_for(20ms);
    r = c.get(ResourcePath{"v1", "nodes", "", "", ""});
  }
  REQUIRE_MESSAGE(r.ok(), r.status().toString());
  rapidjson::Document d;
  d.Parse(r->c_str());
  std::map<std::string, int64_t> out;
  for (const auto& item : d["items"].GetArray()) {
    out[item["metadata"]["name"].GetString()] =
        std::stoll(item["metadata"]["resourceVersion"].GetString());
  }
  return out;
}

std::map<std::string, int64_t> cached(const NodeInformer& inf) {
  std::map<std::string, int64_t> out;
  for (const auto& n : inf.list()) {
    out[std::string(n->name())] = std::stoll(std::string(n->resourceVersion()));
  }
  return out;
}

// Checks the handler stream: adds for new keys, updates with newer versions, deletes of
// known keys, and reproduces the cache.
struct Model {
  std::mutex mu;
  std::map<std::string, int64_t> state;
  std::vector<std::string> errors;
  EventHandlers<Node> handlers() {
    EventHandlers<Node> h;
    h.on_add = [this](const auto& n) {
      std::lock_guard lock(mu);
      if (!state.emplace(std::string(n->name()), std::stoll(std::string(n->resourceVersion())))
               .second)
        errors.push_back(fmt::format("add of known {}", n->name()));
    };
    h.on_update = [this](const auto& o, const auto& n) {
      std::lock_guard lock(mu);
      auto it = state.find(std::string(n->name()));
      int64_t rv = std::stoll(std::string(n->resourceVersion()));
      if (it == state.end()) {
        errors.push_back(fmt::format("update of unknown {}", n->name()));
      } else if (o != n && rv <= it->second) {
        errors.push_back(fmt::format("stale/repeated update of {}", n->name()));
      } else {
        it->second = rv;
      }
    };
    h.on_delete = [this](const auto& n, bool) {
      std::lock_guard lock(mu);
      if (state.erase(std::string(n->name())) == 0)
        errors.push_back(fmt::format("delete of unknown {}", n->name()));
    };
    return h;
  }
  std::map<std::string, int64_t> snapshot() {
    std::lock_guard lock(mu);
    return state;
  }
};

bool converged(KubeClient& c, const NodeInformer& inf, Model& model) {
  auto want = serverNodes(c);
  return cached(inf) == want && model.snapshot() == want;
}

void touchNodes(KubeClient& c, int round, int count = 10) {
  auto nodes = serverNodes(c);
  int i = 0;
  for (const auto& [name, rv] : nodes) {
    if (i++ >= count)
      break;
    auto r = c.patch(nodePath(name), PatchType::Strategic,
                     NodePatch().setLabel("ccm-test/round", std::to_string(round)).build());
    CHECK_MESSAGE(r.ok(), r.status().toString());
  }
}

}  // namespace

TEST_CASE("TLS with a bearer token and with a client certificate") {
  auto token = clientFrom(env("KUBESIM_KUBECONFIG"));
  auto cert = clientFrom(env("KUBESIM_CERT_KUBECONFIG"));
  CHECK(token->get(ResourcePath{"v1", "nodes", "", "", ""}).ok());
  CHECK(cert->get(ResourcePath{"v1", "nodes", "", "", ""}).ok());
  CHECK(token->rest().config().server.rfind("https://", 0) == 0);
}

TEST_CASE("TLS verification is on; tls-server-name and insecure-skip-tls-verify are honoured") {
  std::string dir = env("KUBESIM_CERT_DIR");
  RestConfig base;
  base.server = env("KUBESIM_URL");
  base.token = readFile(dir + "/admin.token");
  while (!base.token.empty() && (base.token.back() == '\n'))
    base.token.pop_back();

  RestConfig no_ca = base;  // the system trust store does not know kubesim's CA
  auto r = clientWith(no_ca)->get(nodePath("x"));
  CHECK(r.status().isTransport());

  RestConfig with_ca = base;
  with_ca.ca_pem = readFile(dir + "/ca.crt");
  CHECK(clientWith(with_ca)->get(ResourcePath{"v1", "nodes", "", "", ""}).ok());

  RestConfig sni = with_ca;
  sni.tls_server_name = "kubernetes.default.svc";  // a name in the server certificate
  CHECK(clientWith(sni)->get(ResourcePath{"v1", "nodes", "", "", ""}).ok());
  RestConfig wrong = with_ca;
  wrong.tls_server_name = "not-the-server.example";
  CHECK(clientWith(wrong)->get(nodePath("x")).status().isTransport());

  RestConfig insecure = base;
  insecure.insecure_skip_tls_verify = true;
  CHECK(clientWith(insecure)->get(ResourcePath{"v1", "nodes", "", "", ""}).ok());

  RestConfig bad_token = with_ca;
  bad_token.token = "not-a-valid-token";
  CHECK(clientWith(bad_token)->get(nodePath("x")).status().isUnauthorized());
}

TEST_CASE("in-cluster configuration with a rotating service-account token") {
  auto adm = admin();
  std::string dir = env("KUBESIM_DIR") + "/sa";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(env("KUBESIM_CERT_DIR") + "/ca.crt", dir + "/ca.crt",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir + "/namespace") << "kube-system";
  // A short-lived token for a service account allowed to do everything.
  kubesimAdminCall(*adm, Verb::Post, "/admin/credentials",
            R"({"serviceAccount":"kube-system/ccm-test","tokenFile":")" + dir +
                R"(/token","expirationSeconds":4})");
  auto crb = adm->create(
      ResourcePath{"rbac.authorization.k8s.io/v1", "clusterrolebindings", "", "", ""},
      R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"ccm-test"},)"
      R"("roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},)"
      R"("subjects":[{"kind":"ServiceAccount","name":"ccm-test","namespace":"kube-system"}]})");
  CHECK((crb.ok() || crb.status().isAlreadyExists()));
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", env("KUBESIM_PORT").c_str(), 1);
  ClientOptions o;
  o.service_account_dir = dir;
  auto c = KubeClient::create(o);
  REQUIRE_MESSAGE(c.ok(), c.status().toString());
  CHECK((*c)->config().namespace_ == "kube-system");
  REQUIRE(waitUntil([&] { return (*c)->get(nodePath("none")).status().isNotFound(); }));
  std::string first = readFile(dir + "/token");
  // The kubelet would rewrite the file before expiry: issue a fresh token into it.
  kubesimAdminCall(*adm, Verb::Post, "/admin/credentials",
            R"({"serviceAccount":"kube-system/ccm-test","tokenFile":")" + dir +
                R"(/token","expirationSeconds":3600})");
  CHECK(readFile(dir + "/token") != first);
  // Wait until the first token is refused by the server, then the client must still work.
  RestConfig old;
  old.server = env("KUBESIM_URL");
  old.ca_pem = readFile(dir + "/ca.crt");
  old.token = first;
  auto old_client = clientWith(old);
  REQUIRE(waitUntil([&] { return old_client->get(nodePath("none")).status().isUnauthorized(); }));
  CHECK((*c)->get(nodePath("none")).status().isNotFound());
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST_CASE("the node informer converges to the server after every kind of fault") {
  auto adm = admin();
  metrics::Registry registry;
  auto c = clientFrom(env("KUBESIM_CERT_KUBECONFIG"), &registry);
  InformerOptions o;
  o.initial_backoff = 50ms;
  o.max_backoff = 500ms;
  o.page_size = 7;  // several pages
  Model model;  // declared first: it must outlive the informer thread that calls it
  NodeInformer inf(c.get(), o);
  inf.addEventHandler(model.handlers());
  inf.start();
  std::stop_source never;
  REQUIRE(inf.waitForSync(never.get_token()));
  CHECK(inf.size() >= 20);
  REQUIRE(waitUntil([&] { return converged(*adm, inf, model); }));
  int round = 0;

  SUBCASE("watch drops") {
    for (int i = 0; i < 5; ++i) {
      touchNodes(*adm, ++round);
      kubesimAdminCall(*adm, Verb::Post, "/admin/watches/close");
      touchNodes(*adm, ++round);
    }
  }
  SUBCASE("410 after compaction") {
    // Keep the informer from re-watching (429s make it back off and retry the same
    // version) while things change and history is compacted; then let it resume: 410.
    uint64_t before = inf.stats().relists_after_expired;
    // First let the current watch deliver something (a watch closed before delivering
    // anything within a second counts as failed and is followed by a relist, not a resume).
    touchNodes(*adm, ++round);
    REQUIRE(waitUntil([&] { return converged(*adm, inf, model); }));
    kubesimAdminCall(*adm, Verb::Post, "/admin/faults",
              R"({"verb":"watch","path":"/api/v1/nodes","status":429,"count":100000})");
    kubesimAdminCall(*adm, Verb::Post, "/admin/watches/close");
    touchNodes(*adm, ++round);
    kubesimAdminCall(*adm, Verb::Post, "/admin/compact");
    touchNodes(*adm, ++round);
    kubesimAdminCall(*adm, Verb::Delete, "/admin/faults");
    REQUIRE(waitUntil([&] { return inf.stats().relists_after_expired > before; }));
    touchNodes(*adm, ++round);
  }
  SUBCASE("429 and 500 on watch and list") {
    kubesimAdminCall(*adm, Verb::Post, "/admin/faults",
              R"({"verb":"watch","path":"/api/v1/nodes","status":429,"retryAfter":0,"count":3})");
    kubesimAdminCall(*adm, Verb::Post, "/admin/faults",
              R"({"verb":"watch","path":"/api/v1/nodes","status":429,"style":"apf","count":2})");
    kubesimAdminCall(*adm, Verb::Post, "/admin/faults",
              R"({"verb":"list","path":"/api/v1/nodes","status":500,"count":2})");
    kubesimAdminCall(*adm, Verb::Post, "/admin/watches/close");
    touchNodes(*adm, ++round);
    kubesimAdminCall(*adm, Verb::Post, "/admin/compact");
    touchNodes(*adm, ++round);
  }
  SUBCASE("dropped connections") {
    for (int i = 0; i < 3; ++i) {
      touchNodes(*adm, ++round);
      kubesimAdminCall(*adm, Verb::Post, "/admin/connections/close");
    }
    kubesimAdminCall(*adm, Verb::Post, "/admin/faults",
              R"({"verb":"watch","path":"/api/v1/nodes","action":"drop","count":2})");
    kubesimAdminCall(*adm, Verb::Post, "/admin/watches/close");
    touchNodes(*adm, ++round);
  }
  SUBCASE("server restart, with changes while it is down") {
    auto restarts = [&] {
      auto r = adm->rest().call(Request{Verb::Get, "/admin/status", "", kJson, true, {}});
      if (!r.ok())
        return int64_t{-1};
      rapidjson::Document d;
      d.Parse(r->body.c_str());
      return d["restarts"].GetInt64();
    };
    int64_t before = restarts();
    kubesimAdminCall(*adm, Verb::Post, "/admin/restart", R"({"keepState":true,"downMs":1500})");
    // The restart is asynchronous: wait until it has happened and the server is back.
    REQUIRE(waitUntil([&] { return restarts() > before; }, 60s));
    // Changes made as soon as it is back are seen too.
    REQUIRE(waitUntil([&] { return adm->get(nodePath("none")).status().isNotFound(); }, 60s));
    touchNodes(*adm, ++round);
    kubesimAdminCall(*adm, Verb::Post, "/admin/nodes", R"({"count":2})");
  }
  SUBCASE("deleted and added nodes") {
    auto nodes = serverNodes(*adm);
    kubesimAdminCall(*adm, Verb::Post, "/admin/watches/close");
    kubesimAdminCall(*adm, Verb::Delete, "/admin/nodes/" + nodes.begin()->first);
    kubesimAdminCall(*adm, Verb::Post, "/admin/compact");
    kubesimAdminCall(*adm, Verb::Post, "/admin/nodes", R"({"count":1})");
  }
  REQUIRE(waitUntil([&] { return converged(*adm, inf, model); }, 60s));
  kubesimAdminCall(*adm, Verb::Delete, "/admin/faults");
  std::lock_guard lock(model.mu);
  for (const auto& e : model.errors)
    MESSAGE(e);
  CHECK(model.errors.empty());
  CHECK(registry.valueForTest("rest_client_requests_total", {"200", c->rest().host(), "GET"}) > 0);
}

TEST_CASE("a service informer caches services with their JSON") {
  auto adm = admin();
  auto created = adm->create(
      servicePath("default"),
      R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"lb-inf"},"spec":{"type":"LoadBalancer","ports":[{"port":80,"targetPort":8080}],"selector":{"app":"x"}}})");
  REQUIRE_MESSAGE(created.ok(), created.status().toString());
  ServiceInformer inf(adm.get());
  inf.start();
  REQUIRE(waitUntil([&] { return inf.get("default/lb-inf") != nullptr; }));
  auto s = inf.get("default/lb-inf");
  CHECK(s->type == "LoadBalancer");
  REQUIRE(s->ports.size() == 1);
  CHECK(s->ports[0].node_port >= 30000);  // allocated by the server
  CHECK(s->ports[0].protocol == "TCP");   // defaulted by the server
  CHECK(s->raw_json.find("\"selector\":{\"app\":\"x\"}") != std::string_view::npos);
  ApiStatus removed = adm->remove(servicePath("default", "lb-inf"));
  CHECK_MESSAGE(removed.ok(), removed.toString());
  REQUIRE(waitUntil([&] { return inf.get("default/lb-inf") == nullptr; }));
}

TEST_CASE("node writes: preconditions, taints, addresses, conditions, CIDRs, delete") {
  auto adm = admin();
  kubesimAdminCall(*adm, Verb::Post, "/admin/nodes", R"({"names":["write-test"]})");
  auto get = [&] {
    auto r = adm->get(nodePath("write-test"));
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
    auto n = decodeNode(*r);
    REQUIRE(n.ok());
    return *n;
  };
  auto n = get();
  CHECK(n->hasTaint("node.cloudprovider.kubernetes.io/uninitialized"));
  // Initialisation in one write: labels, providerID, taints minus the uninitialized one, with
  // the version read as precondition.
  std::vector<TaintSpec> taints;
  for (const auto& t : taintSpecs(n->taints())) {
    if (t.key != "node.cloudprovider.kubernetes.io/uninitialized")
      taints.push_back(t);
  }
  taints.push_back({"example.com/extra", "v", "PreferNoSchedule", 0});
  auto ok = adm->patch(nodePath("write-test"), PatchType::Strategic,
                       NodePatch()
                           .resourceVersion(n->resourceVersion())
                           .setLabel("topology.kubernetes.io/zone", "zone-a")
                           .providerId("fake://write-test")
                           .taints(taints)
                           .build());
  REQUIRE_MESSAGE(ok.ok(), ok.status().toString());
  auto after = get();
  CHECK(after->providerId() == "fake://write-test");
  CHECK(after->label("topology.kubernetes.io/zone") == "zone-a");
  CHECK_FALSE(after->hasTaint("node.cloudprovider.kubernetes.io/uninitialized"));
  CHECK(after->hasTaint("example.com/extra", "PreferNoSchedule"));
  // The same precondition again is stale now: 409, and retryOnConflict recovers by re-reading.
  auto stale =
      adm->patch(nodePath("write-test"), PatchType::Strategic,
                 NodePatch().resourceVersion(n->resourceVersion()).setLabel("a", "b").build());
  CHECK(stale.status().isConflict());
  int attempts = 0;
  std::string rv = std::string(n->resourceVersion());
  ApiStatus retried = retryOnConflict(kUpdateBackoff, [&] {
    if (++attempts > 1)
      rv = std::string(get()->resourceVersion());
    auto r = adm->patch(nodePath("write-test"), PatchType::Strategic,
                        NodePatch().resourceVersion(rv).setLabel("a", "b").build());
    return r.ok() ? ApiStatus() : r.status();
  });
  CHECK(retried.ok());
  CHECK(attempts == 2);
  // Removing the last taint.
  CHECK(adm->patch(nodePath("write-test"), PatchType::Strategic,
                   NodePatch().resourceVersion(get()->resourceVersion()).taints({}).build())
            .ok());
  CHECK(get()->taints().empty());

  // Addresses: a full replacement even when types repeat.
  REQUIRE(adm->patch(nodeStatusPath("write-test"), PatchType::Strategic,
                     nodeAddressesPatch({{"InternalIP", "10.1.0.1"},
                                         {"InternalIP", "10.1.0.2"},
                                         {"Hostname", "write-test"}}))
              .ok());
  auto replaced = get();  // the node owns the storage its spans point into
  auto addrs = replaced->addresses();
  REQUIRE(addrs.size() == 3);
  CHECK(addrs[1].address == "10.1.0.2");
  REQUIRE(adm->patch(nodeStatusPath("write-test"), PatchType::Strategic,
                     nodeAddressesPatch({{"ExternalIP", "203.0.113.1"}}))
              .ok());
  REQUIRE(get()->addresses().size() == 1);
  // Conditional on a version: refused when stale, and the answer's version is the new one.
  std::string current(get()->resourceVersion());
  auto refused = adm->patch(nodeStatusPath("write-test"), PatchType::Strategic,
                            nodeAddressesPatch({{"InternalIP", "10.1.0.9"}}, "1"));
  CHECK(refused.status().isConflict());
  CHECK(get()->addresses()[0].address == "203.0.113.1");
  CallOptions want;
  want.want_response = true;
  auto accepted = adm->patch(nodeStatusPath("write-test"), PatchType::Strategic,
                             nodeAddressesPatch({{"InternalIP", "10.1.0.9"}}, current), want);
  REQUIRE(accepted.ok());
  auto produced = resourceVersionOf(*accepted);
  REQUIRE(produced.has_value());
  CHECK(*produced != current);
  CHECK(*produced == get()->resourceVersion());
  CHECK(get()->addresses()[0].address == "10.1.0.9");
  CHECK(accepted->find(R"("kind":"Node")") != std::string::npos);  // asked for in full
  // Asked for its metadata only, the answer is the node's PartialObjectMetadata: the version
  // is read from it alike, and the status (addresses, images, ...) is not sent.
  want.metadata_only = true;
  current = std::string(get()->resourceVersion());
  auto slim = adm->patch(nodeStatusPath("write-test"), PatchType::Strategic,
                         nodeAddressesPatch({{"InternalIP", "10.1.0.10"}}, current), want);
  REQUIRE(slim.ok());
  CHECK(slim->find(R"("kind":"PartialObjectMetadata")") != std::string::npos);
  CHECK(slim->find("10.1.0.10") == std::string::npos);
  // (no status member; managedFields may name the "status" subresource)
  CHECK(slim->find(R"("status":)") == std::string::npos);
  REQUIRE(resourceVersionOf(*slim).has_value());
  CHECK(*resourceVersionOf(*slim) == get()->resourceVersion());
  CHECK(get()->addresses()[0].address == "10.1.0.10");

  // Conditions merge by type: Ready stays.
  size_t before = get()->conditions().size();
  REQUIRE(
      adm->patch(nodeStatusPath("write-test"), PatchType::Strategic,
                 nodeConditionsPatch({{"NetworkUnavailable", "False", "RouteCreated",
                                       "RouteController created a route", 1784887200, 1784887200}}))
          .ok());
  auto withCond = get();
  CHECK(withCond->condition("Ready") != std::nullopt);
  REQUIRE(withCond->condition("NetworkUnavailable") != std::nullopt);
  CHECK(withCond->condition("NetworkUnavailable")->reason == "RouteCreated");
  CHECK(withCond->conditions().size() == before + 1);

  // Pod CIDRs.
  REQUIRE(adm->patch(nodePath("write-test"), PatchType::Strategic,
                     NodePatch().podCidrs("10.244.7.0/24", {"10.244.7.0/24"}).build())
              .ok());
  CHECK(get()->podCidr() == "10.244.7.0/24");

  // Delete with preconditions.
  auto last = get();
  CHECK(adm->remove(nodePath("write-test"), Preconditions{"wrong-uid", ""}).isConflict());
  CHECK(adm->remove(nodePath("write-test"),
                    Preconditions{std::string(last->uid()), std::string(last->resourceVersion())})
            .ok());
  CHECK(adm->get(nodePath("write-test")).status().isNotFound());
}

TEST_CASE("service writes: finalizers and load balancer status through the status subresource") {
  auto adm = admin();
  auto created = adm->create(
      servicePath("default"),
      R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"lb-write","finalizers":["example.com/keep"]},"spec":{"type":"LoadBalancer","ports":[{"port":443}]}})");
  REQUIRE_MESSAGE(created.ok(), created.status().toString());
  auto get = [&] {
    auto r = adm->get(servicePath("default", "lb-write"));
    REQUIRE(r.ok());
    return *decodeService(*r);
  };
  const std::string f = "service.kubernetes.io/load-balancer-cleanup";
  REQUIRE(adm->patch(serviceStatusPath("default", "lb-write"), PatchType::Strategic,
                     finalizerAddPatch(f))
              .ok());
  CHECK(get()->hasFinalizer(f));
  CHECK(get()->hasFinalizer("example.com/keep"));
  REQUIRE(adm->patch(serviceStatusPath("default", "lb-write"), PatchType::Strategic,
                     serviceLoadBalancerStatusPatch({{"203.0.113.7", "", "VIP", {}}}))
              .ok());
  auto s = get();
  REQUIRE(s->ingress.size() == 1);
  CHECK(s->ingress[0].ip == "203.0.113.7");
  CHECK(ingressEqual(s->ingress, {{"203.0.113.7", "", "VIP", {}}}));
  REQUIRE(adm->patch(serviceStatusPath("default", "lb-write"), PatchType::Strategic,
                     serviceLoadBalancerStatusPatch({}))
              .ok());
  CHECK(get()->ingress.empty());
  REQUIRE(adm->patch(serviceStatusPath("default", "lb-write"), PatchType::Strategic,
                     finalizerRemovePatch(f))
              .ok());
  CHECK_FALSE(get()->hasFinalizer(f));
  CHECK(get()->hasFinalizer("example.com/keep"));
  REQUIRE(adm->patch(servicePath("default", "lb-write"), PatchType::Merge,
                     R"({"metadata":{"finalizers":null}})")
              .ok());
  CHECK(adm->remove(servicePath("default", "lb-write")).ok());
}

TEST_CASE("a batch of writes is pipelined over TLS; each gets its own answer") {
  auto adm = admin();
  std::vector<Write> writes;
  for (int i = 0; i < 5; ++i) {
    std::string name = fmt::format("batch-event-{}", i);
    Write w;
    w.path = eventPath("default");
    w.body = fmt::format(
        R"({{"metadata":{{"name":"{}"}},"involvedObject":{{"kind":"Node","name":"batch-node"}},)"
        R"("reason":"R{}","message":"m","type":"Normal","count":1}})",
        name, i);
    writes.push_back(w);
    if (i == 2) {
      // A PATCH of an event that does not exist: its own 404, the rest unaffected.
      writes.push_back(Write{Write::Verb::Patch, eventPath("default", "batch-missing"),
                             R"({"count":2})", PatchType::Strategic});
    }
  }
  CallOptions want;
  want.want_response = true;
  auto results = adm->writeBatch(writes, want, std::chrono::microseconds(500));
  REQUIRE(results.size() == 6);
  for (size_t i = 0; i < results.size(); ++i) {
    CAPTURE(i);
    if (i == 3) {
      CHECK(results[i].status().isNotFound());
      continue;
    }
    REQUIRE(results[i].ok());
    int n = static_cast<int>(i < 3 ? i : i - 1);
    CHECK(results[i]->find(fmt::format(R"("name":"batch-event-{}")", n)) != std::string::npos);
  }
  for (int i = 0; i < 5; ++i) {
    CHECK(adm->get(eventPath("default", fmt::format("batch-event-{}", i))).ok());
  }
}

TEST_CASE("events are created, then counted up on repeats") {
  auto adm = admin();
  EventBroadcaster events(*adm, EventRecorderOptions{.host = "test-host"});
  events.start();
  auto rec = events.recorder("cloud-node-controller");
  ObjectReference ref{"Node", "", "event-node", "uid-e", "v1", "", ""};
  rec.event(ref, EventType::Normal, "Synced", "Node synced successfully");
  REQUIRE(waitUntil([&] { return events.stats().created == 1; }));
  rec.event(ref, EventType::Normal, "Synced", "Node synced successfully");
  REQUIRE(waitUntil([&] { return events.stats().patched == 1; }));
  Request req;
  req.path = "/api/v1/namespaces/default/events?fieldSelector=" +
             urlEscape("involvedObject.name=event-node");
  auto r = adm->rest().call(req);
  REQUIRE(r.ok());
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  REQUIRE(d["items"].Size() == 1);
  const auto& e = d["items"][0];
  CHECK(e["count"].GetInt() == 2);
  CHECK(std::string(e["reason"].GetString()) == "Synced");
  CHECK(std::string(e["source"]["component"].GetString()) == "cloud-node-controller");
  CHECK(std::string(e["involvedObject"]["kind"].GetString()) == "Node");
  events.shutdown();
}

TEST_CASE("a burst of events under server latency: every one written, the queue bounded") {
  // The real server took all 5,000 Synced events of a 5,000-node burst; ccm once dropped
  // two thirds of them when its queue filled. A queue much smaller than the burst and a slow
  // server: the producers are paced, nothing is dropped, and the queue never grows past its
  // bound.
  auto adm = admin();
  kubesimAdminCall(*adm, Verb::Post, "/admin/latency", R"({"ms":2,"jitterMs":2})");
  metrics::Registry registry;
  EventRecorderOptions o;
  o.host = "burst-host";
  o.queue_size = 100;
  o.metrics = &registry;
  EventBroadcaster events(*adm, o);
  events.start();
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 500;
  constexpr int kEvents = kProducers * kPerProducer;
  std::vector<std::thread> producers;
  for (int t = 0; t < kProducers; ++t) {
    producers.emplace_back([&events, t] {
      auto rec = events.recorder("cloud-node-controller");
      for (int i = 0; i < kPerProducer; ++i) {
        std::string node = fmt::format("burst-node-{}-{}", t, i);
        rec.event(ObjectReference{"Node", "", node, "uid-" + node, "v1", "", ""}, EventType::Normal,
                  "BurstSynced", "Node synced successfully");
      }
    });
  }
  for (auto& p : producers) {
    p.join();
  }
  bool all = waitUntil([&] { return events.stats().created == kEvents; }, 120s);
  kubesimAdminCall(*adm, Verb::Delete, "/admin/faults");
  REQUIRE(all);
  for (const char* reason : {"queue_full", "server_unavailable", "spam_filter", "rejected",
                             "retries_exhausted", "shutdown"}) {
    CAPTURE(reason);
    CHECK(registry.valueForTest("ccm_events_dropped_total", {reason}) == 0);
  }
  double peak = registry.valueForTest("ccm_events_queue_peak_length");
  CHECK(peak >= 1);
  CHECK(peak <= 100);
  CHECK(registry.valueForTest("ccm_events_queue_length") == 0);
  // Counted on the server, not from the sender's own figures.
  Request req;
  req.path = "/api/v1/namespaces/default/events?fieldSelector=" + urlEscape("reason=BurstSynced");
  auto r = adm->rest().call(req);
  REQUIRE(r.ok());
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  REQUIRE(d.IsObject());
  CHECK(d["items"].Size() == kEvents);
  events.shutdown();
}

}  // namespace ccm::kube
