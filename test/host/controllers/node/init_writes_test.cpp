// The cloud node controller's API writes when it initialises a node: the addresses go first,
// conditional on the cached version; the PATCH that sets providerID and labels and removes the
// taint is conditional on the version that write produced, read from its answer. When the
// cached version is stale (409), the addresses are written unconditionally and the answer is
// decoded, so the taint PATCH works from the node as the server has it. The watch event of
// the address write does not queue the node again.
#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <string>
#include <string_view>
#include <vector>

#include "host/controllers/common/well_known.hpp"
#include "host/controllers/node/cloud_node_controller.hpp"
#include "test/support/controller_harness.hpp"

namespace ccm::testing {
namespace {

constexpr const char* kStatusPath = "/api/v1/nodes/n1/status";
constexpr const char* kNodePath = "/api/v1/nodes/n1";
const std::string kUninit(controllers::keys::kUninitializedTaint);

struct Body {
  rapidjson::Document doc;
  explicit Body(const std::string& json) { doc.Parse(json.c_str()); }
  std::string version() const {
    if (!doc.IsObject() || !doc.HasMember("metadata") ||
        !doc["metadata"].HasMember("resourceVersion")) {
      return "";
    }
    return doc["metadata"]["resourceVersion"].GetString();
  }
  std::vector<std::string> taintKeys() const {
    std::vector<std::string> out;
    for (const auto& t : doc["spec"]["taints"].GetArray()) {
      out.emplace_back(t["key"].GetString());
    }
    return out;
  }
};

struct Run {
  Harness h;
  MetadataProvider provider{{{"InternalIP", "10.9.0.1"}}};
  controllers::ControllerContext ctx{h.options, h.api,    h.nodes,    h.services,
                                     provider,  h.events, h.registry, *h.clock};

  Run() {
    NodeSpec n;
    n.name = "n1";
    n.rv = "5";
    n.taints = {{kUninit, "NoSchedule"}, {"example.com/keep", "NoSchedule"}};
    n.addresses = {{"Hostname", "n1"}};
    h.addNode(n);
  }
  Status sync() {
    controllers::node::CloudNodeController controller(ctx);
    return controller.syncNode("n1");
  }
};

TEST_CASE("the addresses are written at the cached version, the taint PATCH at the one that produced") {
  Run r;
  // The server's answer to the addresses write, its metadata only (as asked): only its
  // version is read.
  r.h.api.setObject(kStatusPath, R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",)"
                                 R"("metadata":{"name":"n1","resourceVersion":"6"}})");
  REQUIRE(r.sync().ok());
  auto patches = r.h.patches();
  REQUIRE(patches.size() == 2);
  CHECK(patches[0].path == kStatusPath);
  CHECK(patches[0].options.want_response);
  CHECK(patches[0].options.metadata_only);
  CHECK_FALSE(patches[1].options.want_response);  // the taint PATCH's answer is not read
  Body status(patches[0].body);
  CHECK(status.version() == "5");
  CHECK(patches[0].body.find("10.9.0.1") != std::string::npos);
  CHECK(patches[1].path == kNodePath);
  Body node(patches[1].body);
  CHECK(node.version() == "6");
  CHECK(node.doc["spec"]["providerID"].GetString() == std::string("fake://n1"));
  CHECK(node.taintKeys() == std::vector<std::string>{"example.com/keep"});
  CHECK(r.h.api.callsFor("GET").empty());
  CHECK(r.h.eventReasons() == std::vector<std::string>{"Synced"});
}

TEST_CASE("an answer without a version leaves the cached one as the taint PATCH's precondition") {
  Run r;
  r.h.api.setObject(kStatusPath, "{}");
  REQUIRE(r.sync().ok());
  auto patches = r.h.patches();
  REQUIRE(patches.size() == 2);
  // A real server answers 409 to this one, and the node is read again (retry loop).
  CHECK(Body(patches[1].body).version() == "5");
}

// (A node the unconditional write's answer shows initialised is left alone:
// test/reliability/node_init_once_test.cpp.)
TEST_CASE("a stale cached version: the addresses are written again unconditionally") {
  Run r;
  r.h.api.failNext("PATCH", kStatusPath,
                   kube::ApiStatus(409, kube::Reason::Conflict, "the object has been modified"));
  NodeSpec server;  // the node as the server has it: another taint was added meanwhile
  server.name = "n1";
  server.rv = "9";
  server.taints = {{kUninit, "NoSchedule"}, {"example.com/keep", "NoSchedule"},
                   {"example.com/new", "NoExecute"}};
  r.h.api.setObject(kStatusPath, server.json());
  REQUIRE(r.sync().ok());
  auto patches = r.h.patches();
  REQUIRE(patches.size() == 3);
  CHECK(Body(patches[0].body).version() == "5");
  CHECK(patches[0].options.metadata_only);
  CHECK(patches[1].path == kStatusPath);
  CHECK(Body(patches[1].body).version().empty());
  CHECK(patches[1].options.want_response);  // decoded: the whole object is asked for
  CHECK_FALSE(patches[1].options.metadata_only);
  CHECK(patches[1].body.find("10.9.0.1") != std::string::npos);
  Body node(patches[2].body);
  CHECK(node.version() == "9");
  CHECK(node.taintKeys() == std::vector<std::string>{"example.com/keep", "example.com/new"});
  CHECK(r.h.eventReasons() == std::vector<std::string>{"Synced"});
}

TEST_CASE("a failed addresses write leaves the node tainted and untouched") {
  Run r;
  r.h.api.failNext("PATCH", kStatusPath,
                   kube::ApiStatus(500, kube::Reason::InternalError, "etcd is down"));
  Status st = r.sync();
  CHECK_FALSE(st.ok());
  CHECK(st.message().find("failed to write the cloud addresses of node n1") != std::string::npos);
  CHECK(r.h.patches().size() == 1);
  CHECK(r.h.patches(kNodePath).empty());
}

std::string nodeQueueAdds(metrics::Registry& registry) {
  std::string text = registry.exposition();
  std::string_view key = "workqueue_adds_total{name=\"Nodes\"} ";
  auto at = text.find(key);
  REQUIRE(at != std::string::npos);
  at += key.size();
  return text.substr(at, text.find('\n', at) - at);
}

TEST_CASE("the watch event of the address write does not queue the node again; others do") {
  Run r;
  r.h.api.setObject(kStatusPath, R"({"kind":"Node","metadata":{"name":"n1","resourceVersion":"6"}})");
  controllers::node::CloudNodeController controller(r.ctx);
  controller.start();
  NodeSpec n;
  n.name = "n1";
  n.rv = "5";
  n.taints = {{kUninit, "NoSchedule"}};
  n.addresses = {{"Hostname", "n1"}};
  r.h.addNode(n);
  REQUIRE(waitUntil([&] { return r.h.patches().size() == 2; }));
  CHECK(nodeQueueAdds(r.h.registry) == "1");
  // The address write's own event: still tainted (the cache has not seen the taint PATCH).
  n.rv = "6";
  n.addresses = {{"InternalIP", "10.9.0.1"}};
  r.h.updateNode(n);
  CHECK(nodeQueueAdds(r.h.registry) == "1");
  // Anything else about a tainted node is queued as before.
  n.rv = "7";
  r.h.updateNode(n);
  CHECK(nodeQueueAdds(r.h.registry) == "2");
  controller.stop();
}

}  // namespace
}  // namespace ccm::testing
