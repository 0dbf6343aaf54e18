// Unit tests of the lifecycle controller's per-zone deletion queues: confirmed deletions the
// zone's budget does not allow at once are made as its token bucket refills (not one per
// monitor pass), a queued node that recovered or re-registered is never deleted, and a
// partition or a small partially disrupted zone still deletes nothing. Time is a FakeClock;
// the monitor thread is not started (the test calls monitorNodes/deleteQueued itself).
#include <doctest/doctest.h>

#include <set>

#include "host/controllers/lifecycle/node_lifecycle_controller.hpp"
#include "test/host/controllers/lifecycle/lifecycle_world.hpp"
#include "test/support/log_capture.hpp"

namespace ccm::testing {
namespace {

using controllers::lifecycle::NodeLifecycleController;

struct Fixture : LifecycleWorld {
  double deferred(const std::string& zone, const std::string& reason) const {
    double v = registry.valueForTest("ccm_node_deletions_deferred_total", {zone, reason});
    return v < 0 ? 0 : v;
  }

  Fixture() {
    options.secondary_node_eviction_rate = 0.01;
    options.concurrent_node_syncs = 2;
  }
};

TEST_CASE("confirmed deletions beyond the burst are made as the zone's bucket refills") {
  Fixture f;
  f.addZone("a", 10);
  f.addZone("b", 10);
  std::set<std::string> gone;
  for (int i = 0; i < 5; ++i) {
    f.setReady("a-" + std::to_string(i), false);
    gone.insert("a-" + std::to_string(i));
  }
  f.provider.setAbsent(gone);
  NodeLifecycleController c(f.ctx);
  c.monitorNodes({});  // first NOT_FOUND of each: nothing deleted yet
  // Each pass's cost is recorded, with the nodes it covered.
  const std::vector<std::string> lifecycle = {"cloud-node-lifecycle"};
  CHECK(f.registry.valueForTest("ccm_controller_pass_duration_seconds", lifecycle) == 1);
  CHECK(f.registry.valueForTest("ccm_controller_pass_objects", lifecycle) == 20);
  CHECK(f.deleted().empty());
  CHECK(c.queuedForTest() == 0);
  f.clock.advance(std::chrono::seconds(5));
  c.monitorNodes({});  // confirmed: the burst (1) goes at once, 4 wait for tokens
  CHECK(f.deleted().size() == 1);
  CHECK(c.queuedForTest() == 4);
  // A healthy zone whose budget is spent: the deferral is the rate limit's.
  CHECK(f.deferred("a", "rate_limit") == 4);
  CHECK(f.deferred("a", "partial_disruption") == 0);
  auto next = c.deleteQueued();  // no time has passed: no token
  CHECK(f.deleted().size() == 1);
  REQUIRE(next.has_value());
  CHECK(*next == std::chrono::seconds(1));
  for (int step = 2; step <= 5; ++step) {
    f.clock.advance(std::chrono::milliseconds(500));
    c.deleteQueued();
    CHECK(f.deleted().size() == static_cast<size_t>(step - 1));  // half a token: still waiting
    f.clock.advance(std::chrono::milliseconds(500));
    c.deleteQueued();
    CHECK(f.deleted().size() == static_cast<size_t>(step));
  }
  CHECK(c.queuedForTest() == 0);
  CHECK_FALSE(c.deleteQueued().has_value());
  // Oldest first, and only the vanished nodes.
  auto d = f.deleted();
  CHECK(std::set<std::string>(d.begin(), d.end()) == gone);
}

TEST_CASE("a queued node that is Ready again, or re-registered, is not deleted") {
  Fixture f;
  f.addZone("a", 10);
  f.addZone("b", 10);
  std::set<std::string> gone = {"a-0", "a-1", "a-2"};
  for (const auto& n : gone) {
    f.setReady(n, false);
  }
  f.provider.setAbsent(gone);
  NodeLifecycleController c(f.ctx);
  c.monitorNodes({});
  f.clock.advance(std::chrono::seconds(5));
  c.monitorNodes({});
  REQUIRE(f.deleted().size() == 1);
  REQUIRE(c.queuedForTest() == 2);
  std::string first = f.deleted()[0];
  std::vector<std::string> rest;
  for (const auto& n : gone) {
    if (n != first) {
      rest.push_back(n);
    }
  }
  f.setReady(rest[0], true);                 // recovered
  f.setReady(rest[1], false, "uid-reborn");  // a new node under the same name
  f.clock.advance(std::chrono::seconds(3));
  c.deleteQueued();
  CHECK(f.deleted().size() == 1);
  CHECK(c.queuedForTest() == 0);
}

TEST_CASE("a partition deletes nothing, however long the queue waits") {
  Fixture f;
  f.addZone("a", 4);
  f.addZone("b", 4);
  std::set<std::string> gone;
  for (const auto& z : {"a", "b"}) {
    for (int i = 0; i < 4; ++i) {
      std::string n = std::string(z) + "-" + std::to_string(i);
      f.setReady(n, false);
      gone.insert(n);
    }
  }
  f.provider.setAbsent(gone);
  NodeLifecycleController c(f.ctx);
  c.monitorNodes({});
  f.clock.advance(std::chrono::seconds(5));
  c.monitorNodes({});
  CHECK(c.queuedForTest() == 8);
  CHECK(f.deferred("a", "partition") == 4);
  CHECK(f.deferred("b", "partition") == 4);
  CHECK(f.deferred("a", "rate_limit") + f.deferred("a", "partial_disruption") == 0);
  CHECK_FALSE(c.deleteQueued().has_value());  // rate 0: no token will ever come
  f.clock.advance(std::chrono::seconds(60));
  c.deleteQueued();
  CHECK(f.deleted().empty());
}

TEST_CASE("a small partially disrupted zone deletes nothing; a large one at the secondary rate") {
  Fixture f;
  f.addZone("small", 5);   // <= --large-cluster-size-threshold (50): rate 0
  f.addZone("large", 60);  // > 50: secondary rate
  f.addZone("ok", 5);
  std::set<std::string> gone;
  for (int i = 0; i < 4; ++i) {
    gone.insert("small-" + std::to_string(i));
  }
  for (int i = 0; i < 40; ++i) {
    gone.insert("large-" + std::to_string(i));
  }
  for (const auto& n : gone) {
    f.setReady(n, false);
  }
  f.provider.setAbsent(gone);
  NodeLifecycleController c(f.ctx);
  LogCapture logs;
  c.monitorNodes({});
  f.clock.advance(std::chrono::seconds(5));
  c.monitorNodes({});
  // "ccm_node_deletions_deferred_total{reason="rate_limit"} when the cause is a partially
  // disrupted zone" was the old confusion: these zones say partial_disruption.
  CHECK(f.deferred("small", "partial_disruption") == 4);
  CHECK(f.deferred("small", "rate_limit") == 0);
  CHECK(f.deferred("large", "partial_disruption") == 39);
  CHECK(f.deferred("large", "rate_limit") == 0);
  CHECK(logs.count("Node deletion postponed: the zone is partially disrupted") == 43);
  CHECK(logs.get().find("node=\"small-0\" zone=\"small\" zoneState=\"PartialDisruption\" "
                        "deletionRate=0 reason=\"partial_disruption\"") != std::string::npos);
  CHECK(logs.count("deletion rate limit is spent") == 0);
  auto zones = c.zonesForTest();
  CHECK(zones["small"].deletion_rate == 0);
  CHECK(zones["large"].deletion_rate == doctest::Approx(0.01));
  // The large zone's fresh bucket allows one deletion; the next token takes 100 s.
  CHECK(f.deleted().size() == 1);
  CHECK(f.deleted()[0].rfind("large-", 0) == 0);
  f.clock.advance(std::chrono::seconds(50));
  c.deleteQueued();
  CHECK(f.deleted().size() == 1);
  f.clock.advance(std::chrono::seconds(51));
  c.deleteQueued();
  CHECK(f.deleted().size() == 2);
  for (const auto& d : f.deleted()) {
    CHECK(d.rfind("small-", 0) != 0);
  }
}

}  // namespace
}  // namespace ccm::testing
