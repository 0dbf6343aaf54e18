// MetadataBatcher: a worker's share in one provider call, announced nodes fetched in the order
// they arrived, results that expire without any batch walking the table, and a burst larger
// than the announcement limit that still costs a call per share, not per node.
#include "host/controllers/node/metadata_batcher.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/controllers/common/well_known.hpp"
#include "test/support/controller_harness.hpp"

namespace ccm::testing {
namespace {

using controllers::node::MetadataBatcher;
using NodePtr = std::shared_ptr<const kube::Node>;

// Answers every node's metadata through the batch capability and records each call's names.
class BatchProvider final : public UnimplementedProvider {
 public:
  explicit BatchProvider(uint32_t max_batch) : UnimplementedProvider("batch") {
    info_.instances_batch.present = true;
    info_.max_batch_size = max_batch;
  }
  StatusOr<std::vector<plugin::MetadataResult>> instanceMetadataBatch(
      std::span<const plugin::NodeRef> nodes) override {
    std::vector<std::string> names;
    std::vector<plugin::MetadataResult> out;
    for (const auto& n : nodes) {
      names.emplace_back(n.name);
      plugin::InstanceMetadata md;
      md.provider_id = fmt::format("fake://{}/{}", n.name, fetches_);
      out.emplace_back(std::move(md));
    }
    std::lock_guard lock(mu_);
    ++fetches_;
    calls_.push_back(std::move(names));
    return out;
  }
  std::vector<std::vector<std::string>> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  int fetches_ = 0;                               // guarded by mu_
  std::vector<std::vector<std::string>> calls_;  // guarded by mu_
};

// Tainted nodes by name, as the informer cache would hold them.
class Nodes {
 public:
  NodePtr add(const std::string& name) {
    NodeSpec spec;
    spec.name = name;
    spec.taints = {{std::string(controllers::keys::kUninitializedTaint), "NoSchedule"}};
    auto n = makeNode(spec);
    std::lock_guard lock(mu_);
    by_name_[name] = n;
    return n;
  }
  NodePtr get(std::string_view name) {
    std::lock_guard lock(mu_);
    auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : it->second;
  }
  MetadataBatcher::Lookup lookup() {
    return [this](std::string_view name) { return get(name); };
  }

 private:
  std::mutex mu_;
  std::map<std::string, NodePtr> by_name_;  // guarded by mu_
};

std::string nodeName(int i) { return fmt::format("node-{}", i); }

TEST_CASE("a worker's share is fetched in one call, with announced nodes in arrival order") {
  BatchProvider provider(10);
  Nodes nodes;
  FakeClock clock;
  MetadataBatcher batcher(provider, nodes.lookup(), clock);
  // Announced newest name first: arrival order is not name order.
  std::vector<NodePtr> all;
  for (int i = 29; i >= 0; --i) {
    all.push_back(nodes.add(nodeName(i)));
    batcher.prefetch(nodeName(i));
  }
  // The worker holds the first four to arrive (29..26).
  std::vector<NodePtr> share(all.begin(), all.begin() + 4);
  auto answers = batcher.getAll(share);
  REQUIRE(answers.size() == 4);
  for (size_t i = 0; i < share.size(); ++i) {
    REQUIRE(answers[i].ok());
    REQUIRE(answers[i]->has_value());
    CHECK((*answers[i])->provider_id == fmt::format("fake://{}/0", share[i]->name()));
  }
  auto calls = provider.calls();
  REQUIRE(calls.size() == 1);
  // Its four, then the next six in line (25..20), not the lowest names.
  CHECK(calls[0] == std::vector<std::string>{"node-29", "node-28", "node-27", "node-26",
                                             "node-25", "node-24", "node-23", "node-22",
                                             "node-21", "node-20"});
  CHECK(batcher.readyForTest() == 6);
  CHECK(batcher.pendingForTest() == 20);
  // The next worker's share was fetched by the first call: no call of its own.
  auto next = batcher.getAll(std::vector<NodePtr>(all.begin() + 4, all.begin() + 8));
  for (const auto& a : next) {
    REQUIRE(a.ok());
    CHECK((*a)->provider_id.ends_with("/0"));
  }
  CHECK(provider.calls().size() == 1);
}

TEST_CASE("results older than the limit are fetched again and leave the table") {
  BatchProvider provider(100);
  Nodes nodes;
  FakeClock clock;
  MetadataBatcher batcher(provider, nodes.lookup(), clock);
  std::vector<NodePtr> all;
  for (int i = 0; i < 50; ++i) {
    all.push_back(nodes.add(nodeName(i)));
    batcher.prefetch(nodeName(i));
  }
  (void)batcher.get(all[0]);
  CHECK(batcher.readyForTest() == 49);
  clock.advance(MetadataBatcher::kMaxAge + std::chrono::seconds(1));
  // node-1's result is too old: fetched again (a second call), and every expired result is
  // gone from the table.
  auto again = batcher.get(all[1]);
  REQUIRE(again.ok());
  CHECK((*again)->provider_id == "fake://node-1/1");
  CHECK(provider.calls().size() == 2);
  CHECK(batcher.readyForTest() == 0);
}

TEST_CASE("a node of the same name but another UID is not given the old node's result") {
  BatchProvider provider(100);
  Nodes nodes;
  FakeClock clock;
  MetadataBatcher batcher(provider, nodes.lookup(), clock);
  auto first = nodes.add("a");
  nodes.add("b");
  batcher.prefetch("b");
  (void)batcher.get(first);  // fetches b too
  NodeSpec again;
  again.name = "b";
  again.uid = "uid-b-2";
  auto replaced = makeNode(again);
  auto answer = batcher.get(replaced);
  REQUIRE(answer.ok());
  CHECK((*answer)->provider_id == "fake://b/1");
  CHECK(provider.calls().size() == 2);
}

TEST_CASE("a burst beyond the announcement limit costs a call per worker share, not per node") {
  BatchProvider provider(500);
  Nodes nodes;
  FakeClock clock;
  MetadataBatcher batcher(provider, nodes.lookup(), clock);
  const int total = static_cast<int>(MetadataBatcher::kMaxPending) + 5000;
  std::vector<NodePtr> all;
  for (int i = 0; i < total; ++i) {
    all.push_back(nodes.add(nodeName(i)));
    batcher.prefetch(nodeName(i));
  }
  CHECK(batcher.pendingForTest() == MetadataBatcher::kMaxPending);
  // Four workers take shares of 16 in queue order, as the cloud node controller does.
  constexpr size_t kShare = 16;
  std::mutex mu;
  size_t next = 0;
  size_t answered = 0;
  auto worker = [&] {
    for (;;) {
      std::vector<NodePtr> share;
      {
        std::lock_guard lock(mu);
        for (; share.size() < kShare && next < all.size(); ++next) {
          share.push_back(all[next]);
        }
      }
      if (share.empty()) {
        return;
      }
      auto answers = batcher.getAll(share);
      size_t ok = 0;
      for (const auto& a : answers) {
        ok += a.ok() && a->has_value() ? 1 : 0;
      }
      std::lock_guard lock(mu);
      answered += ok;
    }
  };
  std::vector<std::jthread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back(worker);
  }
  workers.clear();
  CHECK(answered == static_cast<size_t>(total));
  // 20,000 announced nodes in batches of 500 (40 calls, a few more where workers overlap);
  // the 5,000 never announced in shares of 16 (313 calls). One call per node would be 5,000.
  size_t calls = provider.calls().size();
  CHECK(calls >= 40 + 313);
  CHECK(calls <= 40 + 313 + 40);
  CHECK(batcher.readyForTest() == 0);
}

}  // namespace
}  // namespace ccm::testing
