// Unit tests of what one lifecycle monitor pass looks at: only nodes that are not Ready (or
// Ready with the shutdown taint to remove) reach the provider; zones are counted from the
// zone label, then the beta one, and follow relabels and deletions; a NOT_FOUND observation
// does not outlive a pass in which the node was Ready. Time is a FakeClock; the monitor
// thread is not started (the tests call monitorNodes themselves).
#include <doctest/doctest.h>

#include <atomic>
#include <set>

#include "host/controllers/lifecycle/node_lifecycle_controller.hpp"
#include "test/host/controllers/lifecycle/lifecycle_world.hpp"

namespace ccm::testing {
namespace {

using controllers::lifecycle::NodeLifecycleController;

constexpr const char* kZone = "topology.kubernetes.io/zone";
constexpr const char* kZoneBeta = "failure-domain.beta.kubernetes.io/zone";
constexpr const char* kShutdown = "node.cloudprovider.kubernetes.io/shutdown";

struct Fixture : LifecycleWorld {
  Fixture() { options.concurrent_node_syncs = 3; }
};

TEST_CASE("a pass hands only nodes that need a provider call or a taint removed to its workers") {
  Fixture f;
  f.addZone("a", 40);
  f.addZone("b", 40);
  f.setReady("a-3", false);
  f.setReady("b-7", false);
  f.setReady("b-8", false);
  NodeSpec tainted;  // Ready again, still with the shutdown taint
  tainted.name = "a-5";
  tainted.labels = {{kZone, "a"}};
  tainted.taints = {{kShutdown, "NoSchedule"}};
  f.put("MODIFIED", tainted);
  NodeSpec other_taint;  // Ready with another taint: nothing to do
  other_taint.name = "b-9";
  other_taint.labels = {{kZone, "b"}};
  other_taint.taints = {{"example.com/dedicated", "NoSchedule"}};
  f.put("MODIFIED", other_taint);

  NodeLifecycleController c(f.ctx);
  c.monitorNodes({});
  CHECK(c.checkedLastPassForTest() == 4);
  CHECK(f.provider.takeAsked() == std::set<std::string>{"a-3", "b-7", "b-8"});
  auto patches = f.api.callsFor("PATCH");
  REQUIRE(patches.size() == 1);
  CHECK(patches[0].path == "/api/v1/nodes/a-5");
  // Every node still counts in its zone; the pass covered all of them.
  auto zones = c.zonesForTest();
  CHECK(zones["a"].size == 40);
  CHECK(zones["a"].not_ready == 1);
  CHECK(zones["b"].size == 40);
  CHECK(zones["b"].not_ready == 2);
  CHECK(f.registry.valueForTest("ccm_controller_pass_objects", {"cloud-node-lifecycle"}) == 80);
  CHECK(f.registry.valueForTest("node_collector_zone_size", {"a"}) == 40);
  CHECK(f.registry.valueForTest("node_collector_unhealthy_nodes_in_zone", {"b"}) == 2);

  // Every node Ready and untainted: the pass asks nothing and writes nothing.
  for (const char* n : {"a-3", "b-7", "b-8"}) {
    f.setReady(n, true);
  }
  tainted.taints.clear();
  f.put("MODIFIED", tainted);
  c.monitorNodes({});
  CHECK(c.checkedLastPassForTest() == 0);
  CHECK(f.provider.takeAsked().empty());
  CHECK(f.api.callsFor("PATCH").size() == 1);
  CHECK(c.zonesForTest()["b"].not_ready == 0);
}

TEST_CASE("zones come from the zone label, then the beta one, and follow relabels and deletions") {
  Fixture f;
  auto add = [&](const std::string& name, std::map<std::string, std::string> labels,
                 bool ready) {
    NodeSpec n;
    n.name = name;
    n.labels = std::move(labels);
    n.ready = ready;
    f.put("ADDED", n);
  };
  add("n1", {{kZone, "a"}}, true);
  add("n2", {{kZone, "a"}, {kZoneBeta, "c"}}, false);  // the GA label wins
  add("n3", {{kZoneBeta, "b"}}, true);
  add("n4", {}, true);
  add("n5", {{kZone, "a"}}, true);
  NodeLifecycleController c(f.ctx);
  c.monitorNodes({});
  auto zones = c.zonesForTest();
  REQUIRE(zones.size() == 3);
  CHECK(zones["a"].size == 3);
  CHECK(zones["a"].not_ready == 1);
  CHECK(zones["b"].size == 1);
  CHECK(zones[""].size == 1);

  // n5 moves to b, n4 goes, n2 recovers.
  NodeSpec moved;
  moved.name = "n5";
  moved.labels = {{kZone, "b"}};
  f.put("MODIFIED", moved);
  NodeSpec gone;
  gone.name = "n4";
  f.put("DELETED", gone);
  NodeSpec back;
  back.name = "n2";
  back.labels = {{kZone, "a"}};
  f.put("MODIFIED", back);
  c.monitorNodes({});
  zones = c.zonesForTest();
  REQUIRE(zones.size() == 2);
  CHECK(zones["a"].size == 2);
  CHECK(zones["a"].not_ready == 0);
  CHECK(zones["b"].size == 2);
  CHECK(zones.count("") == 0);
}

TEST_CASE("a NOT_FOUND seen before the node was Ready again must be confirmed anew") {
  Fixture f;
  f.addZone("a", 10);
  f.addZone("b", 10);
  f.provider.setAbsent({"a-0"});
  f.setReady("a-0", false);
  NodeLifecycleController c(f.ctx);
  c.monitorNodes({});  // first NOT_FOUND
  f.clock.advance(std::chrono::seconds(5));
  f.setReady("a-0", true);
  c.monitorNodes({});  // Ready: not asked, and its observation is dropped
  CHECK(c.checkedLastPassForTest() == 0);
  f.clock.advance(std::chrono::seconds(5));
  f.setReady("a-0", false);
  c.monitorNodes({});  // NOT_FOUND again: a first observation, not a confirmation
  CHECK(f.deleted().empty());
  f.clock.advance(std::chrono::seconds(5));
  c.monitorNodes({});  // confirmed
  CHECK(f.deleted() == std::vector<std::string>{"a-0"});
}

TEST_CASE("a NOT_FOUND followed by another answer must be confirmed anew") {
  Fixture f;
  f.addZone("a", 10);
  f.addZone("b", 10);
  f.setReady("a-1", false);
  f.provider.setAbsent({"a-1"});
  NodeLifecycleController c(f.ctx);
  c.monitorNodes({});
  f.clock.advance(std::chrono::seconds(5));
  f.provider.setAbsent({});  // the instance is back
  c.monitorNodes({});
  f.clock.advance(std::chrono::seconds(5));
  f.provider.setAbsent({"a-1"});
  c.monitorNodes({});
  CHECK(f.deleted().empty());
  f.clock.advance(std::chrono::seconds(5));
  c.monitorNodes({});
  CHECK(f.deleted() == std::vector<std::string>{"a-1"});
}

}  // namespace
}  // namespace ccm::testing
