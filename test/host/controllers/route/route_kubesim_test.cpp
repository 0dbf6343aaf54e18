// The route controller against kubesim and the real fake-cloud.so: routes for every pod CIDR
// (single and dual stack), NetworkUnavailable written through the API, routes of deleted nodes
// removed, foreign routes kept, failed creates reported and retried, and no duplicate creates
// while many nodes join at once. Run by run_with_kubesim.py (see meson.build).
#include <doctest/doctest.h>

#include "host/controllers/route/route_controller.hpp"
#include "test/support/controller_harness.hpp"
#include "test/support/live_harness.hpp"

namespace ccm::controllers::route {
namespace {

using ccm::testing::LiveHarness;
using ccm::testing::waitUntil;

std::unique_ptr<Controller> startController(LiveHarness& h) {
  return ccm::testing::startController(h, makeRouteController);
}

// "False/RouteCreated" etc. from the API ("" when absent).
std::string networkUnavailable(LiveHarness& h, const std::string& node) {
  auto d = h.getJson(kube::nodePath(node));
  if (!d || !(*d)["status"].HasMember("conditions")) {
    return "";
  }
  for (const auto& c : (*d)["status"]["conditions"].GetArray()) {
    if (std::string(c["type"].GetString()) == "NetworkUnavailable") {
      return std::string(c["status"].GetString()) + "/" + c["reason"].GetString();
    }
  }
  return "";
}

void deleteNodes(LiveHarness& h, const std::vector<std::string>& nodes) {
  for (const auto& n : nodes) {
    h.deleteNode(n);
  }
  CHECK(waitUntil([&] {
    for (const auto& n : nodes) {
      if (h.nodes().get(n))
        return false;
    }
    return true;
  }));
}

}  // namespace

TEST_CASE("routes for every pod CIDR, NetworkUnavailable, deleted nodes lose their routes") {
  LiveHarness h;
  h.options.cluster_cidr = "10.244.0.0/16,fd00:10:244::/56";
  h.createNode("rt-a-1", {"10.244.1.0/24", "fd00:10:244:1::/64"});
  h.createNode("rt-a-2", {"10.244.2.0/24", "fd00:10:244:2::/64"});
  h.createNode("rt-a-3");  // no pod CIDR yet
  REQUIRE(waitUntil([&] { return h.nodes().size() >= 3; }));
  auto c = startController(h);
  REQUIRE(waitUntil([&] { return h.cloud().routes.size() == 4; }));
  auto routes = h.cloud().routes;
  CHECK(routes["10.244.1.0/24"] == "rt-a-1");
  CHECK(routes["fd00:10:244:1::/64"] == "rt-a-1");
  CHECK(routes["10.244.2.0/24"] == "rt-a-2");
  REQUIRE(waitUntil([&] {
    return networkUnavailable(h, "rt-a-1") == "False/RouteCreated" &&
           networkUnavailable(h, "rt-a-2") == "False/RouteCreated";
  }));
  CHECK(networkUnavailable(h, "rt-a-3").empty());  // not ours to judge

  // The third node gets its pod CIDR: a route at once (no waiting for a period).
  auto r = h.client().patch(kube::nodePath("rt-a-3"), kube::PatchType::Strategic,
                            R"({"spec":{"podCIDR":"10.244.3.0/24","podCIDRs":["10.244.3.0/24"]}})");
  REQUIRE_MESSAGE(r.ok(), r.status().toString());
  REQUIRE(waitUntil([&] { return h.cloud().routes.count("10.244.3.0/24") == 1; }));
  REQUIRE(waitUntil([&] { return networkUnavailable(h, "rt-a-3") == "False/RouteCreated"; }));

  h.deleteNode("rt-a-2");
  REQUIRE(waitUntil([&] { return h.cloud().routes.size() == 3; }));
  CHECK(h.cloud().routes.count("10.244.2.0/24") == 0);
  CHECK(h.cloud().duplicate_route_creates == 0);
  c->stop();
  deleteNodes(h, {"rt-a-1", "rt-a-3"});
}

TEST_CASE("a failing create is reported on the node and retried; routes outside the CIDR stay") {
  LiveHarness h(
      "faults:\n"
      "  - {op: createRoute, code: UNAVAILABLE, message: route table busy, count: 1, "
      "nodes: [rt-b-1]}\n");
  h.createNode("rt-b-1", {"10.244.11.0/24"});
  REQUIRE(waitUntil([&] { return h.nodes().get("rt-b-1") != nullptr; }));
  plugin::Route foreign;
  foreign.target_node = "elsewhere";
  foreign.destination_cidr = "192.168.5.0/24";
  REQUIRE(h.provider().createRoute("kubernetes", "someone-else", foreign).ok());
  auto c = startController(h);
  REQUIRE(waitUntil([&] { return networkUnavailable(h, "rt-b-1") == "True/NoRouteCreated"; }));
  REQUIRE(waitUntil(
      [&] { return h.eventReasons("default", "rt-b-1").count("FailedToCreateRoute") >= 1; }));
  // The back-off (2 s) passes and the retry succeeds.
  REQUIRE(waitUntil([&] { return networkUnavailable(h, "rt-b-1") == "False/RouteCreated"; }));
  CHECK(h.cloud().routes.count("10.244.11.0/24") == 1);
  CHECK(h.cloud().routes.count("192.168.5.0/24") == 1);
  c->stop();
  deleteNodes(h, {"rt-b-1"});
}

TEST_CASE("many nodes at once: every route created exactly once") {
  LiveHarness h("latency: {createRoute: 5ms}\n");
  auto c = startController(h);
  std::vector<std::string> names;
  for (int i = 0; i < 150; ++i) {
    names.push_back("rt-c-" + std::to_string(i));
    h.createNode(names.back(), {"10.244." + std::to_string(100 + i / 2) + "." +
                                std::to_string((i % 2) * 128) + "/25"});
  }
  REQUIRE(waitUntil([&] { return h.cloud().routes.size() == names.size(); }));
  auto st = h.cloud();
  CHECK(st.duplicate_route_creates == 0);
  CHECK(st.route_creates == static_cast<int64_t>(names.size()));
  REQUIRE(waitUntil([&] {
    for (const auto& n : names) {
      auto node = h.nodes().get(n);
      if (!node)
        return false;
      auto cond = node->condition("NetworkUnavailable");
      if (!cond || cond->reason != "RouteCreated")
        return false;
    }
    return true;
  }));
  c->stop();
  deleteNodes(h, names);
}

}  // namespace ccm::controllers::route
