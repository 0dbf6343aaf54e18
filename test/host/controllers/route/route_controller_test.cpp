// Unit tests of the route controller: every behaviour of upstream's route controller tests
// (reference §7.3) plus ccm's own guarantees: --cluster-cidr validation, event-driven passes,
// no create requested twice while one is in flight (also across a listing taken meanwhile),
// the bound on calls in flight, per-route back-off and RESOURCE_EXHAUSTED pauses.
// The controller runs on a FakeClock (the periodic pass never fires by itself) and is driven
// by hand through its queues.
#include "host/controllers/route/route_controller.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "host/controllers/common/cidr.hpp"
#include "host/controllers/common/well_known.hpp"
#include "host/controllers/route/route_planner.hpp"
#include "test/support/controller_harness.hpp"
#include "test/support/log_capture.hpp"

namespace ccm::controllers::route {
namespace {

using ccm::testing::FakeProvider;
using ccm::testing::Harness;
using ccm::testing::makeNode;
using ccm::testing::NodeSpec;
using ccm::testing::waitUntil;

std::vector<Cidr> cidrs(const std::string& flag) {
  auto r = parseClusterCidrs(flag);
  REQUIRE_MESSAGE(r.ok(), r.status().toString());
  return *r;
}

struct RouteHarness : Harness {
  FakeClock fake;
  RouteHarness() : Harness() { clock = &fake; }
};

std::unique_ptr<RouteController> makeController(Harness& h,
                                                const std::string& cluster_cidr = "10.244.0.0/16",
                                                bool register_handlers = true) {
  auto c = std::make_unique<RouteController>(h.context(), cidrs(cluster_cidr));
  if (register_handlers) {
    c->registerHandlers();
  }
  return c;
}

// Runs passes, calls and condition writes until nothing is left to do now.
void settle(RouteController& c) {
  for (int guard = 0; guard < 10000; ++guard) {
    c.waitForCalls();
    if (c.routesQueue().len() > 0) {
      REQUIRE(c.processNextRouteItem());
      continue;
    }
    if (c.conditionQueue().len() > 0) {
      REQUIRE(c.processNextConditionItem());
      continue;
    }
    if (c.callsPending() == 0) {
      return;
    }
  }
  FAIL("did not settle");
}

NodeSpec node(const std::string& name, std::vector<std::string> pod_cidrs,
              std::vector<std::pair<std::string, std::string>> addresses = {}) {
  NodeSpec n;
  n.name = name;
  n.pod_cidrs = std::move(pod_cidrs);
  n.addresses = std::move(addresses);
  return n;
}

plugin::Route route(const std::string& node, const std::string& cidr, bool blackhole = false) {
  plugin::Route r;
  r.name = "pre-" + node + "-" + cidr;
  r.target_node = node;
  r.destination_cidr = cidr;
  r.blackhole = blackhole;
  return r;
}

// destination -> target node
std::map<std::string, std::string> cloudRoutes(const FakeProvider& p) {
  std::map<std::string, std::string> out;
  for (const auto& [cidr, r] : p.routes()) {
    out[cidr] = r.target_node;
  }
  return out;
}

// The NetworkUnavailable patches per node: "False/RouteCreated" or "True/NoRouteCreated".
std::map<std::string, std::vector<std::string>> conditionWrites(Harness& h) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& c : h.api.callsFor("PATCH")) {
    if (c.path.rfind("/api/v1/nodes/", 0) != 0)
      continue;
    std::string name = c.path.substr(14, c.path.size() - 14 - 7);  // strip "/status"
    rapidjson::Document d;
    d.Parse(c.body.c_str());
    REQUIRE_FALSE(d.HasParseError());
    const auto& cond = d["status"]["conditions"][0];
    CHECK(std::string(cond["type"].GetString()) == "NetworkUnavailable");
    out[name].push_back(std::string(cond["status"].GetString()) + "/" + cond["reason"].GetString());
  }
  return out;
}

}  // namespace

// ---- TestIsResponsibleForRoute ---------------------------------------------------------------

TEST_CASE("isResponsibleForRoute: v4 and v6, first or last address inside a cluster CIDR") {
  auto v4 = cidrs("10.244.0.0/14");
  CHECK(isResponsibleForRoute(v4, "10.244.0.0/24"));
  CHECK(isResponsibleForRoute(v4, "10.247.255.0/24"));        // last /24 of the /14
  CHECK_FALSE(isResponsibleForRoute(v4, "10.248.0.0/24"));    // just past it
  CHECK_FALSE(isResponsibleForRoute(v4, "10.243.255.0/24"));  // just before it
  auto v16 = cidrs("10.244.0.0/16");
  CHECK(isResponsibleForRoute(v16, "10.244.255.0/24"));
  CHECK_FALSE(isResponsibleForRoute(v16, "10.245.0.0/24"));
  CHECK(isResponsibleForRoute(v16, "10.244.0.0/15"));  // first address inside
  CHECK_FALSE(isResponsibleForRoute(v16, "10.246.0.0/15"));
  auto dual = cidrs("10.244.0.0/16, fd00:10:244::/56");
  CHECK(isResponsibleForRoute(dual, "fd00:10:244:1::/64"));
  CHECK(isResponsibleForRoute(dual, "fd00:10:244:ff::/64"));
  CHECK_FALSE(isResponsibleForRoute(dual, "fd00:10:245::/64"));
  CHECK_FALSE(isResponsibleForRoute(v4, "fd00:10:244:1::/64"));
  CHECK_FALSE(isResponsibleForRoute(v4, "not-a-cidr"));
  CHECK_FALSE(isResponsibleForRoute(v4, ""));
}

TEST_CASE("the 10.0.0.0/8 case: a route wider than the cluster CIDR is not ours") {
  // Neither 10.0.0.0 nor 10.255.255.255 lies inside 10.244.0.0/14 (upstream's rule).
  CHECK_FALSE(isResponsibleForRoute(cidrs("10.244.0.0/14"), "10.0.0.0/8"));
}

TEST_CASE("CIDR parsing: canonical text, host bits, bad input") {
  CHECK(canonicalCidr("10.244.1.7/24") == "10.244.1.0/24");
  CHECK(canonicalCidr("fd00:0010:0244:0001::/64") == "fd00:10:244:1::/64");
  CHECK(canonicalCidr("garbage") == "garbage");
  // Every octet width, written as inet_ntop writes it.
  CHECK(canonicalCidr("0.9.10.99/32") == "0.9.10.99/32");
  CHECK(canonicalCidr("100.199.200.255/32") == "100.199.200.255/32");
  CHECK(canonicalCidr("255.255.255.255/0") == "0.0.0.0/0");
  CHECK(IpAddress::parse("1.20.255.0")->toString() == "1.20.255.0");
  CHECK_FALSE(Cidr::parse("10.0.0.0/33").ok());
  CHECK_FALSE(Cidr::parse("10.0.0.0").ok());
  CHECK_FALSE(Cidr::parse("10.0.0.0/").ok());
  CHECK_FALSE(Cidr::parse("10.0.0.0/-1").ok());
  CHECK_FALSE(Cidr::parse("::/129").ok());
  CHECK(Cidr::parse("0.0.0.0/0").ok());
  CHECK(Cidr::parse("::/0")->v6());
}

TEST_CASE("--cluster-cidr: one CIDR or a dual-stack pair; errors name the flag and value") {
  CHECK(parseClusterCidrs("10.244.0.0/16")->size() == 1);
  CHECK(parseClusterCidrs(" 10.244.0.0/16 , fd00::/48 ")->size() == 2);
  for (std::string bad :
       {"", " ", "10.244.0.0", "10.244.0.0/16,10.245.0.0/16", "fd00::/48,fd01::/48",
        "10.0.0.0/8,fd00::/48,10.1.0.0/16", "10.0.0.0/8,", "nonsense"}) {
    CAPTURE(bad);
    auto r = parseClusterCidrs(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::InvalidArgument);
    CHECK(r.status().message().find("--cluster-cidr=\"" + bad + "\"") != std::string::npos);
  }
  CHECK(parseClusterCidrs("").status().message().find("empty value") != std::string::npos);
}

TEST_CASE("factory: not started without --configure-cloud-routes or routes; bad CIDR is an error") {
  Harness h;
  h.options.configure_cloud_routes = false;
  auto ctx = h.context();
  auto r = makeRouteController(ctx);
  REQUIRE(r.ok());
  REQUIRE(std::holds_alternative<NotStarted>(*r));
  CHECK(std::get<NotStarted>(*r).reason.find("--configure-cloud-routes") != std::string::npos);

  h.options.configure_cloud_routes = true;
  h.provider.mutableInfo().routes.present = false;
  h.options.cluster_cidr = "";  // not even looked at without the capability (like upstream)
  r = makeRouteController(ctx);
  REQUIRE(r.ok());
  REQUIRE(std::holds_alternative<NotStarted>(*r));
  CHECK(std::get<NotStarted>(*r).reason.find("ccm.routes/1") != std::string::npos);

  h.provider.mutableInfo().routes.present = true;
  r = makeRouteController(ctx);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("--cluster-cidr=\"\"") != std::string::npos);

  h.options.cluster_cidr = "10.244.0.0/16";
  r = makeRouteController(ctx);
  REQUIRE(r.ok());
  CHECK(std::holds_alternative<std::unique_ptr<Controller>>(*r));
}

// ---- TestReconcile ---------------------------------------------------------------------------

TEST_CASE("reconcile: no routes, all routes, some routes (single and dual stack)") {
  struct Case {
    std::string name;
    std::string cluster;
    std::vector<NodeSpec> nodes;
    std::vector<plugin::Route> initial;
    std::map<std::string, std::string> want;
  };
  std::vector<Case> cases = {
      {"no routes",
       "10.120.0.0/16",
       {node("n1", {"10.120.0.0/24"}), node("n2", {"10.120.1.0/24"})},
       {},
       {{"10.120.0.0/24", "n1"}, {"10.120.1.0/24", "n2"}}},
      {"all routes",
       "10.120.0.0/16",
       {node("n1", {"10.120.0.0/24"}), node("n2", {"10.120.1.0/24"})},
       {route("n1", "10.120.0.0/24"), route("n2", "10.120.1.0/24")},
       {{"10.120.0.0/24", "n1"}, {"10.120.1.0/24", "n2"}}},
      {"some routes",
       "10.120.0.0/16",
       {node("n1", {"10.120.0.0/24"}), node("n2", {"10.120.1.0/24"})},
       {route("n1", "10.120.0.0/24")},
       {{"10.120.0.0/24", "n1"}, {"10.120.1.0/24", "n2"}}},
      {"dual stack, no routes",
       "10.120.0.0/16,a00:100::/24",
       {node("n1", {"10.120.0.0/24", "a00:100::/64"}),
        node("n2", {"10.120.1.0/24", "a00:101::/64"})},
       {},
       {{"10.120.0.0/24", "n1"},
        {"a00:100::/64", "n1"},
        {"10.120.1.0/24", "n2"},
        {"a00:101::/64", "n2"}}},
      {"dual stack, some routes",
       "10.120.0.0/16,a00:100::/24",
       {node("n1", {"10.120.0.0/24", "a00:100::/64"}),
        node("n2", {"10.120.1.0/24", "a00:101::/64"})},
       {route("n1", "10.120.0.0/24"), route("n2", "a00:101::/64")},
       {{"10.120.0.0/24", "n1"},
        {"a00:100::/64", "n1"},
        {"10.120.1.0/24", "n2"},
        {"a00:101::/64", "n2"}}},
  };
  for (const auto& tc : cases) {
    CAPTURE(tc.name);
    RouteHarness h;
    for (const auto& n : tc.nodes)
      h.addNode(n);
    for (const auto& r : tc.initial)
      h.provider.putRoute(r);
    auto c = makeController(h, tc.cluster);
    REQUIRE(c->reconcile(true).ok());
    settle(*c);
    CHECK(cloudRoutes(h.provider) == tc.want);
    // Only the missing ones were created, each once, with the node's UID as name hint.
    auto creates = h.provider.calls("create");
    CHECK(creates.size() == tc.want.size() - tc.initial.size());
    for (const auto& cr : creates) {
      CHECK(cr.name_hint == "uid-" + cr.node);
      CHECK(cr.cluster == "kubernetes");
    }
    CHECK(h.provider.count("deleteRoute") == 0);
    // Every routed node ends with NetworkUnavailable=False/RouteCreated.
    auto writes = conditionWrites(h);
    for (const auto& n : tc.nodes) {
      CHECK(writes[n.name] == std::vector<std::string>{"False/RouteCreated"});
    }
  }
}

TEST_CASE("reconcile: wrong, extra and unknown-node routes are removed and the right ones made") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.0.0/24"}));
  h.addNode(node("n2", {"10.120.1.0/24"}));
  h.provider.putRoute(route("n1", "10.120.5.0/24"));   // wrong CIDR for n1
  h.provider.putRoute(route("n2", "10.120.1.0/24"));   // right
  h.provider.putRoute(route("n9", "10.120.9.0/24"));   // unknown node
  h.provider.putRoute(route("", "10.120.7.0/24"));     // no target node, in range
  h.provider.putRoute(route("n1", "192.168.0.0/24"));  // not this cluster's: kept
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  CHECK(cloudRoutes(h.provider) == std::map<std::string, std::string>{{"10.120.0.0/24", "n1"},
                                                                      {"10.120.1.0/24", "n2"},
                                                                      {"192.168.0.0/24", "n1"}});
  CHECK(h.provider.count("deleteRoute") == 3);
  CHECK(h.provider.count("create") == 1);
}

TEST_CASE("\"Deleted route\" names the route by CIDR and node, never name=\"\"") {
  RouteHarness h;
  ccm::testing::LogCapture logs;
  h.addNode(node("n1", {"10.120.0.0/24"}));
  h.provider.putRoute(route("n1", "10.120.0.0/24"));
  plugin::Route nameless = route("n9", "10.120.9.0/24");
  nameless.name.clear();  // not every cloud names its routes
  h.provider.putRoute(nameless);
  h.provider.putRoute(route("n8", "10.120.8.0/24"));  // named "pre-n8-10.120.8.0/24"
  h.provider.putRoute(route("", "10.120.7.0/24", /*blackhole=*/true));
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  CHECK(h.provider.count("deleteRoute") == 3);
  std::string text = logs.get();
  CHECK(text.find("name=\"\"") == std::string::npos);
  CHECK(text.find("\"Deleted route\" cidr=\"10.120.9.0/24\" node=\"n9\"\n") != std::string::npos);
  CHECK(text.find("\"Deleted route\" cidr=\"10.120.8.0/24\" node=\"n8\" "
                  "name=\"pre-n8-10.120.8.0/24\"") != std::string::npos);
  CHECK(text.find("\"Deleted route\" cidr=\"10.120.7.0/24\" node=\"(blackhole)\"") !=
        std::string::npos);
}

TEST_CASE("reconcile: routes carrying stale node addresses are recreated with the current ones") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.0.0/24"}, {{"InternalIP", "10.0.0.1"}}));
  h.addNode(node("n2", {"10.120.1.0/24"}, {{"InternalIP", "10.0.0.2"}}));
  h.addNode(node("n3", {"10.120.2.0/24"}, {{"InternalIP", "10.0.0.3"}}));
  auto with = [](plugin::Route r, std::vector<std::pair<std::string, std::string>> addrs) {
    r.enable_node_addresses = true;
    for (auto& [t, a] : addrs)
      r.target_node_addresses.push_back({t, a});
    return r;
  };
  h.provider.putRoute(with(route("n1", "10.120.0.0/24"), {}));  // without addresses
  h.provider.putRoute(with(route("n2", "10.120.1.0/24"), {{"InternalIP", "10.0.9.9"}}));  // moved
  h.provider.putRoute(with(route("n3", "10.120.2.0/24"), {{"InternalIP", "10.0.0.3"}}));  // ok
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  auto routes = h.provider.routes();
  REQUIRE(routes.size() == 3);
  CHECK(routes["10.120.0.0/24"].target_node_addresses ==
        std::vector<plugin::NodeAddress>{{"InternalIP", "10.0.0.1"}});
  CHECK(routes["10.120.1.0/24"].target_node_addresses ==
        std::vector<plugin::NodeAddress>{{"InternalIP", "10.0.0.2"}});
  CHECK(h.provider.count("deleteRoute") == 2);
  CHECK(h.provider.count("create") == 2);
  // The delete of a route always came before its re-create (never raced).
  auto calls = h.provider.calls();
  for (std::string cidr : {"10.120.0.0/24", "10.120.1.0/24"}) {
    int del = -1, cre = -1;
    for (int i = 0; i < static_cast<int>(calls.size()); ++i) {
      if (calls[i].cidr == cidr && calls[i].op == "deleteRoute")
        del = i;
      if (calls[i].cidr == cidr && calls[i].op == "create")
        cre = i;
    }
    CHECK(del >= 0);
    CHECK(cre > del);
  }
}

TEST_CASE("reconcile: a node without a pod CIDR gets no route and its condition is untouched") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.0.0/24"}));
  h.addNode(node("n2", {}));
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  CHECK(cloudRoutes(h.provider).size() == 1);
  auto writes = conditionWrites(h);
  CHECK(writes.count("n2") == 0);
  CHECK(writes.count("n1") == 1);
}

TEST_CASE("reconcile: a node with routes but no pod CIDR is marked NetworkUnavailable=True") {
  RouteHarness h;
  h.addNode(node("n2", {}));
  h.provider.putRoute(route("n2", "10.120.3.0/24"));
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  CHECK(cloudRoutes(h.provider).empty());
  CHECK(conditionWrites(h)["n2"] == std::vector<std::string>{"True/NoRouteCreated"});
}

TEST_CASE("reconcile: blackhole routes in range are deleted, out of range kept") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.0.0/24"}));
  h.provider.putRoute(route("n1", "10.120.0.0/24", /*blackhole=*/true));
  h.provider.putRoute(route("", "10.120.8.0/24", true));
  h.provider.putRoute(route("", "192.168.1.0/24", true));
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  auto routes = h.provider.routes();
  CHECK(routes.count("192.168.1.0/24") == 1);
  CHECK(routes.count("10.120.8.0/24") == 0);
  // n1's blackhole was replaced by a real route (after its delete completed).
  REQUIRE(routes.count("10.120.0.0/24") == 1);
  CHECK_FALSE(routes["10.120.0.0/24"].blackhole);
}

TEST_CASE("reconcile: a duplicate pod CIDR fails its create without breaking the pass") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.0.0/24"}));
  h.addNode(node("n2", {"10.120.0.0/24"}));  // same CIDR
  h.addNode(node("n3", {"10.120.3.0/24"}));
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  // Whichever came first got it; the other fails (after the first is through).
  h.fake.advance(std::chrono::seconds(3));
  CHECK(c->reconcile(false).ok());
  settle(*c);
  auto routes = cloudRoutes(h.provider);
  CHECK(routes.size() == 2);
  CHECK(routes.count("10.120.3.0/24") == 1);
  auto writes = conditionWrites(h);
  std::string loser = routes["10.120.0.0/24"] == "n1" ? "n2" : "n1";
  CHECK(writes[loser].back() == "True/NoRouteCreated");
  CHECK(writes["n3"].back() == "False/RouteCreated");
  bool event = false;
  for (const auto& [reason, msg] : h.eventList()) {
    if (reason == "FailedToCreateRoute") {
      event = true;
      CHECK(msg.find("Could not create route uid-" + loser + " 10.120.0.0/24 for node " + loser +
                     " after ") == 0);
    }
  }
  CHECK(event);
}

TEST_CASE("events: FailedToCreateRoute names the Node with apiVersion v1") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.0.0/24"}));
  h.provider.failNext("create", Status(Code::Internal, "quota"));
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  h.events.processQueuedForTest();
  bool found = false;
  for (const auto& call : h.api.callsFor("POST")) {
    if (call.body.find("FailedToCreateRoute") == std::string::npos)
      continue;
    rapidjson::Document d;
    d.Parse(call.body.c_str());
    REQUIRE_FALSE(d.HasParseError());
    const auto& obj = d["involvedObject"];
    CHECK(std::string(obj["apiVersion"].GetString()) == "v1");
    CHECK(std::string(obj["kind"].GetString()) == "Node");
    CHECK(std::string(obj["name"].GetString()) == "n1");
    CHECK(std::string(d["type"].GetString()) == "Warning");
    CHECK(std::string(d["source"]["component"].GetString()) == "route_controller");
    found = true;
  }
  CHECK(found);
  CHECK(conditionWrites(h)["n1"] == std::vector<std::string>{"True/NoRouteCreated"});
}

// ---- TestHandleNodeUpdate (event-driven passes) ----------------------------------------------

TEST_CASE(
    "node events: add, delete, pod CIDR and address changes start a pass; heartbeats do not") {
  RouteHarness h;
  auto c = makeController(h, "10.120.0.0/16");
  auto queued = [&] {
    bool q = c->routesQueue().len() > 0;
    while (c->routesQueue().len() > 0)
      REQUIRE(c->processNextRouteItem());
    return q;
  };
  NodeSpec n = node("n1", {});
  h.addNode(n);
  CHECK(queued());
  n.rv = "2";
  n.ready = false;  // a status change that is not an address change
  h.updateNode(n);
  CHECK_FALSE(queued());
  n.rv = "3";
  n.pod_cidrs = {"10.120.0.0/24"};
  h.updateNode(n);
  CHECK(queued());
  n.rv = "4";
  n.addresses = {{"InternalIP", "10.0.0.1"}};
  h.updateNode(n);
  CHECK(queued());
  h.deleteNode(n);
  CHECK(queued());
}

TEST_CASE("a new node gets its route from the node event, without waiting for a period") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.0.0/24"}));
  auto c = makeController(h, "10.120.0.0/16", /*register_handlers=*/false);
  c->start();  // FakeClock: the periodic pass never comes round again
  REQUIRE(waitUntil([&] { return cloudRoutes(h.provider).size() == 1; }));
  h.addNode(node("n2", {"10.120.1.0/24"}));
  REQUIRE(waitUntil([&] { return cloudRoutes(h.provider).size() == 2; }));
  h.deleteNode(node("n1", {"10.120.0.0/24"}));
  REQUIRE(waitUntil([&] { return cloudRoutes(h.provider).size() == 1; }));
  c->stop();
  CHECK(h.provider.count("list") == 1);  // one listing: the rest used the controller's view
  CHECK(h.registry.valueForTest("route_controller_route_sync_total") == 1);
  CHECK(h.registry.valueForTest("running_managed_controllers",
                                {"cloud-controller-manager", "route"}) == 0);
}

TEST_CASE("the periodic pass lists again, one period after the previous one started") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.0.0/24"}));
  auto c = makeController(h, "10.120.0.0/16");
  c->routesQueue().add("list");
  while (c->routesQueue().len() > 0) {
    REQUIRE(c->processNextRouteItem());  // the node's pass (which lists first), then "list"
  }
  CHECK(h.provider.count("list") == 2);
  CHECK(c->routesQueue().delayedLen() == 1);
  h.fake.advance(std::chrono::milliseconds(9999));
  c->routesQueue().wake();
  CHECK(c->routesQueue().len() == 0);
  h.fake.advance(std::chrono::milliseconds(1));
  c->routesQueue().wake();
  REQUIRE(waitUntil([&] { return c->routesQueue().len() == 1; }));
  REQUIRE(c->processNextRouteItem());
  CHECK(h.provider.count("list") == 3);
  // A failed listing changes nothing; the next period tries again.
  c->waitForCalls();
  h.provider.failNext("list", Status(Code::Unavailable, "down"));
  h.fake.advance(std::chrono::seconds(10));
  c->routesQueue().wake();
  REQUIRE(waitUntil([&] { return c->routesQueue().len() == 1; }));
  REQUIRE(c->processNextRouteItem());
  CHECK(h.provider.count("list") == 4);
  CHECK(c->routesQueue().delayedLen() == 1);
  CHECK(cloudRoutes(h.provider).size() == 1);
  CHECK(h.registry.valueForTest("route_controller_route_sync_total") == 4);
  // The cost of the periodic (full) passes: the three "list" items, each over the one node;
  // the node's own pass, which listed because nothing had been listed yet, is incremental.
  CHECK(h.registry.valueForTest("ccm_controller_pass_duration_seconds", {"route"}) == 3);
  CHECK(h.registry.valueForTest("ccm_controller_pass_objects", {"route"}) == 1);
}

// ---- TestUpdateNetworkingCondition -----------------------------------------------------------

TEST_CASE(
    "NetworkUnavailable: created when absent, skipped when ours, foreign reasons overwritten") {
  struct Case {
    std::optional<std::pair<std::string, std::string>> existing;
    bool route_fails;
    std::vector<std::string> want;
  };
  std::vector<Case> cases = {
      {std::nullopt, false, {"False/RouteCreated"}},
      {std::nullopt, true, {"True/NoRouteCreated"}},
      {std::pair<std::string, std::string>{"False", "RouteCreated"}, false, {}},
      {std::pair<std::string, std::string>{"True", "NoRouteCreated"}, true, {}},
      {std::pair<std::string, std::string>{"False", "CalicoIsUp"}, false, {"False/RouteCreated"}},
      {std::pair<std::string, std::string>{"False", "ExternalCNI"}, false, {"False/RouteCreated"}},
      {std::pair<std::string, std::string>{"True", "Other"}, false, {"False/RouteCreated"}},
      {std::pair<std::string, std::string>{"True", "NoRouteCreated"},
       false,
       {"False/RouteCreated"}},
      {std::pair<std::string, std::string>{"False", "RouteCreated"}, true, {"True/NoRouteCreated"}},
  };
  for (const auto& tc : cases) {
    CAPTURE(tc.existing ? tc.existing->first + "/" + tc.existing->second : "none");
    CAPTURE(tc.route_fails);
    RouteHarness h;
    NodeSpec n = node("n1", {"10.120.0.0/24"});
    n.network_unavailable = tc.existing;
    h.addNode(n);
    if (tc.route_fails) {
      h.provider.failNext("create", Status(Code::Internal, "no"));
    }
    auto c = makeController(h, "10.120.0.0/16");
    REQUIRE(c->reconcile(true).ok());
    settle(*c);
    CHECK(conditionWrites(h)["n1"] == tc.want);
  }
}

TEST_CASE("NetworkUnavailable: exact strings; transition time kept when the status stays") {
  RouteHarness h;
  NodeSpec n = node("n1", {"10.120.0.0/24"});
  n.network_unavailable = std::pair<std::string, std::string>{"False", "CalicoIsUp"};
  h.addNode(n);
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  auto patches = h.api.callsFor("PATCH", "/api/v1/nodes/n1/status");
  REQUIRE(patches.size() == 1);
  rapidjson::Document d;
  d.Parse(patches[0].body.c_str());
  const auto& cond = d["status"]["conditions"][0];
  CHECK(std::string(cond["message"].GetString()) == "RouteController created a route");
  CHECK(std::string(cond["lastTransitionTime"].GetString()) == "2024-01-01T00:00:00Z");
  CHECK(std::string(cond["lastHeartbeatTime"].GetString()) != "2024-01-01T00:00:00Z");

  RouteHarness f;
  f.addNode(node("n1", {"10.120.0.0/24"}));
  f.provider.failNext("create", Status(Code::Internal, "no"));
  auto c2 = makeController(f, "10.120.0.0/16");
  REQUIRE(c2->reconcile(true).ok());
  settle(*c2);
  auto p2 = f.api.callsFor("PATCH", "/api/v1/nodes/n1/status");
  REQUIRE(p2.size() == 1);
  rapidjson::Document d2;
  d2.Parse(p2[0].body.c_str());
  CHECK(std::string(d2["status"]["conditions"][0]["message"].GetString()) ==
        "RouteController failed to create a route");
}

TEST_CASE("NetworkUnavailable: written once even while the informer has not caught up") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.0.0/24"}));
  auto c = makeController(h, "10.120.0.0/16");
  for (int i = 0; i < 3; ++i) {
    REQUIRE(c->reconcile(i == 0).ok());
    settle(*c);
  }
  CHECK(conditionWrites(h)["n1"].size() == 1);
}

// ---- ccm's own ------------------------------------------------------------------------------

TEST_CASE("no duplicate creates: in-flight routes are not asked again, even across a listing") {
  RouteHarness h;
  for (int i = 0; i < 40; ++i) {
    h.addNode(node("n" + std::to_string(i), {"10.120." + std::to_string(i) + ".0/24"}));
  }
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  h.provider.setHook([&](const std::string& op, const FakeProvider::Call&) {
    if (op == "create") {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
    }
  });
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  REQUIRE(waitUntil([&] { return h.provider.count("create") == 40; }));
  // While every create hangs in the cloud: more passes, a fresh listing, node events.
  for (int i = 0; i < 5; ++i) {
    REQUIRE(c->reconcile(i % 2 == 0).ok());
  }
  h.addNode(node("n40", {"10.120.40.0/24"}));
  REQUIRE(c->reconcile(false).ok());
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  settle(*c);
  // A listing that raced the completions must not bring them back as missing.
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 41);
  CHECK(h.provider.duplicateCreates() == 0);
  CHECK(cloudRoutes(h.provider).size() == 41);
}

TEST_CASE("a listing taken while creates complete does not make them look missing") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.1.0/24"}));
  auto c = makeController(h, "10.120.0.0/16");
  std::atomic<bool> go{false};
  std::atomic<int> lists{0};
  h.provider.setHook([&](const std::string& op, const FakeProvider::Call&) {
    if (op == "create") {
      CHECK(waitUntil([&] { return go.load(); }));
    }
  });
  // The second listing reads the cloud before the create lands and answers after it did.
  h.provider.setAfterHook([&](const std::string&) {
    if (++lists == 2) {
      go = true;
      REQUIRE(waitUntil([&] { return c->knownRoutes().size() == 1; }));
    }
  });
  REQUIRE(c->reconcile(true).ok());  // lists (empty), dispatches the create, which hangs
  REQUIRE(c->reconcile(true).ok());  // the racing listing
  c->waitForCalls();
  CHECK(c->knownRoutes().size() == 1);
  REQUIRE(c->reconcile(false).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 1);
  CHECK(h.provider.duplicateCreates() == 0);
  // The next listing agrees with the cloud again.
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 1);
}

TEST_CASE("passes racing with completing creates never ask for a route twice") {
  RouteHarness h;
  for (int i = 0; i < 300; ++i) {
    h.addNode(node("n" + std::to_string(i), {"10.120." + std::to_string(i / 2) + "." +
                                             std::to_string((i % 2) * 128) + "/25"}));
  }
  std::atomic<int> n{0};
  h.provider.setHook([&](const std::string& op, const FakeProvider::Call&) {
    if (op == "create") {
      std::this_thread::sleep_for(std::chrono::microseconds((n++ % 7) * 150));
    }
  });
  auto c = makeController(h, "10.120.0.0/16");
  for (int round = 0; cloudRoutes(h.provider).size() < 300 && round < 100000; ++round) {
    REQUIRE(c->reconcile(round % 50 == 0).ok());
  }
  settle(*c);
  CHECK(cloudRoutes(h.provider).size() == 300);
  CHECK(h.provider.duplicateCreates() == 0);
  CHECK(h.provider.count("create") == 300);
}

TEST_CASE("at most 200 calls in flight, or the provider's declared limit") {
  for (uint32_t declared : {0u, 7u}) {
    CAPTURE(declared);
    RouteHarness h;
    h.provider.mutableInfo().routes.max_concurrency = declared;
    for (int i = 0; i < 600; ++i) {
      h.addNode(node("n" + std::to_string(i), {"10.120." + std::to_string(i / 256) + "." +
                                               std::to_string(i % 256) + "/32"}));
    }
    std::atomic<bool> release{false};
    h.provider.setHook([&](const std::string& op, const FakeProvider::Call&) {
      if (op == "create") {
        CHECK(waitUntil([&] { return release.load(); }));
      }
    });
    auto c = makeController(h, "10.120.0.0/16");
    REQUIRE(c->reconcile(true).ok());
    size_t limit = declared == 0 ? 200 : declared;
    REQUIRE(waitUntil([&] { return static_cast<size_t>(h.provider.peakInFlight()) == limit; }));
    release = true;
    settle(*c);
    CHECK(static_cast<size_t>(h.provider.peakInFlight()) == limit);
    CHECK(c->peakCallsInFlight() == limit);
    CHECK(cloudRoutes(h.provider).size() == 600);
    CHECK(h.provider.duplicateCreates() == 0);
  }
}

TEST_CASE("failed creates back off per route; RESOURCE_EXHAUSTED pauses every new call") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.1.0/24"}));
  h.addNode(node("n2", {"10.120.2.0/24"}));
  h.provider.failAlways("create", Status(Code::Internal, "broken"));
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 2);
  // Passes within the back-off (2 s) do not call again.
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 2);
  h.fake.advance(std::chrono::seconds(2));
  REQUIRE(c->reconcile(false).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 4);
  h.fake.advance(std::chrono::seconds(2));  // second back-off is 4 s
  REQUIRE(c->reconcile(false).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 4);
  h.fake.advance(std::chrono::seconds(2));
  h.provider.failAlways("create", std::nullopt);
  h.provider.failNext("create",
                      Status(Code::ResourceExhausted, "throttled", std::chrono::seconds(30)));
  REQUIRE(c->reconcile(false).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 6);  // one throttled, one through
  CHECK(cloudRoutes(h.provider).size() == 1);
  h.fake.advance(std::chrono::seconds(29));
  REQUIRE(c->reconcile(false).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 6);  // paused
  h.fake.advance(std::chrono::seconds(1));
  REQUIRE(c->reconcile(false).ok());
  settle(*c);
  CHECK(h.provider.count("create") == 7);
  CHECK(cloudRoutes(h.provider).size() == 2);
  CHECK(conditionWrites(h)["n1"].back() == "False/RouteCreated");
  CHECK(conditionWrites(h)["n2"].back() == "False/RouteCreated");
}

TEST_CASE("a create cancelled by the host: no event, no condition, no back-off") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.1.0/24"}));
  h.provider.failNext("create", Status(Code::Cancelled, "lost leadership"));
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  c->waitForCalls();
  CHECK(h.eventReasons().empty());
  CHECK(conditionWrites(h).empty());
  REQUIRE(c->reconcile(false).ok());  // asked again at once
  settle(*c);
  CHECK(h.provider.count("create") == 2);
  CHECK(cloudRoutes(h.provider).size() == 1);
}

TEST_CASE("a pod CIDR moving to another node: the old route is deleted before the new create") {
  RouteHarness h;
  h.addNode(node("n1", {"10.120.1.0/24"}));
  auto c = makeController(h, "10.120.0.0/16");
  REQUIRE(c->reconcile(true).ok());
  settle(*c);
  h.deleteNode(node("n1", {"10.120.1.0/24"}));
  h.addNode(node("n2", {"10.120.1.0/24"}));
  settle(*c);
  CHECK(cloudRoutes(h.provider) == std::map<std::string, std::string>{{"10.120.1.0/24", "n2"}});
  CHECK(h.eventReasons().empty());  // no failed create on the way
}

TEST_CASE("planRoutes: the diff on its own") {
  std::vector<std::shared_ptr<const kube::Node>> nodes = {makeNode(node("a", {"10.120.0.0/24"})),
                                                          makeNode(node("b", {"10.120.1.9/24"})),
                                                          makeNode(node("c", {}))};
  auto plan = planRoutes(nodes, {route("b", "10.120.1.0/24"), route("c", "10.120.2.0/24")},
                         cidrs("10.120.0.0/16"));
  REQUIRE(plan.creates.size() == 1);
  CHECK(plan.creates[0].route.target_node == "a");
  CHECK(plan.creates[0].route.destination_cidr == "10.120.0.0/24");
  REQUIRE(plan.deletes.size() == 1);
  CHECK(plan.deletes[0].target_node == "c");
  CHECK(plan.nodes.size() == 3);
  CHECK(plan.nodes["b"].missing.empty());  // 10.120.1.9/24 == 10.120.1.0/24 canonically
  CHECK(plan.nodes["c"].cidr_keys.empty());

  // Routes of one key are judged together: two routes of a's CIDR are both kept, a blackhole
  // of that key is deleted; a route without a target node and one no node claims are deleted
  // in the cluster's range and kept outside it.
  plugin::Route twin = route("a", "10.120.0.0/24");
  twin.name = "twin";
  plan = planRoutes(nodes,
                    {route("a", "10.120.0.0/24"), twin, route("a", "10.120.0.0/24", true),
                     route("", "10.120.7.0/24"), route("gone", "10.120.8.0/24"),
                     route("gone", "10.99.0.0/24"), route("b", "10.120.1.0/24")},
                    cidrs("10.120.0.0/16"));
  CHECK(plan.creates.empty());
  std::vector<std::string> deleted;
  for (const auto& d : plan.deletes) {
    deleted.push_back(d.target_node + " " + d.destination_cidr + (d.blackhole ? " blackhole" : ""));
  }
  CHECK(deleted == std::vector<std::string>{"a 10.120.0.0/24 blackhole", " 10.120.7.0/24",
                                            "gone 10.120.8.0/24"});
}

}  // namespace ccm::controllers::route
