// Regression test (found by crash_restart_test.py): a node that was initialised by an earlier
// sync while the informer cache still showed it tainted was "initialised" a second time — a
// second Synced event, a second count in ccm_nodes_initialized_total and a second delay
// observation — when the worker that picked the key up again found it initialised meanwhile
// (after a refused PATCH, or in the answer to its own address write).
#include <doctest/doctest.h>

#include <string>

#include "host/controllers/common/well_known.hpp"
#include "host/controllers/node/cloud_node_controller.hpp"
#include "test/support/controller_harness.hpp"

namespace ccm::controllers::node {
namespace {

using ccm::testing::Harness;
using ccm::testing::MetadataProvider;
using ccm::testing::NodeSpec;

NodeSpec tainted(const std::string& rv, std::vector<std::pair<std::string, std::string>> addrs) {
  NodeSpec n;
  n.name = "n1";
  n.rv = rv;
  n.taints = {{std::string(keys::kUninitializedTaint), "NoSchedule"}};
  n.addresses = std::move(addrs);
  return n;
}

NodeSpec initialised(const std::string& rv,
                     std::vector<std::pair<std::string, std::string>> addrs) {
  NodeSpec n;
  n.name = "n1";
  n.rv = rv;
  n.provider_id = "fake://n1";
  n.labels = {{"topology.kubernetes.io/zone", "zone-a"}};
  n.addresses = std::move(addrs);
  return n;
}

struct Run {
  std::vector<std::string> reasons;
  std::string metrics;
  size_t init_patches = 0;
};

Run sync(Harness& h, MetadataProvider& provider) {
  controllers::ControllerContext ctx{h.options, h.api,    h.nodes,    h.services,
                                     provider,  h.events, h.registry, *h.clock};
  CloudNodeController c(ctx);
  REQUIRE(c.syncNode("n1").ok());
  Run r;
  r.reasons = h.eventReasons();
  r.metrics = h.registry.exposition();
  r.init_patches = h.patches(kube::nodePath("n1").path()).size();
  return r;
}

size_t count(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), s));
}

}  // namespace

TEST_CASE("control: a node initialised by this sync gets one Synced event and one count") {
  Harness h;
  std::vector<std::pair<std::string, std::string>> addrs = {{"InternalIP", "10.0.0.1"}};
  MetadataProvider provider(addrs);
  h.addNode(tainted("5", addrs));
  Run r = sync(h, provider);
  CHECK(r.init_patches == 1);
  CHECK(count(r.reasons, "Synced") == 1);
  CHECK(r.metrics.find("ccm_nodes_initialized_total 1") != std::string::npos);
}

TEST_CASE("a node found initialised after a refused PATCH is not reported as initialised again") {
  Harness h;
  std::vector<std::pair<std::string, std::string>> addrs = {{"InternalIP", "10.0.0.1"}};
  MetadataProvider provider(addrs);
  h.addNode(tainted("5", addrs));  // the lagging cache
  h.api.setObject(kube::nodePath("n1").path(), initialised("7", addrs).json());  // the server
  h.api.failNext("PATCH", kube::nodePath("n1").path(),
                 kube::ApiStatus(409, kube::Reason::Conflict, "the object has been modified"));
  Run r = sync(h, provider);
  CHECK(r.init_patches == 1);  // the refused one; no second write
  CHECK(count(r.reasons, "Synced") == 0);
  CHECK(r.metrics.find("ccm_nodes_initialized_total 0") != std::string::npos);
}

TEST_CASE("a node found initialised in the answer to the address write is left alone") {
  Harness h;
  std::vector<std::pair<std::string, std::string>> cloud = {{"InternalIP", "10.0.0.1"}};
  MetadataProvider provider(cloud);
  h.addNode(tainted("3", {}));  // so stale it predates the addresses
  // The write conditional on the cached version is refused; the unconditional one's answer
  // shows the node initialised.
  h.api.failNext("PATCH", kube::nodeStatusPath("n1").path(),
                 kube::ApiStatus(409, kube::Reason::Conflict, "the object has been modified"));
  h.api.setObject(kube::nodeStatusPath("n1").path(), initialised("7", cloud).json());
  Run r = sync(h, provider);
  CHECK(h.patches(kube::nodeStatusPath("n1").path()).size() == 2);
  CHECK(r.init_patches == 0);
  CHECK(count(r.reasons, "Synced") == 0);
  CHECK(r.metrics.find("ccm_nodes_initialized_total 0") != std::string::npos);
}

}  // namespace ccm::controllers::node
