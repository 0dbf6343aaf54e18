// Nodes initialised together: a worker's share of the queue goes through each step as one
// batch of writes (KubeApi::writeBatch), yet every node keeps its own outcome. One node's
// provider error, failed write or conflict changes nothing for the others, and a node that
// fails a step is never written by a later one.
#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "host/controllers/common/well_known.hpp"
#include "host/controllers/node/cloud_node_controller.hpp"
#include "test/support/controller_harness.hpp"

namespace ccm::testing {
namespace {

const std::string kUninit(controllers::keys::kUninitializedTaint);

std::string statusPath(const std::string& name) { return "/api/v1/nodes/" + name + "/status"; }
std::string nodePath(const std::string& name) { return "/api/v1/nodes/" + name; }

// Instance metadata for every node but the ones told to fail; with `batch`, also through
// the batch capability (ccm.instances.batch/1), as both shipped providers have it.
class SomeFailProvider final : public UnimplementedProvider {
 public:
  SomeFailProvider(std::set<std::string> failing, bool batch)
      : UnimplementedProvider("some-fail"), failing_(std::move(failing)) {
    info_.instances_batch.present = batch;
  }
  StatusOr<std::optional<plugin::InstanceMetadata>> instanceMetadata(
      const plugin::NodeRef& node) override {
    auto md = metadata(node);
    if (!md.ok()) {
      return md.status();
    }
    return std::optional<plugin::InstanceMetadata>(std::move(md).value());
  }
  StatusOr<std::vector<plugin::MetadataResult>> instanceMetadataBatch(
      std::span<const plugin::NodeRef> nodes) override {
    std::vector<plugin::MetadataResult> out;
    for (const auto& n : nodes) {
      out.push_back(metadata(n));
    }
    return out;
  }
  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  void clearCalls() {
    std::lock_guard lock(mu_);
    calls_.clear();
  }

 private:
  plugin::MetadataResult metadata(const plugin::NodeRef& node) {
    std::string name(node.name);
    {
      std::lock_guard lock(mu_);
      calls_.push_back(name);
    }
    if (failing_.contains(name)) {
      return Status(Code::Unavailable, "the compute API is down");
    }
    plugin::InstanceMetadata md;
    md.provider_id = "fake://" + name;
    md.zone = "zone-a";
    md.addresses.push_back({"InternalIP", "10.9.0." + name.substr(1)});
    return md;
  }

  std::set<std::string> failing_;
  std::mutex mu_;
  std::vector<std::string> calls_;  // guarded by mu_
};

NodeSpec tainted(const std::string& name, const std::string& rv) {
  NodeSpec n;
  n.name = name;
  n.rv = rv;
  n.taints = {{kUninit, "NoSchedule"}};
  n.addresses = {{"Hostname", name}};
  return n;
}

std::string metadataAnswer(const std::string& name, const std::string& rv) {
  return R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":")" +
         name + R"(","resourceVersion":")" + rv + R"("}})";
}

std::string versionOf(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str());
  return d["metadata"]["resourceVersion"].GetString();
}

struct Run {
  Harness h;
  SomeFailProvider provider;
  controllers::ControllerContext ctx{h.options, h.api,    h.nodes,    h.services,
                                     provider,  h.events, h.registry, *h.clock};
  controllers::node::CloudNodeController controller{ctx};

  explicit Run(bool batch = true) : provider({"n5"}, batch) {
    for (int i = 1; i <= 5; ++i) {
      std::string name = "n" + std::to_string(i);
      h.addNode(tainted(name, "5"));
      h.api.setObject(statusPath(name), metadataAnswer(name, "6"));
    }
  }
  // The nodes the Synced events are about, in the order they were recorded.
  std::vector<std::string> synced() {
    h.events.processQueuedForTest();
    std::vector<std::string> out;
    for (const auto& c : h.api.callsFor("POST")) {
      rapidjson::Document d;
      d.Parse(c.body.c_str());
      if (d.IsObject() && d.HasMember("reason") && d["reason"] == "Synced") {
        out.emplace_back(d["involvedObject"]["name"].GetString());
      }
    }
    return out;
  }
};

TEST_CASE("five nodes in one batch: each gets its own outcome, the others are not held back") {
  Run r;
  // n2: the taint PATCH conflicts; the node is read again (version 7) and patched again.
  r.h.api.failNext("PATCH", nodePath("n2"),
                   kube::ApiStatus(409, kube::Reason::Conflict, "the object has been modified"));
  r.h.api.setObject(nodePath("n2"), tainted("n2", "7").json());
  // n3: the address write fails outright.
  r.h.api.failNext("PATCH", statusPath("n3"),
                   kube::ApiStatus(500, kube::Reason::InternalError, "etcd is down"));
  // n4: the cache is stale, so its conditional address write conflicts; the unconditional
  // one's answer shows the node as the server has it (version 9, still tainted).
  r.h.api.failNext("PATCH", statusPath("n4"),
                   kube::ApiStatus(409, kube::Reason::Conflict, "the object has been modified"));
  NodeSpec n4 = tainted("n4", "9");
  n4.labels = {{"team", "blue"}};
  r.h.api.setObject(statusPath("n4"), n4.json());
  // n5: the provider fails.

  auto statuses = r.controller.syncNodes({"n1", "n2", "n3", "n4", "n5", "gone"});
  REQUIRE(statuses.size() == 6);
  CHECK(statuses[0].ok());
  CHECK(statuses[1].ok());
  CHECK_FALSE(statuses[2].ok());
  CHECK(statuses[2].message().find("failed to write the cloud addresses of node n3") !=
        std::string::npos);
  CHECK(statuses[3].ok());
  CHECK_FALSE(statuses[4].ok());
  CHECK(statuses[4].message().find("failed to get instance metadata for node n5") !=
        std::string::npos);
  CHECK(statuses[5].ok());  // not in the cache: deleted meanwhile, nothing to do

  // Two batches: the address writes of the four nodes with metadata, then the taint PATCHes
  // of the three whose addresses were written.
  CHECK(r.h.api.batchSizes() == std::vector<size_t>{4, 3});
  CHECK(r.provider.calls().size() == 5);

  // Each taint PATCH is conditional on the version that node's own answer gave.
  std::map<std::string, std::vector<std::string>> versions;
  for (const auto& p : r.h.patches()) {
    if (p.path.ends_with("/status")) {
      continue;
    }
    versions[p.path.substr(p.path.rfind('/') + 1)].push_back(versionOf(p.body));
  }
  CHECK(versions["n1"] == std::vector<std::string>{"6"});
  CHECK(versions["n2"] == std::vector<std::string>{"6", "7"});  // the retry after a re-read
  CHECK(versions["n4"] == std::vector<std::string>{"9"});       // from the decoded answer
  CHECK(versions.count("n3") == 0);  // its addresses failed: never untainted
  CHECK(r.h.patches(statusPath("n5")).empty());
  CHECK(r.h.patches(nodePath("n5")).empty());
  CHECK(r.h.api.callsFor("GET").size() == 1);  // n2's re-read only
  // The nodes whose first taint PATCH held are finished before the one that had to wait for
  // a back-off and a re-read.
  CHECK(r.synced() == std::vector<std::string>{"n1", "n4", "n2"});
}

TEST_CASE("one node alone is written without a batch") {
  Run r;
  REQUIRE(r.controller.syncNode("n1").ok());
  CHECK(r.h.api.batchSizes() == std::vector<size_t>{1, 1});
  CHECK(r.h.patches().size() == 2);
  CHECK(r.synced() == std::vector<std::string>{"n1"});
}

TEST_CASE("a stopping controller asks the provider for nothing more and writes nothing") {
  Run r;
  r.controller.start();
  r.controller.stop();
  r.provider.clearCalls();
  r.h.api.clearCalls();
  auto statuses = r.controller.syncNodes({"n1", "n2"});
  for (const auto& s : statuses) {
    CHECK(s.code() == Code::Cancelled);
  }
  CHECK(r.provider.calls().empty());
  CHECK(r.h.patches().empty());
}

// Two workers started on a full queue (sixty tainted nodes), with this client-side rate limit
// (--kube-api-qps): every node is initialised, n5 (its metadata fails) is left tainted;
// returns the sizes of the write batches.
std::vector<size_t> initialiseSixty(Run& r, double qps) {
  for (int i = 6; i <= 60; ++i) {
    std::string name = "n" + std::to_string(i);
    r.h.addNode(tainted(name, "5"));
    r.h.api.setObject(statusPath(name), metadataAnswer(name, "6"));
  }
  r.h.options.concurrent_node_syncs = 2;
  r.h.options.kube_api_qps = qps;
  r.controller.start();
  REQUIRE(waitUntil([&] { return r.h.patches().size() >= 59 * 2; }));
  r.controller.stop();
  auto sizes = r.h.api.batchSizes();
  auto done = r.synced();
  CHECK(done.size() == 59);
  CHECK(std::find(done.begin(), done.end(), "n5") == done.end());
  return sizes;
}

size_t largest(const std::vector<size_t>& sizes) {
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

TEST_CASE("workers started on a full queue initialise every node, in batches") {
  Run r;
  auto sizes = initialiseSixty(r, -1);  // no client-side limit
  CHECK(largest(sizes) > 1);
  CHECK(largest(sizes) <= controllers::node::CloudNodeController::kInitBatch);
}

TEST_CASE("under a client-side rate limit, a batch holds at most 100 ms of tokens") {
  SUBCASE("upstream's default, 20 QPS: one node at a time") {
    Run r;
    CHECK(largest(initialiseSixty(r, 20)) == 1);
  }
  SUBCASE("100 QPS among two workers: five nodes") {
    Run r;
    auto sizes = initialiseSixty(r, 100);
    CHECK(largest(sizes) > 1);
    CHECK(largest(sizes) <= 5);
  }
}

TEST_CASE("without the batch capability, a worker takes one node at a time") {
  // Each node's metadata is its own provider call: a worker holding several nodes would keep
  // the first one waiting for the calls of all the others.
  Run r(false);
  CHECK(largest(initialiseSixty(r, -1)) == 1);
}

}  // namespace
}  // namespace ccm::testing
