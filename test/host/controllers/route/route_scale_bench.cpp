// Not a test: measures the route controller's own throughput in process (an in-memory provider
// with a fixed call latency, FakeKubeApi). Prints figures; asserts only correctness.
//   CCM_BENCH_NODES (default 5000), CCM_BENCH_LATENCY_MS (default 20),
//   CCM_BENCH_CONCURRENCY (the provider's declared limit, default 0 = none).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "host/controllers/route/route_controller.hpp"
#include "test/support/controller_harness.hpp"

namespace ccm::controllers::route {
namespace {

int envInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : def;
}

}  // namespace

TEST_CASE("bench: routes for 5,000 nodes") {
  using namespace std::chrono;
  int nodes = envInt("CCM_BENCH_NODES", 5000);
  int latency_ms = envInt("CCM_BENCH_LATENCY_MS", 20);
  testing::Harness h;
  h.options.cluster_cidr = "10.0.0.0/8";
  h.provider.mutableInfo().routes.max_concurrency =
      static_cast<uint32_t>(envInt("CCM_BENCH_CONCURRENCY", 0));
  h.provider.setHook([&](const std::string& op, const testing::FakeProvider::Call&) {
    if (op == "create" || op == "list") {
      std::this_thread::sleep_for(milliseconds(latency_ms));
    }
  });
  auto ctx = h.context();
  auto made = makeRouteController(ctx);
  REQUIRE(made.ok());
  auto c = std::move(std::get<std::unique_ptr<Controller>>(*made));
  c->start();
  auto t0 = steady_clock::now();
  for (int i = 0; i < nodes; ++i) {
    testing::NodeSpec n;
    n.name = "node-" + std::to_string(i);
    n.pod_cidrs = {"10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24"};
    h.addNode(n);
  }
  REQUIRE(testing::waitUntil(
      [&] { return h.provider.routes().size() == static_cast<size_t>(nodes); }, minutes(5)));
  double took = duration<double>(steady_clock::now() - t0).count();
  c->stop();
  CHECK(h.provider.duplicateCreates() == 0);
  CHECK(h.provider.count("create") == static_cast<size_t>(nodes));
  std::printf(
      "nodes=%d latency=%dms: all routes in %.3f s, %zu creates, %d duplicates, peak %d calls "
      "in flight, %zu listings\n",
      nodes, latency_ms, took, h.provider.count("create"), h.provider.duplicateCreates(),
      h.provider.peakInFlight(), h.provider.count("list"));
}

}  // namespace ccm::controllers::route
