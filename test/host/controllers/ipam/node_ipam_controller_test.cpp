// Unit tests of the node IPAM controller's pod-CIDR write: a 409 (the node changed since the
// cached copy) is retried after re-reading the node, with no Warning event and no error log;
// the Warning CIDRAssignmentFailed event and the error log come only when the attempts are
// spent; the allocation and release counters always agree with the ranges in use.
#include "host/controllers/ipam/node_ipam_controller.hpp"

#include <doctest/doctest.h>

#include "host/kube/api/kube_api.hpp"
#include "test/support/controller_harness.hpp"
#include "test/support/log_capture.hpp"

namespace ccm::controllers::ipam {
namespace {

using ccm::testing::Harness;
using ccm::testing::LogCapture;
using ccm::testing::NodeSpec;

constexpr const char* kCluster = "10.244.0.0/16";

// The controller keeps a reference to its context: the harness holds both.
struct IpamHarness : Harness {
  ControllerContext ctx = context();
};

std::unique_ptr<NodeIpamController> makeController(IpamHarness& h) {
  auto cluster = Cidr::parse(kCluster);
  REQUIRE(cluster.ok());
  auto set = CidrSet::create(*cluster, 24);
  REQUIRE(set.ok());
  std::vector<CidrSet> sets;
  sets.push_back(std::move(set).value());
  return std::make_unique<NodeIpamController>(h.ctx, std::move(sets));
}

NodeSpec bareNode(const std::string& name, const std::string& rv) {
  NodeSpec n;
  n.name = name;
  n.rv = rv;
  return n;
}

kube::ApiStatus conflict(const std::string& name) {
  return kube::ApiStatus(409, kube::Reason::Conflict,
                         "Operation cannot be fulfilled on nodes \"" + name +
                             "\": the object has been modified; please apply your changes to "
                             "the latest version and try again");
}

double allocations(Harness& h) {
  return h.registry.valueForTest("node_ipam_controller_cidrset_cidrs_allocations_total",
                                 {kCluster});
}
double releases(Harness& h) {
  return h.registry.valueForTest("node_ipam_controller_cidrset_cidrs_releases_total", {kCluster});
}

// Counters agree with the set: allocations - releases == ranges in use.
void checkCountersAgree(Harness& h, NodeIpamController& c) {
  auto used = c.usage().at(0).first;
  CHECK(allocations(h) - releases(h) == static_cast<double>(used));
}

TEST_CASE("a 409 on the pod-CIDR write is retried with the node read again: no event, no error") {
  IpamHarness h;
  LogCapture logs;
  auto c = makeController(h);
  h.addNode(bareNode("n1", "1"));
  std::string path = kube::nodePath("n1").path();
  // The node controller wrote the node meanwhile: the server has it at resourceVersion 2.
  h.api.failNext("PATCH", path, conflict("n1"));
  h.api.setObject(path, bareNode("n1", "2").json());

  REQUIRE(c->syncNode("n1").ok());

  auto patches = h.patches(path);
  REQUIRE(patches.size() == 2);
  CHECK(patches[0].body.find("\"resourceVersion\":\"1\"") != std::string::npos);
  CHECK(patches[1].body.find("\"resourceVersion\":\"2\"") != std::string::npos);
  CHECK(patches[1].body.find("10.244.0.0/24") != std::string::npos);
  CHECK(h.eventReasons().empty());
  std::string text = logs.get();
  CHECK(text.find("\nE") == std::string::npos);
  CHECK(text.rfind('E', 0) == std::string::npos);
  CHECK(text.find("Failed to update") == std::string::npos);
  CHECK(logs.count("Allocated pod CIDRs to node") == 1);
  CHECK(allocations(h) == 1);
  CHECK(releases(h) == 0);
  CHECK(c->usage().at(0).first == 1);
  checkCountersAgree(h, *c);
}

TEST_CASE("a 409 whose re-read shows pod CIDRs written by another gives the reserved range back") {
  IpamHarness h;
  auto c = makeController(h);
  h.addNode(bareNode("n1", "1"));
  std::string path = kube::nodePath("n1").path();
  h.api.failNext("PATCH", path, conflict("n1"));
  NodeSpec written = bareNode("n1", "2");
  written.pod_cidrs = {"10.244.7.0/24"};
  h.api.setObject(path, written.json());

  REQUIRE(c->syncNode("n1").ok());

  CHECK(h.patches(path).size() == 1);
  CHECK(h.eventReasons().empty());
  CHECK(c->usage().at(0).first == 1);  // the node's own range, not the reserved one
  CHECK(allocations(h) == 2);          // the reserved range, then the node's
  CHECK(releases(h) == 1);             // the reserved range given back
  checkCountersAgree(h, *c);
}

TEST_CASE("retries spent: a Warning CIDRAssignmentFailed event and an error log") {
  IpamHarness h;
  LogCapture logs;
  auto c = makeController(h);
  h.addNode(bareNode("n1", "1"));
  std::string path = kube::nodePath("n1").path();
  for (int i = 0; i < 3; ++i) {
    h.api.failNext("PATCH", path, conflict("n1"));
  }
  h.api.setObject(path, bareNode("n1", "5").json());

  Status s = c->syncNode("n1");
  CHECK_FALSE(s.ok());
  CHECK(h.patches(path).size() == 3);
  auto events = h.eventList();
  REQUIRE(events.size() == 1);
  CHECK(events[0].first == "CIDRAssignmentFailed");
  CHECK(events[0].second == "Node n1 status is now: CIDRAssignmentFailed");
  CHECK(logs.count("Failed to update the node's pod CIDRs after multiple attempts") == 1);
  // The ranges went back: nothing in use, and the counters say the same.
  CHECK(c->usage().at(0).first == 0);
  CHECK(allocations(h) == 1);
  CHECK(releases(h) == 1);
  checkCountersAgree(h, *c);

  // The queue's next try succeeds and is counted once.
  REQUIRE(c->syncNode("n1").ok());
  CHECK(c->usage().at(0).first == 1);
  checkCountersAgree(h, *c);
}

TEST_CASE("counters agree with the ranges in use over allocation, repeat syncs and deletion") {
  IpamHarness h;
  auto c = makeController(h);
  for (int i = 0; i < 5; ++i) {
    std::string name = "n" + std::to_string(i);
    h.addNode(bareNode(name, "1"));
    REQUIRE(c->syncNode(name).ok());
  }
  // The informer brings the written nodes back with their ranges: occupying them again must
  // not count them twice.
  for (int i = 0; i < 5; ++i) {
    NodeSpec n = bareNode("n" + std::to_string(i), "2");
    n.pod_cidrs = {"10.244." + std::to_string(i) + ".0/24"};
    h.updateNode(n);
    REQUIRE(c->syncNode(n.name).ok());
  }
  CHECK(allocations(h) == 5);
  CHECK(c->usage().at(0).first == 5);
  checkCountersAgree(h, *c);
}

}  // namespace
}  // namespace ccm::controllers::ipam
