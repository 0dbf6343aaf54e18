// Unit tests of the service controller: every behaviour of upstream's service controller tests
// (reference §7.4), driven by hand through the controller's queues over FakeKubeApi, detached
// informers and an in-memory provider, plus ccm's own guarantees (finalizer before the first
// Ensure, clean-up of Services deleted without the finalizer, one host update per Service and
// Node change, no updates on readiness flaps, retry-after, UNIMPLEMENTED providers).
#include "host/controllers/service/service_controller.hpp"

#include <doctest/doctest.h>

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "host/controllers/common/provider_refs.hpp"
#include "host/controllers/common/well_known.hpp"
#include "host/controllers/service/service_predicates.hpp"
#include "test/support/controller_harness.hpp"
#include "test/support/glibc_malloc.hpp"

namespace ccm::controllers::service {
namespace {

using ccm::testing::FakeProvider;
using ccm::testing::Harness;
using ccm::testing::makeNode;
using ccm::testing::makeService;
using ccm::testing::NodeSpec;
using ccm::testing::servicesStatusPath;
using ccm::testing::SvcSpec;
using ccm::testing::waitUntil;

constexpr std::string_view kFinalizer = keys::kLoadBalancerCleanupFinalizer;

// Node events reach the node queue 100 ms late (a burst gathers into one pass): waits for
// them, up to 5 s of real time.
void awaitNodePass(ServiceController& c) {
  for (int i = 0; i < 1000 && c.nodeQueue().delayedLen() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Processes every ready item of both queues (delayed retries stay delayed).
void drain(ServiceController& c) {
  awaitNodePass(c);
  while (c.nodeQueue().len() > 0 || c.serviceQueue().len() > 0) {
    while (c.nodeQueue().len() > 0) {
      REQUIRE(c.processNextNodeItem());
    }
    while (c.serviceQueue().len() > 0) {
      REQUIRE(c.processNextServiceItem());
    }
  }
}

std::unique_ptr<ServiceController> makeController(Harness& h) {
  auto ctx = h.context();
  auto c = std::make_unique<ServiceController>(ctx);
  c->registerHandlers();
  return c;
}

// Adds `count` LoadBalancer Services named <prefix>0, <prefix>1, ... (UIDs "uid-" + name).
void addLoadBalancers(Harness& h, int count, const std::string& prefix) {
  for (int i = 0; i < count; ++i) {
    SvcSpec s;
    s.name = prefix + std::to_string(i);
    s.uid = "uid-" + s.name;
    h.addService(s);
  }
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

size_t countOf(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), s));
}

std::set<std::string> asSet(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

NodeSpec node(const std::string& name) {
  NodeSpec n;
  n.name = name;
  n.provider_id = "fake://" + name;
  return n;
}

// Nodes n1 and n2, a controller and one LoadBalancer Service, synced.
std::unique_ptr<ServiceController> oneBalancerOverTwoNodes(Harness& h) {
  h.addNode(node("n1"));
  h.addNode(node("n2"));
  auto c = makeController(h);
  h.addService(SvcSpec{});
  drain(*c);
  return c;
}

}  // namespace

// ---- TestSyncLoadBalancerIfNeeded --------------------------------------------------------------

TEST_CASE("sync: a ClusterIP service makes no cloud call and no patch") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  s.type = "ClusterIP";
  h.addService(s);
  CHECK(c->serviceQueue().len() == 0);  // never enqueued
  CHECK(c->syncService(s.key()).ok());  // and a forced sync does nothing either
  CHECK(h.provider.calls().empty());
  CHECK(h.patches().empty());
  CHECK_FALSE(c->cache().contains(s.key()));
}

TEST_CASE(
    "sync: LoadBalancer services (TCP, UDP, SCTP) get the finalizer, then the LB, then status") {
  for (std::string proto : {"TCP", "UDP", "SCTP"}) {
    CAPTURE(proto);
    Harness h;
    h.addNode(node("n1"));
    auto c = makeController(h);
    SvcSpec s;
    s.ports[0].protocol = proto;
    std::vector<std::string> order;
    h.provider.setHook([&](const std::string& op, const FakeProvider::Call&) {
      if (op == "ensure") {
        order.push_back("ensure after " + std::to_string(h.patches().size()) + " patches");
      }
    });
    h.addService(s);
    drain(*c);
    auto patches = h.patches(servicesStatusPath("default", "web"));
    REQUIRE(patches.size() == 2);
    CHECK(patches[0].body.find(kFinalizer) != std::string::npos);     // finalizer first
    CHECK(patches[1].body.find("203.0.113.1") != std::string::npos);  // then the status
    REQUIRE(order.size() == 1);
    CHECK(order[0] == "ensure after 1 patches");  // the finalizer was on before the cloud call
    auto ensures = h.provider.calls("ensure");
    REQUIRE(ensures.size() == 1);
    CHECK(ensures[0].cluster == "kubernetes");
    CHECK(ensures[0].ports == std::vector<std::string>{"http/" + proto + "/80/30080"});
    CHECK(ensures[0].nodes == std::vector<std::string>{"n1"});
    auto reasons = h.eventReasons();
    CHECK(contains(reasons, "EnsuringLoadBalancer"));
    CHECK(contains(reasons, "EnsuredLoadBalancer"));
  }
}

TEST_CASE("sync: a service with a loadBalancerClass is left alone") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  s.lb_class = "example.com/other";
  h.addService(s);
  CHECK(c->serviceQueue().len() == 0);
  CHECK(c->syncService(s.key()).ok());
  CHECK(h.provider.calls().empty());
  CHECK(h.patches().empty());
}

// ---- --load-balancer-class ---------------------------------------------------------------------

TEST_CASE("ClassSelection: default, claimed classes, class-only") {
  SvcSpec none;
  SvcSpec ours;
  ours.lb_class = "ccm.example.com/cloud";
  SvcSpec metallb;
  metallb.lb_class = "metallb.io/metallb";
  auto n = makeService(none);
  auto o = makeService(ours);
  auto m = makeService(metallb);

  ClassSelection def;  // upstream: only Services without a class
  CHECK(def.handles(*n));
  CHECK_FALSE(def.handles(*o));
  CHECK_FALSE(def.handles(*m));
  CHECK(ClassSelection::fromFlags({}, false).unclassed);

  auto claimed = ClassSelection::fromFlags({"ccm.example.com/cloud", "x.io/y"}, false);
  CHECK(claimed.handles(*n));
  CHECK(claimed.handles(*o));
  CHECK_FALSE(claimed.handles(*m));
  CHECK(wantsLoadBalancer(*o, claimed));
  CHECK(belongsElsewhere(*m, claimed));
  CHECK_FALSE(belongsElsewhere(*o, claimed));

  auto only = ClassSelection::fromFlags({"ccm.example.com/cloud"}, true);
  CHECK_FALSE(only.handles(*n));
  CHECK(only.handles(*o));
  CHECK_FALSE(only.handles(*m));
  CHECK(belongsElsewhere(*n, only));

  // A Service of another class keeps the finalizer even while being deleted; a ClusterIP
  // Service (which cannot have a class) with it is cleaned up in every mode.
  SvcSpec m_del = metallb;
  m_del.finalizers = {std::string(kFinalizer)};
  m_del.deleting = true;
  CHECK_FALSE(needsCleanup(*makeService(m_del), claimed));
  CHECK_FALSE(needsCleanup(*makeService(m_del), def));
  SvcSpec cip;
  cip.type = "ClusterIP";
  cip.finalizers = {std::string(kFinalizer)};
  CHECK(needsCleanup(*makeService(cip), only));
  SvcSpec none_del = none;
  none_del.finalizers = {std::string(kFinalizer)};
  none_del.deleting = true;
  CHECK(needsCleanup(*makeService(none_del), def));
  CHECK_FALSE(needsCleanup(*makeService(none_del), only));
}

TEST_CASE("sync with --load-balancer-class: claimed and unclassed get a load balancer") {
  Harness h;
  h.options.load_balancer_classes = {"ccm.example.com/cloud"};
  h.addNode(node("n1"));
  auto c = makeController(h);
  SvcSpec plain;
  SvcSpec claimed;
  claimed.name = "claimed";
  claimed.uid = "uid-claimed";
  claimed.lb_class = "ccm.example.com/cloud";
  h.addService(plain);
  h.addService(claimed);
  drain(*c);
  CHECK(h.provider.count("ensure") == 2);
  CHECK(h.provider.loadBalancers().size() == 2);
  auto patches = h.patches(servicesStatusPath("default", "claimed"));
  REQUIRE(patches.size() == 2);  // the finalizer, then the ingress
  CHECK(patches[0].body.find(std::string(kFinalizer)) != std::string::npos);
  CHECK(patches[1].body.find("\"ingress\":[{\"ip\"") != std::string::npos);
}

TEST_CASE("cleanup after a type change uses the class the load balancer was made for") {
  // The API server clears spec.loadBalancerClass with the type change; with several
  // providers the class chooses the provider, so cleanup must keep the old one.
  Harness h;
  h.options.load_balancer_classes = {"ccm.example.com/cloud"};
  h.addNode(node("n1"));
  auto c = makeController(h);
  SvcSpec s;
  s.lb_class = "ccm.example.com/cloud";
  h.addService(s);
  drain(*c);
  REQUIRE(h.provider.loadBalancers().size() == 1);
  s.type = "ClusterIP";
  s.ports[0].node_port = 0;
  s.lb_class.reset();
  s.finalizers = {std::string(kFinalizer)};
  s.rv = "2";
  h.updateService(s);
  drain(*c);
  auto deletes = h.provider.calls("delete");
  REQUIRE(deletes.size() == 1);
  CHECK(deletes[0].load_balancer_class == "ccm.example.com/cloud");
  CHECK(h.provider.loadBalancers().empty());
}

TEST_CASE("sync with --load-balancer-class: other classes are never touched") {
  for (bool class_only : {false, true}) {
    CAPTURE(class_only);
    Harness h;
    h.options.load_balancer_classes = {"ccm.example.com/cloud"};
    h.options.load_balancer_class_only = class_only;
    h.addNode(node("n1"));
    auto c = makeController(h);
    // Another implementation's Service, with its status, and even carrying the finalizer
    // (some implementations use the same name) while being deleted.
    SvcSpec foreign;
    foreign.name = "foreign";
    foreign.uid = "uid-foreign";
    foreign.lb_class = "metallb.io/metallb";
    foreign.ingress_ip = "192.0.2.50";
    foreign.finalizers = {std::string(kFinalizer)};
    h.addService(foreign);
    CHECK(c->serviceQueue().len() == 0);
    SvcSpec foreign_del = foreign;
    foreign_del.deleting = true;
    foreign_del.rv = "2";
    h.updateService(foreign_del);
    CHECK(c->serviceQueue().len() == 0);
    // Even a sync forced by hand does nothing.
    CHECK(c->syncService(foreign.key()).ok());
    h.deleteService(foreign_del);
    drain(*c);
    if (class_only) {
      SvcSpec plain;  // no class: another implementation's too in class-only mode
      plain.ingress_ip = "192.0.2.51";
      h.addService(plain);
      CHECK(c->serviceQueue().len() == 0);
      CHECK(c->syncService(plain.key()).ok());
    }
    CHECK(h.provider.calls().empty());
    CHECK(h.patches().empty());
    CHECK(h.eventReasons().empty());
  }
}

TEST_CASE("sync: finalizer but no longer LoadBalancer: delete, then finalizer and status patches") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  s.type = "ClusterIP";
  s.finalizers = {std::string(kFinalizer)};
  s.ingress_ip = "203.0.113.7";
  h.provider.putLoadBalancer(s.uid, {s.key(), {}, 1, 0, "203.0.113.7"});
  h.addService(s);
  drain(*c);
  CHECK(h.provider.count("delete") == 1);
  CHECK(h.provider.loadBalancers().empty());
  auto patches = h.patches(servicesStatusPath("default", "web"));
  REQUIRE(patches.size() == 2);
  CHECK(patches[0].body.find("$deleteFromPrimitiveList/finalizers") != std::string::npos);
  CHECK(patches[1].body.find("\"ingress\":null") != std::string::npos);
  auto reasons = h.eventReasons();
  CHECK(contains(reasons, "DeletingLoadBalancer"));
  CHECK(contains(reasons, "DeletedLoadBalancer"));
  CHECK_FALSE(c->cache().contains(s.key()));
}

TEST_CASE(
    "cleanup does not trust status.loadBalancer: the real server clears it on a type "
    "change; the finalizer (after a restart) decides") {
  Harness h;
  auto c = makeController(h);  // a fresh controller: nothing cached, as after a restart
  SvcSpec s;
  s.type = "ClusterIP";
  s.ports[0].node_port = 0;
  s.finalizers = {std::string(kFinalizer)};
  // status.loadBalancer cleared by the API server with the type change.
  h.provider.putLoadBalancer(s.uid, {s.key(), {}, 1, 0, "203.0.113.7"});
  h.addService(s);
  drain(*c);
  CHECK(h.provider.count("delete") == 1);
  CHECK(h.provider.loadBalancers().empty());
  auto patches = h.patches(servicesStatusPath("default", "web"));
  REQUIRE_FALSE(patches.empty());
  CHECK(patches[0].body.find("$deleteFromPrimitiveList/finalizers") != std::string::npos);
  CHECK_FALSE(c->cache().contains(s.key()));
}

TEST_CASE(
    "cleanup does not trust status.loadBalancer: without the finalizer, the cache's "
    "memory of an earlier LoadBalancer version decides") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  s.finalizers = {std::string(kFinalizer)};
  h.addService(s);
  drain(*c);
  REQUIRE(h.provider.loadBalancers().size() == 1);
  // Someone strips the finalizer, then the type changes and the server clears the status.
  SvcSpec changed = s;
  changed.rv = "7";
  changed.type = "ClusterIP";
  changed.ports[0].node_port = 0;
  changed.finalizers.clear();
  changed.ingress_ip.clear();
  h.updateService(changed);
  drain(*c);
  CHECK(h.provider.count("delete") == 1);
  CHECK(h.provider.loadBalancers().empty());
  CHECK_FALSE(c->cache().contains(s.key()));
}

TEST_CASE("sync: a service being deleted: delete, then finalizer and status patches") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  s.deleting = true;
  s.finalizers = {std::string(kFinalizer)};
  s.ingress_ip = "203.0.113.7";
  h.provider.putLoadBalancer(s.uid, {s.key(), {}, 1, 0, "203.0.113.7"});
  h.addService(s);
  drain(*c);
  CHECK(h.provider.count("ensure") == 0);
  CHECK(h.provider.count("delete") == 1);
  CHECK(h.patches(servicesStatusPath("default", "web")).size() == 2);
}

TEST_CASE("sync: finalizer already present: ensure and one status patch") {
  Harness h;
  h.addNode(node("n1"));
  auto c = makeController(h);
  SvcSpec s;
  s.finalizers = {std::string(kFinalizer)};
  h.addService(s);
  drain(*c);
  CHECK(h.provider.count("ensure") == 1);
  auto patches = h.patches(servicesStatusPath("default", "web"));
  REQUIRE(patches.size() == 1);
  CHECK(patches[0].body.find("loadBalancer") != std::string::npos);
}

TEST_CASE("sync: the provider sees the service's identity and ports and names the LB itself") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  s.ports = {{"http", "TCP", 80, 30080, "8080", ""}, {"dns", "UDP", 53, 30053, "dns", "dns"}};
  h.addService(s);
  drain(*c);
  auto e = h.provider.calls("ensure");
  REQUIRE(e.size() == 1);
  CHECK(e[0].service == "default/web");
  CHECK(e[0].uid == "uid-web");
  CHECK(e[0].ports == std::vector<std::string>{"http/TCP/80/30080", "dns/UDP/53/30053"});
  // The controller never asks for a name to act on (naming is the provider's business).
  CHECK(h.provider.count("name") == 0);
}

// ---- TestUpdateNodesInExternalLoadBalancer ---------------------------------------------------

TEST_CASE("node sync: one UpdateLoadBalancer per LB service with all nodes, others skipped") {
  for (int workers : {1, 2, 5}) {
    CAPTURE(workers);
    Harness h;
    h.options.concurrent_service_syncs = workers;
    h.addNode(node("n1"));
    auto c = makeController(h);
    for (int i = 0; i < 6; ++i) {
      SvcSpec s;
      s.name = "svc-" + std::to_string(i);
      s.uid = "uid-" + std::to_string(i);
      if (i == 4)
        s.type = "ClusterIP";
      if (i == 5)
        s.lb_class = "x.io/lb";
      h.addService(s);
    }
    drain(*c);
    CHECK(h.provider.count("ensure") == 4);
    h.provider.clearCalls();
    h.addNode(node("n2"));
    h.addNode(node("n3"));
    drain(*c);
    auto updates = h.provider.calls("update");
    CHECK(updates.size() == 4);
    std::set<std::string> services;
    for (const auto& u : updates) {
      services.insert(u.service);
      CHECK(u.nodes == std::vector<std::string>{"n1", "n2", "n3"});
    }
    CHECK(services.size() == 4);
    CHECK(h.provider.count("ensure") == 0);
    CHECK(h.registry.valueForTest("service_controller_loadbalancer_sync_total") == 4);
  }
}

TEST_CASE("node sync: a burst of joining nodes is one host update per service when drained") {
  Harness h;
  auto c = makeController(h);
  addLoadBalancers(h, 20, "svc-");
  drain(*c);
  for (int i = 0; i < 50; ++i) {
    h.addNode(node("n" + std::to_string(i)));
  }
  drain(*c);
  CHECK(h.provider.count("update") == 20);
  for (const auto& [uid, lb] : h.provider.loadBalancers()) {
    CHECK(lb.nodes.size() == 50);
    CHECK(lb.updates == 1);
  }
}

// ---- TestNodeChangesForStableNodeSetEnabled / Test_shouldSyncUpdatedNode ----------------------

TEST_CASE("heartbeats: status posts of every node queue nothing and keep the host set") {
  Harness h;
  for (int i = 0; i < 40; ++i) {
    h.addNode(node("n" + std::to_string(i)));
  }
  auto c = makeController(h);
  addLoadBalancers(h, 5, "lb-");
  drain(*c);
  CHECK(h.provider.count("ensure") == 5);
  h.provider.clearCalls();
  auto set = c->currentNodeSet();

  // Ten rounds of kubelet status posts: only the resourceVersion moves.
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 40; ++i) {
      NodeSpec n = node("n" + std::to_string(i));
      n.rv = std::to_string(100 + round);
      h.updateNode(n);
    }
  }
  CHECK(c->nodeQueue().len() == 0);
  CHECK(c->serviceQueue().len() == 0);
  drain(*c);
  CHECK(h.provider.calls().empty());
  // The snapshot is not rebuilt (no O(nodes) work waits for the next sync).
  CHECK(c->currentNodeSet() == set);
}

TEST_CASE("node changes: readiness and unrelated taints/labels never update load balancers") {
  Harness h;
  auto c = oneBalancerOverTwoNodes(h);
  h.provider.clearCalls();

  for (int round = 0; round < 5; ++round) {
    NodeSpec n = node("n1");
    n.rv = std::to_string(10 + round);
    n.ready = round % 2 == 0 ? false : true;  // flap Ready/NotReady
    h.updateNode(n);
    NodeSpec m = node("n2");
    m.rv = std::to_string(10 + round);
    m.taints = {{"example.com/other", "NoSchedule"}};
    m.labels = {{"example.com/round", std::to_string(round)}};
    h.updateNode(m);
  }
  CHECK(c->nodeQueue().len() == 0);
  drain(*c);
  CHECK(h.provider.calls().empty());
}

TEST_CASE(
    "node changes: added, deleted, deleting, ToBeDeleted-tainted, excluded nodes change hosts") {
  Harness h;
  h.addNode(node("n1"));
  h.addNode(node("n2"));
  h.addNode(node("n3"));
  h.addNode(node("n4"));
  auto c = makeController(h);
  h.addService(SvcSpec{});
  drain(*c);
  auto hosts = [&] { return h.provider.loadBalancers().begin()->second.nodes; };
  CHECK(hosts() == std::vector<std::string>{"n1", "n2", "n3", "n4"});

  h.addNode(node("n5"));  // added
  drain(*c);
  CHECK(hosts() == std::vector<std::string>{"n1", "n2", "n3", "n4", "n5"});

  h.deleteNode(node("n5"));  // deleted
  drain(*c);
  CHECK(hosts() == std::vector<std::string>{"n1", "n2", "n3", "n4"});

  NodeSpec excl = node("n4");  // excluded (a trigger on its own)
  excl.rv = "2";
  excl.labels = {{std::string(keys::kExcludeFromLoadBalancers), "true"}};
  h.updateNode(excl);
  drain(*c);
  CHECK(hosts() == std::vector<std::string>{"n1", "n2", "n3"});

  // Marked deleting and ToBeDeleted-tainted nodes leave the set at the next node sync (like
  // upstream, those changes alone are not a trigger).
  NodeSpec deleting = node("n3");
  deleting.rv = "2";
  deleting.deleting = true;
  h.updateNode(deleting);
  NodeSpec tainted = node("n2");
  tainted.rv = "2";
  tainted.taints = {{std::string(keys::kToBeDeletedTaint), "NoSchedule"}};
  h.updateNode(tainted);
  CHECK(c->nodeQueue().len() == 0);
  c->syncNodes();
  drain(*c);
  CHECK(hosts() == std::vector<std::string>{"n1"});
}

TEST_CASE("node changes: a failed host update is not repeated by the next node sync") {
  Harness h;
  h.addNode(node("n1"));
  auto c = makeController(h);
  h.addService(SvcSpec{});
  drain(*c);
  h.provider.clearCalls();
  h.provider.failNext("update", Status(Code::Unavailable, "cloud down"));
  h.addNode(node("n2"));
  drain(*c);
  CHECK(h.provider.count("update") == 1);
  CHECK(h.registry.valueForTest("service_controller_nodesync_error_total") == 1);
  CHECK(contains(h.eventReasons(), "UpdateLoadBalancerFailed"));
  // Same state again: the node path does not call again; the retry is the service's own
  // (rate-limited, and a full Ensure).
  c->syncNodes();
  drain(*c);
  CHECK(h.provider.count("update") == 1);
  CHECK(c->serviceQueue().delayedLen() == 1);
  CHECK(c->serviceQueue().numRequeues("default/web") == 1);
}

TEST_CASE("shouldSyncUpdatedNode: only exclusion flips and providerID changes") {
  auto base = node("n1");
  auto o = makeNode(base);
  auto check = [&](NodeSpec n) { return shouldSyncUpdatedNode(*o, *makeNode(n)); };
  CHECK_FALSE(check(base));
  NodeSpec n = base;
  n.ready = false;
  CHECK_FALSE(check(n));  // readiness
  n = base;
  n.taints = {{std::string(keys::kToBeDeletedTaint), "NoSchedule"}};
  CHECK_FALSE(check(n));  // taints
  n = base;
  n.labels = {{"a", "b"}};
  CHECK_FALSE(check(n));  // other labels
  n = base;
  n.deleting = true;
  CHECK_FALSE(check(n));  // deletionTimestamp
  n = base;
  n.network_unavailable = {{"True", "NoRouteCreated"}};
  CHECK_FALSE(check(n));  // conditions
  n = base;
  n.labels = {{std::string(keys::kExcludeFromLoadBalancers), "true"}};
  CHECK(check(n));  // exclusion added
  n.labels = {{std::string(keys::kExcludeFromLoadBalancers), "false"}};
  CHECK_FALSE(check(n));  // a false value does not exclude
  n = base;
  n.provider_id = "fake://other";
  CHECK(check(n));  // providerID changed
  n.provider_id = "";
  CHECK(check(n));  // providerID unset
  NodeSpec unset = base;
  unset.provider_id = "";
  CHECK(shouldSyncUpdatedNode(*makeNode(unset), *o));  // providerID set
}

TEST_CASE(
    "respectsPredicates: exclusion label values, ToBeDeleted taint, deletion; not readiness") {
  auto in = [](NodeSpec n) { return nodeInLoadBalancerSet(*makeNode(n)); };
  NodeSpec n = node("n1");
  CHECK(in(n));
  n.ready = false;
  CHECK(in(n));  // NotReady nodes stay (KEP-3458)
  for (std::string v : {"", "true", "foo", "True", "1"}) {
    CAPTURE(v);
    NodeSpec e = node("n1");
    e.labels = {{std::string(keys::kExcludeFromLoadBalancers), v}};
    CHECK_FALSE(in(e));
  }
  for (std::string v : {"false", "0", "f", "F", "FALSE", "False"}) {
    CAPTURE(v);
    NodeSpec e = node("n1");
    e.labels = {{std::string(keys::kExcludeFromLoadBalancers), v}};
    CHECK(in(e));
  }
  for (std::string effect : {"NoSchedule", "NoExecute", "PreferNoSchedule"}) {
    NodeSpec t = node("n1");
    t.taints = {{std::string(keys::kToBeDeletedTaint), effect}};
    CHECK_FALSE(in(t));
  }
  NodeSpec other = node("n1");
  other.taints = {{"example.com/x", "NoSchedule"}};
  CHECK(in(other));
  NodeSpec d = node("n1");
  d.deleting = true;
  CHECK_FALSE(in(d));
}

// ---- TestNodeChangesInExternalLoadBalancer / TestNodesNotEqual ---------------------------------

TEST_CASE("host lists: every eligible node, sorted, with the current node objects") {
  Harness h;
  h.addNode(node("b"));
  h.addNode(node("a"));
  NodeSpec excluded = node("c");
  excluded.labels = {{std::string(keys::kExcludeFromLoadBalancers), "yes"}};
  h.addNode(excluded);
  auto c = makeController(h);
  h.addService(SvcSpec{});
  drain(*c);
  CHECK(h.provider.calls("ensure").at(0).nodes == std::vector<std::string>{"a", "b"});
  CHECK(c->currentNodeSet()->size() == 2);
}

TEST_CASE("a synced load balancer does not keep its host set's snapshot (or its nodes) alive") {
  // Each load balancer remembers only the members it was synced with: with many load
  // balancers synced at different node generations, keeping each one's snapshot kept that
  // many copies of the node list and of the Node objects, memory growing with nodes x LBs.
  Harness h;
  h.addNode(node("n1"));
  auto c = makeController(h);
  addLoadBalancers(h, 3, "web");
  drain(*c);
  REQUIRE(h.provider.count("ensure") == 3);
  std::weak_ptr<const NodeSet> synced = c->currentNodeSet();
  h.addNode(node("n2"));
  drain(*c);
  CHECK(h.provider.count("update") == 3);
  c->currentNodeSet();  // the controller's current snapshot is the new one now
  CHECK(synced.expired());
  h.provider.clearCalls();
  NodeSpec relabelled = node("n2");
  relabelled.labels = {{"x", "y"}};
  h.updateNode(relabelled);  // the same members: no update
  drain(*c);
  CHECK(h.provider.count("update") == 0);
}

TEST_CASE("between waves no host set is held; node changes compare members without one") {
  // At 100,000 nodes the set is ≈ 100 MB of copied host fields and provider refs: it lives
  // while load-balancer calls use it and goes when the service queue drains.
  Harness h;
  auto c = oneBalancerOverTwoNodes(h);
  REQUIRE(h.provider.count("ensure") == 1);
  CHECK(c->heldNodeSet() == nullptr);
  CHECK(h.registry.valueForTest("ccm_service_host_set_bytes", {"text"}) == 0);
  CHECK(h.registry.valueForTest("ccm_service_host_set_bytes", {"refs"}) == 0);
  CHECK(h.registry.valueForTest("ccm_service_host_set_nodes") == 2);
  h.provider.clearCalls();

  // A change the provider sees that keeps the members: compared, nothing built, no call.
  NodeSpec relabelled = node("n2");
  relabelled.labels = {{"example.com/role", "web"}};
  h.updateNode(relabelled);
  drain(*c);
  CHECK(h.provider.calls().empty());
  CHECK(c->heldNodeSet() == nullptr);

  // A new member: one update with the set built from the cache, then dropped again.
  h.addNode(node("n3"));
  drain(*c);
  REQUIRE(h.provider.count("update") == 1);
  CHECK(h.provider.calls("update").at(0).nodes == std::vector<std::string>{"n1", "n2", "n3"});
  CHECK(c->heldNodeSet() == nullptr);
  CHECK(h.registry.valueForTest("ccm_service_host_set_nodes") == 3);

  // A Service changed between waves is ensured with a set built for it, and it is the
  // current members that the load balancer is remembered with: no update follows.
  h.provider.clearCalls();
  SvcSpec changed;
  changed.rv = "2";
  changed.finalizers = {std::string(kFinalizer)};
  changed.annotations = {{"example.com/changed", "yes"}};
  h.updateService(changed);
  drain(*c);
  REQUIRE(h.provider.count("ensure") == 1);
  CHECK(h.provider.calls("ensure").at(0).nodes == std::vector<std::string>{"n1", "n2", "n3"});
  CHECK(h.provider.count("update") == 0);
  CHECK(c->heldNodeSet() == nullptr);

  // The membership compared without a set is the one a set has.
  CHECK(c->currentMembers() == c->currentNodeSet()->membership());
  CHECK(c->heldNodeSet() != nullptr);
}

TEST_CASE("a heartbeat (a new Node version the provider does not see) leaves no old Node pinned") {
  Harness h;
  auto c = oneBalancerOverTwoNodes(h);
  REQUIRE(h.provider.count("ensure") == 1);
  auto set = c->currentNodeSet();
  std::weak_ptr<const kube::Node> old = h.nodes.get("n1");
  REQUIRE_FALSE(old.expired());
  NodeSpec beat = node("n1");
  beat.rv = "2";  // only the resourceVersion (and, from a kubelet, the heartbeat) changes
  h.updateNode(beat);
  drain(*c);
  CHECK(h.provider.count("update") == 0);
  CHECK(c->currentNodeSet() == set);  // not rebuilt: nothing the provider sees changed
  CHECK(h.nodes.get("n1")->resourceVersion() == "2");
  CHECK(old.expired());
  REQUIRE(set->size() == 2);
  CHECK(set->refs()[0].name == "n1");
  CHECK(set->refs()[0].uid == "uid-n1");
  CHECK(set->refs()[0].provider_id == "fake://n1");
  // What the set holds is exported for the scale benchmark.
  CHECK(h.registry.valueForTest("ccm_service_host_set_nodes") == 2);
  CHECK(h.registry.valueForTest("ccm_service_host_set_bytes", {"text"}) ==
        static_cast<double>(set->textBytes()));
  CHECK(h.registry.valueForTest("ccm_service_host_set_bytes", {"refs"}) ==
        static_cast<double>(set->refBytes()));
  CHECK(set->textBytes() > 0);
}

TEST_CASE("a host update error is retried through the service queue, as a full ensure") {
  Harness h;
  h.addNode(node("n1"));
  auto c = makeController(h);
  h.addService(SvcSpec{});
  drain(*c);
  h.provider.failNext("update", Status(Code::Internal, "boom"));
  h.addNode(node("n2"));
  drain(*c);
  CHECK(c->serviceQueue().numRequeues("default/web") == 1);
  h.provider.clearCalls();
  CHECK(c->syncService("default/web").ok());  // what the retry runs
  CHECK(h.provider.count("ensure") == 1);
  CHECK(h.provider.count("update") == 0);
  CHECK(h.provider.loadBalancers().begin()->second.nodes == std::vector<std::string>{"n1", "n2"});
}

TEST_CASE("NodeRefs: every node's arrays in shared blocks, valid after later adds") {
  NodeSpec a = node("a");
  a.labels = {{"k1", "v1"}, {"k2", "v2"}};
  a.addresses = {{"InternalIP", "10.0.0.1"}, {"Hostname", "a"}};
  NodeSpec b = node("b");  // no labels, no addresses
  NodeSpec c = node("c");
  c.labels = {{"k3", "v3"}};
  c.addresses = {{"ExternalIP", "203.0.113.3"}};
  std::vector<std::shared_ptr<const kube::Node>> first{makeNode(a), makeNode(b)};
  NodeRefs refs(first);
  plugin::NodeRef one = refs.add(makeNode(c));  // a second block; the first must not move
  std::vector<std::shared_ptr<const kube::Node>> more;
  for (int i = 0; i < 100; ++i) {
    NodeSpec n = node("m" + std::to_string(i));
    n.labels = {{"i", std::to_string(i)}};
    more.push_back(makeNode(n));
  }
  refs.add(more);
  REQUIRE(refs.size() == 103);
  CHECK(refs[0].name == "a");
  REQUIRE(refs[0].labels.size() == 2);
  CHECK(refs[0].labels[0].key == "k1");
  CHECK(refs[0].labels[1].value == "v2");
  REQUIRE(refs[0].addresses.size() == 2);
  CHECK(refs[0].addresses[0].address == "10.0.0.1");
  CHECK(refs[0].addresses[1].type == "Hostname");
  CHECK(refs[1].labels.empty());
  CHECK(refs[1].addresses.empty());
  // The copy handed back by add() still reads right after the 100 later adds.
  CHECK(one.name == "c");
  REQUIRE(one.labels.size() == 1);
  CHECK(one.labels[0].value == "v3");
  REQUIRE(one.addresses.size() == 1);
  CHECK(one.addresses[0].address == "203.0.113.3");
  CHECK(refs[102].labels[0].value == "99");
  // One node's pairs do not run into the next node's.
  for (size_t i = 3; i < refs.size(); ++i) {
    REQUIRE(refs[i].labels.size() == 1);
    CHECK(refs[i].labels[0].value == std::to_string(i - 3));
  }
}

namespace {

// A node as a kubelet reports it, with every field a NodeRef carries: labels and annotations
// shared by every node and some of its own, two addresses (one equal to the name), nodeInfo.
std::shared_ptr<const kube::Node> fullNode(int i, std::string_view rv = "1") {
  std::string name = fmt::format("ip-10-1-0-{}.example.internal", i);
  std::string json = fmt::format(
      R"j({{"kind":"Node","apiVersion":"v1","metadata":{{"name":"{0}","uid":"uid-{1}",)j"
      R"j("resourceVersion":"{2}","labels":{{"kubernetes.io/hostname":"{0}",)j"
      R"j("kubernetes.io/os":"linux","topology.kubernetes.io/zone":"zone-{3}"}},)j"
      R"j("annotations":{{"node.alpha.kubernetes.io/ttl":"0","example.com/owner":"team-{1}"}}}},)j"
      R"j("spec":{{"providerID":"fake://{0}"}},"status":{{"addresses":[)j"
      R"j({{"type":"InternalIP","address":"10.1.0.{1}"}},{{"type":"Hostname","address":"{0}"}}],)j"
      R"j("conditions":[{{"type":"Ready","status":"True","reason":"KubeletReady",)j"
      R"j("lastHeartbeatTime":"2024-01-01T00:00:{4:02}Z"}}],"nodeInfo":{{"machineID":"m-{1}",)j"
      R"j("systemUUID":"s-{1}","bootID":"b-{1}","kernelVersion":"6.1.0-18-amd64",)j"
      R"j("osImage":"Debian GNU/Linux 12 (bookworm)","containerRuntimeVersion":"containerd://1.7.13",)j"
      R"j("kubeletVersion":"v1.30.1","kubeProxyVersion":"v1.30.1","operatingSystem":"linux",)j"
      R"j("architecture":"amd64"}}}}}})j",
      name, i, rv, i % 3, i % 60);
  auto n = kube::decodeNode(json);
  REQUIRE_MESSAGE(n.ok(), n.status().message());
  return *n;
}

// A NodeRef's fields as owned strings, to compare after whatever it viewed has gone.
struct RefCopy {
  std::string name, uid, provider_id, object_json;
  std::vector<std::pair<std::string, std::string>> labels, annotations, addresses;
  std::vector<std::string> info;
  bool operator==(const RefCopy&) const = default;
};

RefCopy copyOf(const plugin::NodeRef& r) {
  RefCopy c;
  c.name = r.name;
  c.uid = r.uid;
  c.provider_id = r.provider_id;
  c.object_json = r.object_json;
  for (const auto& kv : r.labels) {
    c.labels.emplace_back(kv.key, kv.value);
  }
  for (const auto& kv : r.annotations) {
    c.annotations.emplace_back(kv.key, kv.value);
  }
  for (const auto& a : r.addresses) {
    c.addresses.emplace_back(a.type, a.address);
  }
  const auto& ni = r.node_info;
  for (std::string_view v :
       {ni.machine_id, ni.system_uuid, ni.boot_id, ni.kernel_version, ni.os_image,
        ni.container_runtime_version, ni.kubelet_version, ni.operating_system, ni.architecture}) {
    c.info.emplace_back(v);
  }
  return c;
}

}  // namespace

TEST_CASE("a NodeSet keeps its own copy of the hosts: the Nodes it was built from can go") {
  // A heartbeat replaces a cached Node without changing the set; a set pinning the Nodes it
  // was built from kept every node twice.
  std::vector<std::shared_ptr<const kube::Node>> nodes;
  for (int i = 0; i < 40; ++i) {
    nodes.push_back(fullNode(i));
  }
  NodeSpec excluded = node("excluded");
  excluded.labels = {{std::string(keys::kExcludeFromLoadBalancers), "yes"}};
  nodes.push_back(makeNode(excluded));
  // What the provider was given before: NodeRefs' conversion of the eligible nodes by name.
  std::vector<RefCopy> expected;
  {
    auto eligible = nodes;
    eligible.pop_back();
    std::sort(eligible.begin(), eligible.end(),
              [](const auto& a, const auto& b) { return a->name() < b->name(); });
    NodeRefs refs(eligible);
    for (const auto& r : refs.refs()) {
      expected.push_back(copyOf(r));
    }
  }
  REQUIRE(expected.size() == 40);
  CHECK(expected[0].labels.size() == 3);  // the fixture fills every field
  CHECK(expected[0].annotations.size() == 2);
  CHECK(expected[0].addresses.size() == 2);
  CHECK(expected[0].info[8] == "amd64");
  auto rebuilt = [] {
    std::vector<std::shared_ptr<const kube::Node>> again;
    for (int i = 39; i >= 0; --i) {
      again.push_back(fullNode(i, "2"));
    }
    return std::make_shared<const NodeSet>(again, 2);
  }();
  std::vector<std::weak_ptr<const kube::Node>> weak(nodes.begin(), nodes.end());
  auto set = std::make_shared<const NodeSet>(nodes, 1);
  nodes.clear();
  for (size_t i = 0; i < weak.size(); ++i) {
    CAPTURE(i);
    CHECK(weak[i].expired());
  }
  REQUIRE(set->size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(copyOf(set->refs()[i]) == expected[i]);
    CHECK(copyOf(set->hosts().refs[i]) == expected[i]);
  }
  CHECK(set->loggableNames(2) ==
        "[ip-10-1-0-0.example.internal ip-10-1-0-1.example.internal <38 more>]");
  CHECK(set->sameMembers(*rebuilt));  // the digest reads the copy: the same members
}

TEST_CASE("a NodeSet's own heap per node stays small (the refs built once for every call)") {
  // 2,000 kubelet-shaped nodes (13 labels, 3 addresses, two of them the node's name): what
  // the set holds is its refs (a NodeRef and the node's pairs and addresses) and its copy of
  // each node's own strings (name, UID, providerID, the one address that is not the name);
  // the labels' keys and values and the address types are stored once for the whole set.
  std::vector<std::shared_ptr<const kube::Node>> nodes;
  size_t own_text = 0;
  for (int i = 0; i < 2000; ++i) {
    NodeSpec n = node(fmt::format("ip-10-0-{}-{}.eu-west-1.compute.internal", i / 200, i % 200));
    for (const char* k : {"beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type",
                          "beta.kubernetes.io/os", "failure-domain.beta.kubernetes.io/region",
                          "failure-domain.beta.kubernetes.io/zone", "kubernetes.io/arch",
                          "kubernetes.io/hostname", "kubernetes.io/os",
                          "node.kubernetes.io/instance-type", "topology.kubernetes.io/region",
                          "topology.kubernetes.io/zone", "node-role.kubernetes.io/worker",
                          "topology.ebs.csi.aws.com/zone"}) {
      n.labels[k] = "v";
    }
    n.addresses = {{"InternalIP", "10.0.0.1"}, {"InternalDNS", n.name}, {"Hostname", n.name}};
    nodes.push_back(makeNode(n));
    own_text += nodes.back()->name().size() + nodes.back()->uid().size() +
                nodes.back()->providerId().size() + std::string_view("10.0.0.1").size();
  }
  own_text /= nodes.size();
  constexpr size_t kRefs = sizeof(plugin::NodeRef) + 13 * sizeof(plugin::KeyValueRef) +
                           3 * sizeof(plugin::AddressRef);
#if CCM_TEST_GLIBC_MALLOC
  // In use: blocks in the arenas plus the large ones glibc maps on their own.
  auto in_use = [] {
    auto m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  size_t before = in_use();
  auto set = std::make_shared<const NodeSet>(nodes, 1);
  size_t per_node = (in_use() - before) / nodes.size();
  MESSAGE("NodeSet heap per node: " << per_node << " bytes (" << own_text << " of own text)");
  REQUIRE(set->size() == nodes.size());
  // A NodeRef (256 bytes), 13 pairs (416), 3 addresses (96), the node's own text (139 here),
  // and the blocks' few headers and the shared strings: no per-node vectors or holders. (The
  // bound was 16 bytes of Node pointer and 3 pairs of slack before the set copied the text.)
  CHECK(per_node <= kRefs + own_text + 16);
#else
  auto set = std::make_shared<const NodeSet>(nodes, 1);  // ASan's allocator: no glibc figures
  REQUIRE(set->size() == nodes.size());
#endif
  CHECK(set->refBytes() == nodes.size() * kRefs);
  // The text: each node's own strings plus, once for the set, the shared ones.
  CHECK(set->textBytes() >= nodes.size() * own_text);
  CHECK(set->textBytes() <= nodes.size() * (own_text + 1) + 2048);
}

TEST_CASE("nodes not equal: providerID change or node swap means update; identical means none") {
  // The members of a built set, checked against those computed from the Nodes alone (what
  // node changes between waves compare): the two must always agree.
  auto members = [](std::vector<NodeSpec> specs, uint64_t gen) {
    std::vector<std::shared_ptr<const kube::Node>> nodes;
    for (auto& s : specs)
      nodes.push_back(makeNode(s));
    Membership built = NodeSet(nodes, gen).membership();
    CHECK(membershipOf(nodes) == built);
    return built;
  };
  std::optional<Membership> a = members({node("n1"), node("n2")}, 1);
  CHECK(sameMembers(a, members({node("n2"), node("n1")}, 2)));
  NodeSpec moved = node("n2");
  moved.provider_id = "fake://elsewhere";
  CHECK_FALSE(sameMembers(a, members({node("n1"), moved}, 3)));
  CHECK_FALSE(sameMembers(a, members({node("n1"), node("n3")}, 4)));
  CHECK_FALSE(sameMembers(a, members({node("n1")}, 5)));
  CHECK_FALSE(sameMembers(std::nullopt, *a));
  // The pairs are length-prefixed: moving a character between name and providerID changes
  // the members.
  NodeSpec ab = node("ab");
  ab.provider_id = "c";
  NodeSpec a_bc = node("a");
  a_bc.provider_id = "bc";
  CHECK_FALSE(sameMembers(members({ab}, 7), members({a_bc}, 8)));
  NodeSpec relabelled = node("n1");
  relabelled.labels = {{"x", "y"}};
  CHECK(sameMembers(a, members({relabelled, node("n2")}, 6)));  // labels do not matter
  // Nodes a load balancer does not take are not members either way.
  NodeSpec excluded = node("n3");
  excluded.labels = {{std::string(keys::kExcludeFromLoadBalancers), "true"}};
  CHECK(sameMembers(a, members({node("n1"), node("n2"), excluded}, 9)));
}

// ---- TestProcessServiceCreateOrUpdate / K8sError / TestSyncService / TestProcessServiceDeletion
// ---

TEST_CASE("create or update: the cache holds the latest spec") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  h.addService(s);
  drain(*c);
  s.rv = "2";
  s.lb_ip = "203.0.113.99";
  h.updateService(s);
  drain(*c);
  auto e = c->cache().get(s.key());
  REQUIRE(e);
  CHECK(e->service->load_balancer_ip == "203.0.113.99");
  CHECK(e->ensured);
}

TEST_CASE(
    "create or update: a status patch Conflict is an error and an event; NotFound is success") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  s.finalizers = {std::string(kFinalizer)};
  h.addService(s);
  h.api.failNext("PATCH", servicesStatusPath("default", "web"),
                 kube::ApiStatus(409, kube::Reason::Conflict, "the object has been modified"));
  Status st = c->syncService(s.key());
  CHECK_FALSE(st.ok());
  CHECK(st.message().rfind("failed to update load balancer status: ", 0) == 0);
  auto events = h.eventList();
  bool found = false;
  for (const auto& [reason, msg] : events) {
    if (reason == "SyncLoadBalancerFailed") {
      found = true;
      CHECK(msg.rfind("Error syncing load balancer: failed to update load balancer status", 0) ==
            0);
    }
  }
  CHECK(found);

  h.api.failNext("PATCH", servicesStatusPath("default", "web"),
                 kube::ApiStatus(404, kube::Reason::NotFound, "services \"web\" not found"));
  CHECK(c->syncService(s.key()).ok());
}

TEST_CASE("syncService: a bad key is an error; a valid one is fine and leaves no cache entry") {
  Harness h;
  auto c = makeController(h);
  Status st = c->syncService("too/many/slashes");
  CHECK(st.message() == "unexpected key format: \"too/many/slashes\"");
  CHECK_FALSE(c->syncService("no-namespace").ok());
  SvcSpec s;
  s.type = "ClusterIP";
  h.addService(s);
  CHECK(c->syncService(s.key()).ok());
  CHECK_FALSE(c->cache().contains(s.key()));
}

TEST_CASE("service deletion: unknown key is fine; cloud error surfaced verbatim; success prunes") {
  Harness h;
  auto c = makeController(h);
  CHECK(c->syncService("default/unknown").ok());

  SvcSpec s;
  h.addService(s);
  drain(*c);
  REQUIRE(c->cache().contains(s.key()));
  REQUIRE(h.provider.loadBalancers().size() == 1);
  // Deleted without the finalizer (stripped): the delete handler syncs the key.
  h.provider.failNext("delete", Status(Code::Unavailable, "cloud says no"));
  h.deleteService(s);
  REQUIRE(c->serviceQueue().len() == 1);
  drain(*c);
  CHECK(c->cache().contains(s.key()));  // kept for the retry
  auto events = h.eventList();
  bool failed = false;
  for (const auto& [reason, msg] : events) {
    if (reason == "DeleteLoadBalancerFailed") {
      failed = true;
      CHECK(msg == "Error deleting load balancer: UNAVAILABLE: cloud says no");
    }
  }
  CHECK(failed);
  Status st = c->syncService(s.key());  // the retry
  CHECK(st.ok());
  CHECK(h.provider.loadBalancers().empty());
  CHECK_FALSE(c->cache().contains(s.key()));
}

TEST_CASE("service deletion: the cloud error of the retry is returned unchanged") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  h.addService(s);
  drain(*c);
  h.deleteService(s);
  h.provider.failNext("delete", Status(Code::PermissionDenied, "no", std::chrono::seconds(7)));
  Status st = c->syncService(s.key());
  CHECK(st.code() == Code::PermissionDenied);
  CHECK(st.message() == "no");
  CHECK(st.retryAfter() == std::chrono::seconds(7));
}

// ---- TestNeedsCleanup / TestNeedsUpdate ------------------------------------------------------

TEST_CASE("needsCleanup: finalizer x deletionTimestamp x type") {
  for (bool fin : {false, true}) {
    for (bool del : {false, true}) {
      for (std::string type : {"LoadBalancer", "ClusterIP"}) {
        SvcSpec s;
        s.type = type;
        s.deleting = del;
        if (fin)
          s.finalizers = {std::string(kFinalizer)};
        CAPTURE(fin);
        CAPTURE(del);
        CAPTURE(type);
        CHECK(needsCleanup(*makeService(s), ClassSelection{}) ==
              (fin && (del || type != "LoadBalancer")));
      }
    }
  }
  SvcSpec other;
  other.finalizers = {"example.com/other"};
  other.deleting = true;
  CHECK_FALSE(needsCleanup(*makeService(other), ClassSelection{}));
}

TEST_CASE("needsUpdate: the fields upstream watches, and nothing else") {
  SvcSpec base;
  auto o = makeService(base);
  auto changed = [&](const std::function<void(SvcSpec&)>& edit) {
    SvcSpec n = base;
    edit(n);
    return needsUpdate(o.get(), *makeService(n), ClassSelection{});
  };
  CHECK_FALSE(changed([](SvcSpec&) {}));
  CHECK(changed([](SvcSpec& s) { s.type = "ClusterIP"; }));
  CHECK(changed([](SvcSpec& s) { s.ports.push_back({"https", "TCP", 443, 30443, "8443", ""}); }));
  CHECK(changed([](SvcSpec& s) { s.ports[0].port = 81; }));
  CHECK(changed([](SvcSpec& s) { s.ports[0].node_port = 30081; }));
  CHECK(changed([](SvcSpec& s) { s.ports[0].protocol = "UDP"; }));
  CHECK(changed([](SvcSpec& s) { s.ports[0].name = "web"; }));
  CHECK(changed([](SvcSpec& s) { s.ports[0].target_port = "9090"; }));
  CHECK(changed([](SvcSpec& s) { s.ports[0].target_port = "named"; }));
  CHECK(changed([](SvcSpec& s) { s.ports[0].app_protocol = "http"; }));
  CHECK(changed([](SvcSpec& s) { s.external_ips = {"198.51.100.1"}; }));
  SvcSpec with_ips = base;
  with_ips.external_ips = {"198.51.100.1"};
  auto o2 = makeService(with_ips);
  SvcSpec other_ip = with_ips;
  other_ip.external_ips = {"198.51.100.2"};
  CHECK(needsUpdate(o2.get(), *makeService(other_ip), ClassSelection{}));
  CHECK(changed([](SvcSpec& s) { s.uid = "uid-other"; }));
  CHECK(changed([](SvcSpec& s) { s.etp = "Local"; }));
  CHECK(changed([](SvcSpec& s) { s.hc_node_port = 32000; }));
  CHECK(changed([](SvcSpec& s) { s.ip_families = {"IPv4", "IPv6"}; }));
  CHECK_FALSE(changed([](SvcSpec& s) { s.ip_families = {"IPv6"}; }));  // only the count
  CHECK(changed([](SvcSpec& s) { s.lb_ip = "203.0.113.5"; }));
  CHECK(changed([](SvcSpec& s) { s.source_ranges = {"10.0.0.0/8"}; }));
  CHECK(changed([](SvcSpec& s) { s.annotations = {{"a", "b"}}; }));
  CHECK(changed([](SvcSpec& s) { s.lb_class = "x.io/lb"; }));
  CHECK_FALSE(changed([](SvcSpec& s) { s.labels = {{"a", "b"}}; }));
  CHECK_FALSE(changed([](SvcSpec& s) { s.rv = "99"; }));
  CHECK_FALSE(changed([](SvcSpec& s) { s.ingress_ip = "203.0.113.1"; }));
  SvcSpec cip = base;
  cip.type = "ClusterIP";
  SvcSpec cip2 = cip;
  cip2.ports[0].port = 99;
  // neither wants one
  CHECK_FALSE(needsUpdate(makeService(cip).get(), *makeService(cip2), ClassSelection{}));
  CHECK(needsUpdate(nullptr, *o, ClassSelection{}));
}

TEST_CASE("needsUpdate: the host's own write of the provider's annotations is not a change") {
  SvcSpec base;
  base.annotations = {{"user.example/x", "1"}};
  auto o = makeService(base);
  SvcSpec written = base;
  written.annotations = {{"lb.example/id", "lb-1"}, {"user.example/x", "1"}};
  AnnotationWrite own{{"lb.example/id", "lb-1"}};
  CHECK(needsUpdate(o.get(), *makeService(written), ClassSelection{}));
  CHECK_FALSE(needsUpdate(o.get(), *makeService(written), ClassSelection{}, &own));
  // Anything beyond the write still counts: another value, another key, a user's change.
  AnnotationWrite other_value{{"lb.example/id", "lb-2"}};
  CHECK(needsUpdate(o.get(), *makeService(written), ClassSelection{}, &other_value));
  SvcSpec user_too = written;
  user_too.annotations = {{"lb.example/id", "lb-1"}, {"user.example/x", "2"}};
  CHECK(needsUpdate(o.get(), *makeService(user_too), ClassSelection{}, &own));
  // A removal the host wrote.
  AnnotationWrite removed{{"lb.example/id", std::nullopt}};
  CHECK_FALSE(needsUpdate(makeService(written).get(), *o, ClassSelection{}, &removed));
  CHECK(needsUpdate(makeService(written).get(), *o, ClassSelection{}, &own));
}

// ---- TestServiceCache -----------------------------------------------------------------------

TEST_CASE("service cache: set, get, update, list, allServices, remove") {
  ServiceCache cache;
  CHECK_FALSE(cache.get("a/b"));
  CachedService e;
  e.service = makeService(SvcSpec{});
  cache.set("default/web", e);
  SvcSpec other;
  other.name = "api";
  CachedService e2;
  e2.service = makeService(other);
  cache.set("default/api", e2);
  CHECK(cache.size() == 2);
  CHECK(cache.contains("default/web"));
  CHECK(asSet(cache.keys()) == std::set<std::string>{"default/web", "default/api"});
  CHECK(cache.allServices().size() == 2);
  CHECK(cache.update("default/web", [](CachedService& c) { c.ensured = true; }));
  CHECK_FALSE(cache.update("default/none", [](CachedService&) {}));
  CHECK(cache.get("default/web")->ensured);
  CHECK(cache.remove("default/web"));
  CHECK_FALSE(cache.remove("default/web"));
  CHECK(cache.size() == 1);
}

// ---- TestAddFinalizer / TestRemoveFinalizer / TestPatchStatus ---------------------------------

TEST_CASE("finalizer and status patches only when something changes") {
  Harness h;
  h.addNode(node("n1"));
  auto c = makeController(h);
  SvcSpec s;
  s.finalizers = {std::string(kFinalizer)};
  s.ingress_ip = "203.0.113.1";  // what the provider will answer
  h.addService(s);
  drain(*c);
  CHECK(h.provider.count("ensure") == 1);
  CHECK(h.patches().empty());  // finalizer there, status equal

  // Status written once; a sync against the same (lagging) snapshot does not write it again.
  SvcSpec t;
  t.name = "api";
  t.uid = "uid-api";
  h.addService(t);
  drain(*c);
  CHECK(h.patches(servicesStatusPath("default", "api")).size() == 2);
  CHECK(c->syncService(t.key()).ok());
  CHECK(h.patches(servicesStatusPath("default", "api")).size() == 2);

  // No finalizer, no ingress, no LB: deleting is free of writes and cloud calls.
  SvcSpec plain;
  plain.name = "plain";
  plain.uid = "uid-plain";
  plain.type = "NodePort";
  h.addService(plain);
  h.provider.clearCalls();
  CHECK(c->syncService(plain.key()).ok());
  CHECK(h.patches(servicesStatusPath("default", "plain")).empty());
  CHECK(h.provider.calls().empty());
}

TEST_CASE("an API server that drops ipMode (before 1.29) is not rewritten at every sync") {
  Harness h;
  h.addNode(node("n1"));
  h.provider.ingress_ip_mode = "VIP";
  auto c = makeController(h);
  SvcSpec t;
  t.name = "api";
  t.uid = "uid-api";
  t.finalizers = {std::string(kFinalizer)};
  const std::string status_path = servicesStatusPath("default", "api");
  // The server's answer to the status write: the ingress without the unknown ipMode.
  SvcSpec stored = t;
  stored.ingress_ip = "203.0.113.1";
  stored.rv = "2";
  h.api.setObject(status_path, stored.json());
  h.addService(t);
  drain(*c);
  auto first = h.patches(status_path);
  REQUIRE(first.size() == 1);
  CHECK(first[0].body.find("\"ipMode\":\"VIP\"") != std::string::npos);
  // The informer shows what the server stored; a resync finds nothing to write.
  h.updateService(stored);
  drain(*c);
  CHECK(c->syncService(t.key()).ok());
  CHECK(h.patches(status_path).size() == 1);
}

TEST_CASE("a server that keeps ipMode gets it, and a lost ipMode is written again") {
  Harness h;
  h.addNode(node("n1"));
  h.provider.ingress_ip_mode = "Proxy";
  auto c = makeController(h);
  SvcSpec t;
  t.name = "api";
  t.uid = "uid-api";
  t.finalizers = {std::string(kFinalizer)};
  const std::string status_path = servicesStatusPath("default", "api");
  h.addService(t);  // no stored answer: nothing learnt about the server
  drain(*c);
  REQUIRE(h.patches(status_path).size() == 1);
  SvcSpec stored = t;
  stored.ingress_ip = "203.0.113.1";  // ipMode missing from what the informer shows
  stored.rv = "2";
  h.updateService(stored);
  drain(*c);
  CHECK(c->syncService(t.key()).ok());
  auto patches = h.patches(status_path);
  REQUIRE(patches.size() == 2);
  CHECK(patches[1].body.find("\"ipMode\":\"Proxy\"") != std::string::npos);
}

TEST_CASE("a type change seen before our own writes: finalizer and ingress still cleaned up") {
  // The informer lags: the ClusterIP snapshot shows neither the finalizer nor the ingress this
  // controller wrote a moment earlier (FakeKubeApi never applies patches, like a lagging cache).
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  h.addService(s);
  drain(*c);
  REQUIRE(h.patches(servicesStatusPath("default", "web")).size() == 2);
  SvcSpec cip = s;
  cip.rv = "2";
  cip.type = "ClusterIP";
  h.updateService(cip);
  drain(*c);
  CHECK(h.provider.loadBalancers().empty());
  auto patches = h.patches(servicesStatusPath("default", "web"));
  REQUIRE(patches.size() == 4);
  CHECK(patches[2].body.find("$deleteFromPrimitiveList/finalizers") != std::string::npos);
  CHECK(patches[3].body.find("\"ingress\":null") != std::string::npos);
}

TEST_CASE("a service being deleted is never ensured, even without our finalizer in the cache") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  s.deleting = true;
  s.finalizers = {"example.com/other"};
  CHECK(c->syncService(s.key()).ok());  // not in the cache: nothing
  h.services.injectForTest("ADDED", makeService(s));
  CHECK(c->syncService(s.key()).ok());
  CHECK(h.provider.count("ensure") == 0);
  CHECK(h.patches().empty());
}

TEST_CASE("a call cancelled by the host is no failure event, just a retry") {
  Harness h;
  auto c = makeController(h);
  h.provider.failNext("ensure", Status(Code::Cancelled, "the host is shutting down"));
  h.addService(SvcSpec{});
  drain(*c);
  CHECK_FALSE(contains(h.eventReasons(), "SyncLoadBalancerFailed"));
  CHECK(c->serviceQueue().numRequeues("default/web") == 1);
}

// ---- TestServiceQueueDelay ------------------------------------------------------------------

TEST_CASE("queue delay: success forgets; errors back off; a retry-after is a fixed delay") {
  FakeClock clock;
  Harness h(clock);
  auto c = makeController(h);
  SvcSpec s;
  h.addService(s);
  REQUIRE(c->processNextServiceItem());
  CHECK(c->serviceQueue().numRequeues(s.key()) == 0);
  CHECK(c->serviceQueue().delayedLen() == 0);

  SvcSpec t;
  t.name = "failing";
  t.uid = "uid-failing";
  h.provider.failNext("ensure", Status(Code::Internal, "plain error"));
  h.addService(t);
  REQUIRE(c->processNextServiceItem());
  CHECK(c->serviceQueue().numRequeues(t.key()) == 1);
  CHECK(c->serviceQueue().delayedLen() == 1);

  SvcSpec u;
  u.name = "throttled";
  u.uid = "uid-throttled";
  h.provider.failNext("ensure",
                      Status(Code::ResourceExhausted, "slow down", std::chrono::seconds(42)));
  h.addService(u);
  REQUIRE(c->processNextServiceItem());
  CHECK(c->serviceQueue().numRequeues(u.key()) == 0);
  CHECK(c->serviceQueue().delayedLen() == 2);
  // After 41 s the plain error's 5 s back-off is over, the 42 s retry-after is not.
  clock.advance(std::chrono::seconds(41));
  c->serviceQueue().wake();
  REQUIRE(waitUntil([&] { return c->serviceQueue().len() == 1; }));
  CHECK(c->serviceQueue().delayedLen() == 1);
  clock.advance(std::chrono::seconds(2));
  c->serviceQueue().wake();
  CHECK(waitUntil([&] { return c->serviceQueue().len() == 2; }));
}

TEST_CASE("retry-after from FAILED_PRECONDITION and UNAVAILABLE is honoured too") {
  for (Code code : {Code::FailedPrecondition, Code::Unavailable}) {
    FakeClock clock;
    Harness h(clock);
    auto c = makeController(h);
    h.provider.failNext("ensure", Status(code, "later", std::chrono::seconds(3)));
    h.addService(SvcSpec{});
    REQUIRE(c->processNextServiceItem());
    CHECK(c->serviceQueue().numRequeues("default/web") == 0);
    CHECK(c->serviceQueue().delayedLen() == 1);
    clock.advance(std::chrono::seconds(3));
    c->serviceQueue().wake();
    REQUIRE(waitUntil([&] { return c->serviceQueue().len() == 1; }));
    REQUIRE(c->processNextServiceItem());
    CHECK(h.provider.loadBalancers().size() == 1);
  }
}

// ---- TestSlowNodeSync -----------------------------------------------------------------------

TEST_CASE("a slow host update never rolls back a newer host set") {
  Harness h;
  h.options.concurrent_service_syncs = 2;
  h.addNode(node("n1"));
  auto c = makeController(h);
  h.addService(SvcSpec{});
  drain(*c);

  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> blocked{0};
  h.provider.setHook([&](const std::string& op, const FakeProvider::Call&) {
    if (op == "update" && blocked.fetch_add(1) == 0) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
    }
  });
  c->start();
  h.addNode(node("n2"));
  REQUIRE(waitUntil([&] { return blocked.load() == 1; }));
  h.addNode(node("n3"));  // arrives while the first host update is stuck in the cloud
  SvcSpec changed;
  changed.rv = "5";
  changed.lb_ip = "203.0.113.50";  // and a spec change queued behind it
  h.updateService(changed);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  REQUIRE(waitUntil([&] {
    auto lbs = h.provider.loadBalancers();
    return !lbs.empty() &&
           lbs.begin()->second.nodes == std::vector<std::string>{"n1", "n2", "n3"} &&
           h.provider.count("ensure") >= 2;
  }));
  c->stop();
  // Never two calls for one service at once.
  CHECK(h.provider.peakInFlight() == 1);
  CHECK(h.provider.loadBalancers().begin()->second.nodes ==
        std::vector<std::string>{"n1", "n2", "n3"});
}

// ---- ccm's own ------------------------------------------------------------------------------

TEST_CASE("the controller's health check fails while a worker is stuck, or no worker takes work") {
  FakeClock clock;
  Harness h(clock);
  auto c = makeController(h);
  SUBCASE("a worker stuck in one item") {
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    std::atomic<bool> blocked{false};
    h.provider.setHook([&](const std::string& op, const FakeProvider::Call&) {
      if (op == "ensure") {
        blocked = true;
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return release; });
      }
    });
    c->start();
    h.addService(SvcSpec{});
    REQUIRE(waitUntil([&] { return blocked.load(); }));
    CHECK(c->healthy().ok());
    clock.advance(kStuckAfter + std::chrono::seconds(1));
    Status st = c->healthy();
    CHECK_FALSE(st.ok());
    CHECK(st.message().find("default/web in work for") != std::string::npos);
    {
      std::lock_guard lock(mu);
      release = true;
    }
    cv.notify_all();
    CHECK(waitUntil([&] { return c->healthy().ok(); }));
    c->stop();
  }
  SUBCASE("ready work that no worker takes") {
    h.addService(SvcSpec{});  // not started: no worker
    CHECK(c->healthy().ok());
    clock.advance(kStuckAfter + std::chrono::seconds(1));
    Status st = c->healthy();
    CHECK_FALSE(st.ok());
    CHECK(st.message().find("none taken by a worker") != std::string::npos);
    REQUIRE(c->processNextServiceItem());
    CHECK(c->healthy().ok());
  }
}

TEST_CASE("a service deleted without the finalizer still gets its load balancer deleted") {
  Harness h;
  auto c = makeController(h);
  // From before the finalizer era: it has an LB and ingress, but no finalizer, and the
  // controller never synced it (deleted before its first sync).
  SvcSpec s;
  s.ingress_ip = "203.0.113.9";
  h.provider.putLoadBalancer(s.uid, {s.key(), {}, 1, 0, "203.0.113.9"});
  h.services.injectForTest("ADDED", makeService(s));
  h.deleteService(s);
  drain(*c);
  CHECK(h.provider.loadBalancers().empty());
  CHECK(c->cache().size() == 0);
}

TEST_CASE("a service deleted after a normal clean-up is not deleted twice; the cache is pruned") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  h.addService(s);
  drain(*c);
  SvcSpec deleting = s;
  deleting.rv = "3";
  deleting.deleting = true;
  deleting.finalizers = {std::string(kFinalizer)};
  deleting.ingress_ip = "203.0.113.1";
  h.updateService(deleting);
  drain(*c);
  CHECK(h.provider.count("delete") == 1);
  CHECK(c->cache().size() == 0);
  SvcSpec gone = deleting;
  gone.finalizers.clear();
  h.deleteService(gone);
  drain(*c);
  CHECK(h.provider.count("delete") == 1);
  CHECK(c->cache().size() == 0);
}

TEST_CASE("a service recreated under the same name: the old load balancer goes first") {
  Harness h;
  auto c = makeController(h);
  SvcSpec s;
  h.addService(s);
  drain(*c);
  SvcSpec again = s;
  again.uid = "uid-web-2";
  again.rv = "9";
  // The old object vanished without us seeing the deletion (e.g. while we were not leader).
  h.services.injectForTest("MODIFIED", makeService(again));
  drain(*c);
  auto lbs = h.provider.loadBalancers();
  CHECK(lbs.size() == 1);
  CHECK(lbs.count("uid-web-2") == 1);
}

TEST_CASE("zero eligible nodes: UnAvailableLoadBalancer, and the call still happens") {
  Harness h;
  auto c = makeController(h);
  h.addService(SvcSpec{});
  drain(*c);
  CHECK(h.provider.count("ensure") == 1);
  CHECK(contains(h.eventReasons(), "UnAvailableLoadBalancer"));
}

TEST_CASE("host update events: UpdatedLoadBalancer, or nothing for ImplementedElsewhere") {
  Harness h;
  h.addNode(node("n1"));
  auto c = makeController(h);
  h.addService(SvcSpec{});
  drain(*c);
  h.addNode(node("n2"));
  drain(*c);
  CHECK(contains(h.eventReasons(), "UpdatedLoadBalancer"));
  h.provider.failNext("update", Status(Code::ImplementedElsewhere, "elsewhere"));
  h.addNode(node("n3"));
  drain(*c);
  CHECK(c->serviceQueue().delayedLen() == 0);
  CHECK(countOf(h.eventReasons(), "UpdatedLoadBalancer") == 1);
}

TEST_CASE("ImplementedElsewhere from Ensure: finalizer added, no status, no Ensured event") {
  Harness h;
  auto c = makeController(h);
  h.provider.failNext("ensure", Status(Code::ImplementedElsewhere, "other controller"));
  h.addService(SvcSpec{});
  drain(*c);
  auto patches = h.patches(servicesStatusPath("default", "web"));
  REQUIRE(patches.size() == 1);
  CHECK(patches[0].body.find(kFinalizer) != std::string::npos);
  CHECK_FALSE(contains(h.eventReasons(), "EnsuredLoadBalancer"));
  CHECK(c->serviceQueue().delayedLen() == 0);
}

TEST_CASE("an LB that vanished from the cloud is ensured again at the next host update") {
  Harness h;
  h.addNode(node("n1"));
  auto c = makeController(h);
  SvcSpec s;
  h.addService(s);
  drain(*c);
  {
    // Deleted out of band (the provider's UpdateLoadBalancer then answers NOT_FOUND).
    controllers::ServiceRefHolder holder(makeService(s));
    REQUIRE(h.provider.ensureLoadBalancerDeleted("kubernetes", holder.ref()).ok());
  }
  h.provider.clearCalls();
  h.addNode(node("n2"));
  drain(*c);
  CHECK(h.provider.loadBalancers().count("uid-web") == 1);
  CHECK(h.provider.count("ensure") == 1);
}

TEST_CASE("factory: no ccm.loadbalancer/1, or UNIMPLEMENTED answers, means not started") {
  Harness h;
  auto ctx = h.context();
  h.provider.mutableInfo().load_balancer.present = false;
  auto r = makeServiceController(ctx);
  REQUIRE(r.ok());
  REQUIRE(std::holds_alternative<NotStarted>(*r));
  CHECK(std::get<NotStarted>(*r).reason.find("does not support external load balancers") !=
        std::string::npos);

  h.provider.mutableInfo().load_balancer.present = true;
  h.provider.failAlways("name", Status(Code::Unimplemented, "not here"));
  r = makeServiceController(ctx);
  REQUIRE(r.ok());
  REQUIRE(std::holds_alternative<NotStarted>(*r));
  CHECK(std::get<NotStarted>(*r).reason.find("UNIMPLEMENTED") != std::string::npos);

  h.provider.failAlways("name", Status(Code::Unavailable, "flaky"));  // not a refusal
  r = makeServiceController(ctx);
  REQUIRE(r.ok());
  CHECK(std::holds_alternative<std::unique_ptr<Controller>>(*r));
}

TEST_CASE("start/stop: workers, metrics and running_managed_controllers") {
  Harness h;
  h.options.concurrent_service_syncs = 3;
  h.addNode(node("n1"));
  auto ctx = h.context();
  auto r = makeServiceController(ctx);
  REQUIRE(r.ok());
  auto ctl = std::move(std::get<std::unique_ptr<Controller>>(*r));
  CHECK(ctl->name() == "service-lb-controller");
  ctl->start();
  CHECK(h.registry.valueForTest("running_managed_controllers",
                                {"cloud-controller-manager", "service"}) == 1);
  for (int i = 0; i < 30; ++i) {
    SvcSpec s;
    s.name = "s" + std::to_string(i);
    s.uid = "u" + std::to_string(i);
    h.addService(s);
  }
  REQUIRE(waitUntil([&] { return h.provider.loadBalancers().size() == 30; }));
  h.addNode(node("n2"));
  REQUIRE(waitUntil([&] {
    for (const auto& [_, lb] : h.provider.loadBalancers()) {
      if (lb.nodes.size() != 2)
        return false;
    }
    return true;
  }));
  ctl->stop();
  ctl->stop();  // idempotent
  CHECK(h.registry.valueForTest("running_managed_controllers",
                                {"cloud-controller-manager", "service"}) == 0);
  std::string text = h.registry.exposition();
  for (const char* m :
       {"service_controller_loadbalancer_sync_total", "service_controller_nodesync_error_total",
        "service_controller_nodesync_latency_seconds",
        "service_controller_update_loadbalancer_host_latency_seconds",
        "workqueue_adds_total{name=\"service\"}", "workqueue_adds_total{name=\"node\"}"}) {
    CAPTURE(m);
    CHECK(text.find(m) != std::string::npos);
  }
  CHECK(h.registry.valueForTest("service_controller_nodesync_latency_seconds") >= 1);
  // Handlers after stop do nothing (and do not crash).
  h.addNode(node("n3"));
  h.addService(SvcSpec{});
}

TEST_CASE("a busy cloud (FAILED_PRECONDITION with a retry-after) is a Normal event, no Warning") {
  Harness h;
  h.addNode(node("n1"));
  auto c = makeController(h);
  h.provider.failNext("ensure", Status(Code::FailedPrecondition,
                                       "load balancer lb-1 is PENDING_CREATE; try again later",
                                       std::chrono::seconds(5)));
  h.addService(SvcSpec{});
  drain(*c);
  auto reasons = h.eventReasons();
  CHECK(contains(reasons, "LoadBalancerPending"));
  CHECK_FALSE(contains(reasons, "SyncLoadBalancerFailed"));
  CHECK(c->serviceQueue().delayedLen() == 1);

  // The same on the host-update path.
  Harness g;
  g.addNode(node("n1"));
  auto d = makeController(g);
  g.addService(SvcSpec{});
  drain(*d);
  g.provider.failNext("update", Status(Code::FailedPrecondition, "pool p-1 is PENDING_UPDATE",
                                       std::chrono::seconds(5)));
  g.addNode(node("n2"));
  drain(*d);
  CHECK(contains(g.eventReasons(), "LoadBalancerPending"));
  CHECK_FALSE(contains(g.eventReasons(), "UpdateLoadBalancerFailed"));

  // Without a retry-after it is an error like any other.
  Harness e;
  auto f = makeController(e);
  e.provider.failNext("ensure", Status(Code::FailedPrecondition, "the subnet is full"));
  e.addService(SvcSpec{});
  drain(*f);
  CHECK(contains(e.eventReasons(), "SyncLoadBalancerFailed"));
  CHECK_FALSE(contains(e.eventReasons(), "LoadBalancerPending"));
}

// ---- Giving freed heap back after a burst of syncs ------------------------------------------

// A KubeApi whose calls wait until opened: an API server that takes events slowly.
class GatedApi final : public kube::KubeApi {
 public:
  kube::ApiResult<std::string> get(const kube::ResourcePath& path, std::string_view rv,
                                   const kube::CallOptions& o) override {
    wait();
    return inner.get(path, rv, o);
  }
  kube::ApiResult<std::string> create(const kube::ResourcePath& path, std::string body,
                                      const kube::CallOptions& o) override {
    wait();
    return inner.create(path, std::move(body), o);
  }
  kube::ApiResult<std::string> update(const kube::ResourcePath& path, std::string body,
                                      const kube::CallOptions& o) override {
    wait();
    return inner.update(path, std::move(body), o);
  }
  kube::ApiResult<std::string> patch(const kube::ResourcePath& path, kube::PatchType type,
                                     std::string body, const kube::CallOptions& o) override {
    wait();
    return inner.patch(path, type, std::move(body), o);
  }
  kube::ApiStatus remove(const kube::ResourcePath& path, const kube::Preconditions& pre,
                         const kube::CallOptions& o) override {
    wait();
    return inner.remove(path, pre, o);
  }
  std::vector<kube::ApiResult<std::string>> writeBatch(std::vector<kube::Write> writes,
                                                       const kube::CallOptions& o,
                                                       std::chrono::microseconds gather) override {
    wait();
    return inner.writeBatch(std::move(writes), o, gather);
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  kube::FakeKubeApi inner;

 private:
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST_CASE("events: a slow event sink never holds up load-balancer work") {
  // Two events per ensure; with the event queue full, workers that waited for room would go
  // at the server's event rate (10 balancers a second at 20 QPS). They drop instead.
  Harness h;
  h.addNode(node("n1"));
  GatedApi sink;
  kube::EventRecorderOptions o;
  o.host = "h";
  o.queue_size = 4;
  o.batch_size = 1;
  o.enqueue_wait = std::chrono::minutes(10);  // a waiting worker would wait this long
  kube::EventBroadcaster slow(sink, o);
  slow.start();
  controllers::ControllerContext ctx{h.options,  h.api, h.nodes,    h.services,
                                     h.provider, slow,  h.registry, *h.clock};
  auto c = std::make_unique<ServiceController>(ctx);
  c->registerHandlers();
  addLoadBalancers(h, 20, "lb-");
  awaitNodePass(*c);
  std::atomic<bool> drained{false};
  std::thread worker([&] {  // no REQUIRE off the test's thread: the checks below tell
    while (c->serviceQueue().len() > 0 && c->processNextServiceItem()) {
    }
    drained = true;
  });
  CHECK(waitUntil([&] { return drained.load(); }));
  CHECK(h.provider.count("ensure") == 20);
  CHECK(slow.stats().dropped_queue_full > 0);
  sink.open();  // lets the sender finish, whatever happened above
  worker.join();
  c.reset();
  slow.shutdown();
}

TEST_CASE("memory: a drained service queue gives freed heap back after enough host entries") {
  FakeClock clock;
  Harness h(clock);
  constexpr size_t kNodes = 100;
  constexpr size_t kServices = ServiceController::kBurstReleaseHosts / kNodes;
  for (size_t i = 0; i < kNodes; ++i) {
    h.addNode(node(fmt::format("n{:03}", i)));
  }
  int releases = 0;
  auto ctx = h.context();
  ServiceController c(ctx, [&] {
    ++releases;
    return true;
  });
  c.registerHandlers();
  auto runServiceQueue = [&] {
    while (c.serviceQueue().len() > 0) {
      REQUIRE(c.processNextServiceItem());
    }
  };
  auto addLoadBalancer = [&](size_t i) {
    SvcSpec s;
    s.name = fmt::format("lb-{}", i);
    s.uid = fmt::format("uid-lb-{}", i);
    h.addService(s);
  };

  // One load balancer short of the threshold: every ensure handed the provider 100 hosts,
  // the queue drained, and nothing was released.
  for (size_t i = 0; i + 1 < kServices; ++i) {
    addLoadBalancer(i);
  }
  runServiceQueue();
  CHECK(h.provider.calls("ensure").size() == kServices - 1);
  CHECK(releases == 0);

  // The last one reaches it: the drain after it releases, once.
  addLoadBalancer(kServices - 1);
  runServiceQueue();
  CHECK(releases == 1);
  CHECK(c.burstReleases() == 1);

  // A node joins: every load balancer gets a host update of 101 hosts (over the threshold
  // again), but the drain comes within the minimum interval, so the work stays counted.
  h.addNode(node("n100"));
  c.syncNodes();
  runServiceQueue();
  CHECK(h.provider.calls("update").size() == kServices);
  CHECK(releases == 1);

  // Once the interval has passed, the next drain releases what was counted.
  clock.advance(ServiceController::kBurstReleaseInterval);
  // (one more load balancer's ensure ends the next burst)
  addLoadBalancer(kServices);
  runServiceQueue();
  CHECK(releases == 2);
  CHECK(c.burstReleases() == 2);
}

}  // namespace ccm::controllers::service
