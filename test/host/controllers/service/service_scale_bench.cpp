// Not a test: measures the service controller's own throughput in process (FakeKubeApi, no
// API latency; an in-memory provider with a fixed call latency). Prints figures; asserts only
// correctness. Run: build/test/host/controllers/service/service_scale_bench [-- options]
//   CCM_BENCH_SERVICES (default 1000), CCM_BENCH_NODES (default 100),
//   CCM_BENCH_LATENCY_MS (default 20), CCM_BENCH_WORKERS (default 10).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "host/controllers/service/service_controller.hpp"
#include "test/support/controller_harness.hpp"

namespace ccm::controllers::service {
namespace {

int envInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : def;
}

}  // namespace

TEST_CASE("bench: 1,000 services at once, then one node joining") {
  using namespace std::chrono;
  int services = envInt("CCM_BENCH_SERVICES", 1000);
  int nodes = envInt("CCM_BENCH_NODES", 100);
  int latency_ms = envInt("CCM_BENCH_LATENCY_MS", 20);
  testing::Harness h;
  h.options.concurrent_service_syncs = envInt("CCM_BENCH_WORKERS", 10);
  for (int i = 0; i < nodes; ++i) {
    testing::NodeSpec n;
    n.name = "node-" + std::to_string(i);
    n.provider_id = "fake://" + n.name;
    h.addNode(n);
  }
  h.provider.setHook([&](const std::string& op, const testing::FakeProvider::Call&) {
    if (op == "ensure" || op == "update") {
      std::this_thread::sleep_for(milliseconds(latency_ms));
    }
  });
  auto ctx = h.context();
  ServiceController c(ctx);
  c.start();
  auto t0 = steady_clock::now();
  for (int i = 0; i < services; ++i) {
    testing::SvcSpec s;
    s.name = "svc-" + std::to_string(i);
    s.uid = "uid-" + std::to_string(i);
    h.addService(s);
  }
  REQUIRE(testing::waitUntil(
      [&] { return h.api.callsFor("PATCH").size() >= static_cast<size_t>(2 * services); },
      minutes(5)));
  double created = duration<double>(steady_clock::now() - t0).count();

  h.provider.clearCalls();
  auto t1 = steady_clock::now();
  testing::NodeSpec joining;
  joining.name = "node-joining";
  joining.provider_id = "fake://node-joining";
  h.addNode(joining);
  REQUIRE(testing::waitUntil(
      [&] { return h.provider.count("update") >= static_cast<size_t>(services); }, minutes(5)));
  double joined = duration<double>(steady_clock::now() - t1).count();
  size_t join_updates = h.provider.count("update");
  CHECK(join_updates == static_cast<size_t>(services));
  std::printf(
      "services=%d nodes=%d latency=%dms workers=%d: all ensured with status in %.3f s; one "
      "node join reached every load balancer in %.3f s with %zu UpdateLoadBalancer calls\n",
      services, nodes, latency_ms, h.options.concurrent_service_syncs, created, joined,
      join_updates);

  // A bring-up: many nodes registering one after another while every LB exists.
  int burst = envInt("CCM_BENCH_BURST", 2000);
  h.provider.clearCalls();
  auto t2 = steady_clock::now();
  for (int i = 0; i < burst; ++i) {
    testing::NodeSpec n;
    n.name = "burst-" + std::to_string(i);
    n.provider_id = "fake://" + n.name;
    h.addNode(n);
  }
  size_t want = static_cast<size_t>(nodes + 1 + burst);
  REQUIRE(testing::waitUntil(
      [&] {
        for (const auto& [_, lb] : h.provider.loadBalancers()) {
          if (lb.nodes.size() != want)
            return false;
        }
        return true;
      },
      minutes(10)));
  double burst_took = duration<double>(steady_clock::now() - t2).count();
  c.stop();
  std::printf(
      "%d nodes registering one by one: every load balancer had all of them after %.3f s, "
      "%zu UpdateLoadBalancer calls (%.1f per service)\n",
      burst, burst_took, h.provider.count("update"),
      static_cast<double>(h.provider.count("update")) / services);
}

}  // namespace ccm::controllers::service
