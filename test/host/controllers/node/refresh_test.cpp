// The cloud node controller's periodic address refresh with a batch-capable provider: every
// initialised node is asked about exactly once, changed addresses are written, and the nodes
// handed to the provider at once stay bounded (each is copied into the call's input), however
// many nodes there are and however many workers are configured.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "host/controllers/node/cloud_node_controller.hpp"
#include "test/support/controller_harness.hpp"
#include "test/support/log_capture.hpp"

namespace ccm::testing {
namespace {

std::string addressOf(int i) { return "10.1." + std::to_string(i / 200) + "." + std::to_string(i % 200); }

// Answers every node with InternalIP 10.1.x.y (its index), and records how many nodes are
// inside instanceMetadataBatch at the same time.
class BatchProvider final : public UnimplementedProvider {
 public:
  explicit BatchProvider(uint32_t max_batch) : UnimplementedProvider("batch") {
    info_.instances_batch.present = true;
    info_.max_batch_size = max_batch;
  }
  StatusOr<std::vector<plugin::MetadataResult>> instanceMetadataBatch(
      std::span<const plugin::NodeRef> nodes) override {
    size_t now = in_flight_ += nodes.size();
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    // Long enough for the other workers' calls to overlap with this one.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<plugin::MetadataResult> out;
    {
      std::lock_guard lock(mu_);
      for (const auto& n : nodes) {
        std::string name(n.name);
        ++asked_[name];
        plugin::InstanceMetadata md;
        md.provider_id = "batch://" + name;
        md.addresses.push_back({"InternalIP", addressOf(std::stoi(name.substr(2)))});
        out.emplace_back(std::move(md));
      }
    }
    in_flight_ -= nodes.size();
    return out;
  }
  size_t peak() const { return peak_.load(); }
  std::map<std::string, int> asked() {
    std::lock_guard lock(mu_);
    return asked_;
  }

 private:
  std::atomic<size_t> in_flight_{0};
  std::atomic<size_t> peak_{0};
  std::mutex mu_;
  std::map<std::string, int> asked_;  // guarded by mu_
};

void refreshOnce(uint32_t max_batch, int nodes, int workers) {
  Harness h;
  h.options.concurrent_node_syncs = workers;
  BatchProvider provider(max_batch);
  for (int i = 0; i < nodes; ++i) {
    NodeSpec n;
    n.name = "n-" + std::to_string(i);
    n.provider_id = "batch://" + n.name;
    // Every third node has a stale address the refresh must correct.
    n.addresses = {{"InternalIP", i % 3 == 0 ? "192.168.0.1" : addressOf(i)}};
    h.addNode(n);
  }
  // One node still being initialised: not the refresh's business.
  NodeSpec tainted;
  tainted.name = "n-" + std::to_string(nodes);
  tainted.taints = {{"node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"}};
  h.addNode(tainted);

  controllers::ControllerContext ctx{h.options, h.api,    h.nodes,    h.services,
                                     provider,  h.events, h.registry, *h.clock};
  controllers::node::CloudNodeController controller(ctx);
  std::stop_source stop;
  controller.refreshAddresses(stop.get_token());

  auto asked = provider.asked();
  CHECK(asked.size() == static_cast<size_t>(nodes));
  CHECK(std::all_of(asked.begin(), asked.end(), [](const auto& kv) { return kv.second == 1; }));
  CHECK(asked.count(tainted.name) == 0);
  size_t chunk = max_batch > 0 ? max_batch : 500;
  CHECK(provider.peak() >= chunk);  // batches were used
  CHECK(provider.peak() <= std::max<size_t>(1000, chunk));

  auto patches = h.patches();
  CHECK(patches.size() == static_cast<size_t>((nodes + 2) / 3));
  for (const auto& p : patches) {
    INFO(p.path);
    CHECK(p.path.ends_with("/status"));
    int i = std::stoi(p.path.substr(p.path.find("/nodes/n-") + 9));
    CHECK(i % 3 == 0);
    CHECK(p.body.find(addressOf(i)) != std::string::npos);
  }

  // The pass's cost is recorded: one pass over the initialised nodes, some CPU (the pass
  // copied and compared thousands of nodes), a wall time.
  CHECK(h.registry.valueForTest("ccm_controller_pass_duration_seconds", {"cloud-node"}) == 1);
  CHECK(h.registry.valueForTest("ccm_controller_pass_objects", {"cloud-node"}) == nodes);
  CHECK(h.registry.valueForTest("ccm_controller_pass_cpu_seconds_total", {"cloud-node"}) > 0);
  controller.refreshAddresses(stop.get_token());
  CHECK(h.registry.valueForTest("ccm_controller_pass_duration_seconds", {"cloud-node"}) == 2);
}

TEST_CASE("a batched address refresh asks about each node once and bounds the nodes in flight") {
  SUBCASE("provider batches of 100, 20 workers") { refreshOnce(100, 3000, 20); }
  SUBCASE("no provider limit (chunks of 500), 10 workers") { refreshOnce(0, 3000, 10); }
  SUBCASE("a provider limit above the bound runs one chunk at a time") { refreshOnce(1500, 3000, 10); }
}

}  // namespace

// Refuses every node: credentials (or anything else) failing.
class RefusingProvider final : public UnimplementedProvider {
 public:
  explicit RefusingProvider(Status answer) : UnimplementedProvider("refusing"), answer_(answer) {
    info_.instances_batch.present = true;
  }
  StatusOr<std::vector<plugin::MetadataResult>> instanceMetadataBatch(
      std::span<const plugin::NodeRef> nodes) override {
    std::vector<plugin::MetadataResult> out;
    for (size_t i = 0; i < nodes.size(); ++i) {
      out.emplace_back(answer_);
    }
    return out;
  }

 private:
  Status answer_;
};

// The severity letter of the (text format) log line holding needle, or '?'.
char severityOf(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) {
    return '?';
  }
  size_t start = text.rfind('\n', at);
  return text[start == std::string::npos ? 0 : start + 1];
}

void refreshWith(const Status& answer) {
  Harness h;
  RefusingProvider provider(answer);
  NodeSpec n;
  n.name = "n-1";
  n.provider_id = "refusing://n-1";
  n.addresses = {{"InternalIP", "10.1.0.1"}};
  h.addNode(n);
  controllers::ControllerContext ctx{h.options, h.api,    h.nodes,    h.services,
                                     provider,  h.events, h.registry, *h.clock};
  controllers::node::CloudNodeController controller(ctx);
  std::stop_source stop;
  controller.refreshAddresses(stop.get_token());
  CHECK(h.patches().empty());
}

TEST_CASE("a refused credential during the address refresh is an error, other failures warnings") {
  {
    LogCapture logs;
    refreshWith(Status(Code::Unauthenticated, "Keystone refused the credentials"));
    std::string text = logs.get();
    CHECK(severityOf(text, "the cloud refused the provider's credentials") == 'E');
  }
  {
    LogCapture logs;
    refreshWith(Status(Code::Unavailable, "Nova is down"));
    std::string text = logs.get();
    CHECK(severityOf(text, "Cannot refresh node addresses") == 'W');
  }
}

}  // namespace ccm::testing
