// Routes through the ABI against the simulated Neutron router: atomic extraroute add/remove,
// the read-modify-write fallback, allowed_address_pairs on node ports, ownership tags that
// scope list and delete to this cluster, blackholes and rollback.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <set>
#include <thread>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

// The ownership tag the provider writes (docs/providers/openstack.md): ccm:<fnv1a32(cluster)>:
// <destination with '/' as '_'>.
std::string tagFor(const std::string& cluster, std::string cidr) {
  uint32_t h = 2166136261u;
  for (char c : cluster) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  for (char& c : cidr) {
    if (c == '/') {
      c = '_';
    }
  }
  return std::string("ccm:") + hex + ":" + cidr;
}

struct Fixture : SimFixture {
  std::vector<std::string> server_ids;

  Fixture() {
    for (int i = 1; i <= 3; ++i) {
      server_ids.push_back(sim.addServer(R"({"name":"node-)" + std::to_string(i) +
                                         R"(","networks":[{"network":"private","ip":"10.0.0.)" +
                                         std::to_string(10 + i) + R"("},{"network":"private",
                                         "ip":"fd00::)" +
                                         std::to_string(10 + i) + R"("}]})"));
    }
  }

  Provider& p(const std::string& extra = "") {
    return provider(cloudConf(sim, "", "[Route]\nrouter-id = router-1\n" + extra));
  }

  static Route route(int node, const std::string& cidr) {
    Route r;
    r.target_node = "node-" + std::to_string(node);
    r.destination_cidr = cidr;
    r.target_node_addresses = {{"Hostname", r.target_node},
                               {"InternalIP", "10.0.0." + std::to_string(10 + node)},
                               {"InternalIP", "fd00::" + std::to_string(10 + node)}};
    return r;
  }

  rapidjson::Document router() {
    auto st = sim.state();
    rapidjson::Document d;
    for (const auto& r : st["routers"].GetArray()) {
      if (str(r, "id") == "router-1") {
        d.CopyFrom(r, d.GetAllocator());
      }
    }
    return d;
  }

  std::set<std::string> routes() {
    std::set<std::string> out;
    auto r = router();
    for (const auto& x : r["routes"].GetArray()) {
      out.insert(str(x, "destination") + " via " + str(x, "nexthop"));
    }
    return out;
  }

  std::set<std::string> tags() {
    std::set<std::string> out;
    auto r = router();
    for (const auto& t : r["tags"].GetArray()) {
      out.insert(t.GetString());
    }
    return out;
  }

  std::set<std::string> pairsOf(const std::string& ip) {
    std::set<std::string> out;
    auto st = sim.state();
    for (const auto& port : st["ports"].GetArray()) {
      for (const auto& f : port["fixed_ips"].GetArray()) {
        if (str(f, "ip_address") != ip) {
          continue;
        }
        for (const auto& pair : port["allowed_address_pairs"].GetArray()) {
          out.insert(str(pair, "ip_address"));
        }
      }
    }
    return out;
  }

  // A route someone else put on the router (no tag of ours).
  void addForeignRoute(const std::string& dest, const std::string& nexthop) {
    auto r = router();
    std::string routes = "[";
    for (const auto& x : r["routes"].GetArray()) {
      routes += R"({"destination":")" + str(x, "destination") + R"(","nexthop":")" +
                str(x, "nexthop") + R"("},)";
    }
    routes += R"({"destination":")" + dest + R"(","nexthop":")" + nexthop + R"("}])";
    std::string tags = "[";
    for (const auto& t : r["tags"].GetArray()) {
      tags += std::string(tags.size() > 1 ? "," : "") + "\"" + t.GetString() + "\"";
    }
    tags += "]";
    sim.post("/_sim/add", R"({"kind":"routers","object":{"id":"router-1","routes":)" + routes +
                              R"(,"tags":)" + tags + "}}");
  }
};

}  // namespace

TEST_CASE_FIXTURE(Fixture, "create (atomic): route, ownership tag and allowed address pair") {
  sim.clearRequests();
  auto r = p().createRoute(route(1, "10.244.1.0/24"));
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(countRequests(sim, "PUT", "network", "/routers/router-1/add_extraroutes$") == 1);
  CHECK(countRequests(sim, "PUT", "network", "/routers/router-1$") == 0);
  CHECK(routes() == std::set<std::string>{"10.244.1.0/24 via 10.0.0.11"});
  CHECK(tags().count(tagFor("kubernetes", "10.244.1.0/24")) == 1);
  CHECK(pairsOf("10.0.0.11") == std::set<std::string>{"10.244.1.0/24"});
  // Again: nothing doubles.
  REQUIRE(p().createRoute(route(1, "10.244.1.0/24")).ok());
  CHECK(routes().size() == 1);
  CHECK(pairsOf("10.0.0.11").size() == 1);
}

TEST_CASE_FIXTURE(Fixture, "list: only this cluster's routes, with their nodes") {
  REQUIRE(p().createRoute(route(1, "10.244.1.0/24")).ok());
  REQUIRE(p().createRoute(route(2, "10.244.2.0/24")).ok());
  REQUIRE(p().createRoute(route(3, "10.244.3.0/24"), "other-cluster").ok());
  addForeignRoute("192.168.50.0/24", "10.0.0.12");
  auto r = p().listRoutes();
  REQUIRE_MESSAGE(r.ok(), r.error);
  std::set<std::string> got;
  for (const auto& rt : r.routes) {
    CHECK(rt.name == rt.destination_cidr);
    CHECK_FALSE(rt.blackhole);
    got.insert(rt.destination_cidr + "->" + rt.target_node);
  }
  CHECK(got == std::set<std::string>{"10.244.1.0/24->node-1", "10.244.2.0/24->node-2"});
  auto other = p().listRoutes("other-cluster");
  REQUIRE(other.routes.size() == 1);
  CHECK(other.routes[0].target_node == "node-3");
}

TEST_CASE_FIXTURE(Fixture, "delete (atomic): route, tag and pair go; foreign routes stay") {
  REQUIRE(p().createRoute(route(1, "10.244.1.0/24")).ok());
  addForeignRoute("192.168.50.0/24", "10.0.0.11");
  auto listed = p().listRoutes();
  REQUIRE(listed.routes.size() == 1);
  sim.clearRequests();
  auto r = p().deleteRoute(listed.routes[0]);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(countRequests(sim, "PUT", "network", "/remove_extraroutes$") == 1);
  CHECK(routes() == std::set<std::string>{"192.168.50.0/24 via 10.0.0.11"});
  CHECK(tags().empty());
  CHECK(pairsOf("10.0.0.11").empty());
  CHECK(p().deleteRoute(listed.routes[0]).ok());  // already gone: fine
}

TEST_CASE_FIXTURE(Fixture, "a route whose next hop is no server is a blackhole and can go") {
  addForeignRoute("10.244.9.0/24", "10.0.0.250");
  sim.post("/_sim/add", R"({"kind":"routers","object":{"id":"router-1",
    "routes":[{"destination":"10.244.9.0/24","nexthop":"10.0.0.250"}],
    "tags":[")" + tagFor("kubernetes", "10.244.9.0/24") +
                            R"("]}})");
  auto r = p().listRoutes();
  REQUIRE(r.routes.size() == 1);
  CHECK(r.routes[0].blackhole);
  CHECK(r.routes[0].target_node == "10.0.0.250");
  REQUIRE(p().deleteRoute(r.routes[0]).ok());
  CHECK(routes().empty());
}

TEST_CASE_FIXTURE(Fixture, "without extraroute-atomic: read-modify-write of the route list") {
  sim.config(
      R"({"neutron_extensions":["extraroute","allowed-address-pairs","standard-attr-tag"]})");
  auto& prov = p("# non-atomic\n");
  addForeignRoute("192.168.50.0/24", "10.0.0.12");
  sim.clearRequests();
  REQUIRE(prov.createRoute(route(1, "10.244.1.0/24")).ok());
  REQUIRE(prov.createRoute(route(2, "10.244.2.0/24")).ok());
  CHECK(countRequests(sim, "PUT", "network", "/extraroutes") == 0);
  CHECK(countRequests(sim, "PUT", "network", "/routers/router-1$") == 2);
  CHECK(routes() == std::set<std::string>{"192.168.50.0/24 via 10.0.0.12",
                                          "10.244.1.0/24 via 10.0.0.11",
                                          "10.244.2.0/24 via 10.0.0.12"});
  auto listed = prov.listRoutes();
  REQUIRE(listed.routes.size() == 2);
  for (const auto& rt : listed.routes) {
    REQUIRE(prov.deleteRoute(rt).ok());
  }
  CHECK(routes() == std::set<std::string>{"192.168.50.0/24 via 10.0.0.12"});
}

TEST_CASE_FIXTURE(Fixture, "without the tag extension every route counts (as upstream)") {
  sim.config(
      R"({"neutron_extensions":["extraroute","extraroute-atomic","allowed-address-pairs"]})");
  auto& prov = p("# no tags\n");
  REQUIRE(prov.createRoute(route(1, "10.244.1.0/24")).ok());
  addForeignRoute("192.168.50.0/24", "10.0.0.12");
  auto listed = prov.listRoutes();
  CHECK(listed.routes.size() == 2);
}

TEST_CASE_FIXTURE(Fixture, "IPv6 pod CIDRs route via the node's IPv6 address") {
  REQUIRE(p().createRoute(route(2, "fd10:244:2::/64")).ok());
  CHECK(routes() == std::set<std::string>{"fd10:244:2::/64 via fd00::12"});
  CHECK(pairsOf("fd00::12") == std::set<std::string>{"fd10:244:2::/64"});
  auto listed = p().listRoutes();
  REQUIRE(listed.routes.size() == 1);
  CHECK(listed.routes[0].target_node == "node-2");
}

TEST_CASE_FIXTURE(Fixture, "node addresses missing from the request: found through Nova") {
  Route r;
  r.target_node = "node-3";
  r.destination_cidr = "10.244.3.0/24";
  REQUIRE(p().createRoute(r).ok());
  CHECK(routes() == std::set<std::string>{"10.244.3.0/24 via 10.0.0.13"});
  Route nowhere;
  nowhere.target_node = "no-such-node";
  nowhere.destination_cidr = "10.244.4.0/24";
  CHECK(p().createRoute(nowhere).status == CCM_STATUS_FAILED_PRECONDITION);
}

TEST_CASE_FIXTURE(Fixture, "ports without port security get no address pairs") {
  std::string id = sim.addServer(R"({"name":"node-nosec","networks":[{"network":"private",
    "ip":"10.0.0.44","port_security":false}]})");
  Route r;
  r.target_node = "node-nosec";
  r.destination_cidr = "10.244.44.0/24";
  r.target_node_addresses = {{"InternalIP", "10.0.0.44"}};
  REQUIRE(p().createRoute(r).ok());
  CHECK(pairsOf("10.0.0.44").empty());
  CHECK(routes().size() == 1);
}

TEST_CASE_FIXTURE(Fixture, "a failed step rolls the route and its tag back") {
  auto& prov = p();
  sim.fault(R"({"path":"/network/v2.0/ports/","method":"PUT","status":500,"count":1})");
  auto r = prov.createRoute(route(1, "10.244.1.0/24"));
  CHECK(r.status == CCM_STATUS_UNAVAILABLE);
  CHECK(routes().empty());
  CHECK(tags().empty());
  REQUIRE(prov.createRoute(route(1, "10.244.1.0/24")).ok());
  CHECK(routes().size() == 1);
}

TEST_CASE_FIXTURE(Fixture, "an invalid destination is INVALID_ARGUMENT") {
  CHECK(p().createRoute(route(1, "not-a-cidr")).status == CCM_STATUS_INVALID_ARGUMENT);
  Route r = route(1, "bad");
  CHECK(p().deleteRoute(r).status == CCM_STATUS_INVALID_ARGUMENT);
}

TEST_CASE_FIXTURE(Fixture, "16 nodes at once on a router whose concurrent writes fail (fault 1)") {
  // Neutron answers 500 to a write on a router while another write to it runs (a database
  // deadlock): the provider must serialise its writes, so every route goes in once, with no
  // rollback and no error.
  constexpr int kNodes = 16;
  std::vector<Route> wanted;
  for (int i = 0; i < kNodes; ++i) {
    std::string ip = "10.0.0." + std::to_string(100 + i);
    sim.addPrivateServer("burst-" + std::to_string(i), ip);
    Route r;
    r.target_node = "burst-" + std::to_string(i);
    r.destination_cidr = "10.245." + std::to_string(i) + ".0/24";
    r.target_node_addresses = {{"InternalIP", ip}};
    wanted.push_back(r);
  }
  auto& prov = p();
  sim.config(R"({"router_write_s":0.05})");
  sim.clearRequests();
  std::atomic<int> ready{0};
  std::vector<CallResult> results(kNodes);
  std::vector<std::thread> threads;
  threads.reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < kNodes) {
        std::this_thread::yield();
      }
      results[i] = prov.createRoute(wanted[i]);
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (int i = 0; i < kNodes; ++i) {
    CHECK_MESSAGE(results[i].ok(), results[i].error);
  }
  CHECK(routes().size() == kNodes);
  CHECK(tags().size() == kNodes);
  CHECK(countRequests(sim, "PUT", "network", "/add_extraroutes$") == kNodes);
  CHECK(countRequests(sim, "PUT", "network", "/remove_extraroutes$") == 0);
  CHECK(countRequests(sim, "DELETE", "network", "/routers/router-1/tags/") == 0);
  CHECK(sim.state()["router_conflicts"].GetInt() == 0);
}

TEST_CASE_FIXTURE(Fixture, "a 500 on a router write is retried before any rollback") {
  auto& prov = p();
  sim.fault(R"({"path":"/routers/router-1/tags/","method":"PUT","status":500,"count":1,
    "body":{"NeutronError":{"type":"HTTPInternalServerError","message":"Request Failed: internal server error while processing your request.","detail":""}}})");
  sim.clearRequests();
  auto r = prov.createRoute(route(1, "10.244.1.0/24"));
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(countRequests(sim, "PUT", "network", "/routers/router-1/tags/") == 2);
  CHECK(countRequests(sim, "PUT", "network", "/remove_extraroutes$") == 0);
  CHECK(routes().size() == 1);
  CHECK(tags().size() == 1);
}
