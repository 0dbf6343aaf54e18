// route-pass: what one quiet full pass of the route controller costs over N cached nodes, in
// process (no API server, no plugin). Fills a detached node informer with N kubelet-like
// nodes, each with a pod CIDR and NetworkUnavailable=False, gives the controller a provider
// whose routes match them all, then runs `passes` full passes (a listing and a plan that
// changes nothing) and prints one JSON object with the CPU they used (the thread's CPU time,
// the listing's copy of the routes included, as a provider's answer would be), their wall
// time and the provider calls they made. Not a test: it asserts nothing.
//
//   route-pass <nodes> <passes>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/pass_world.hpp"
#include "host/controllers/common/pass_cost.hpp"
#include "host/controllers/route/route_controller.hpp"

using namespace ccm;

namespace {

// Lists the routes it was given; counts every call.
class RoutesProvider final : public testing::UnimplementedProvider {
 public:
  explicit RoutesProvider(std::vector<plugin::Route> routes)
      : UnimplementedProvider("bench"), routes_(std::move(routes)) {}
  StatusOr<std::vector<plugin::Route>> listRoutes(std::string_view) override {
    calls_.fetch_add(1, std::memory_order_relaxed);
    return routes_;
  }
  Status createRoute(std::string_view, std::string_view, const plugin::Route&) override {
    calls_.fetch_add(1, std::memory_order_relaxed);
    return okStatus();
  }
  Status deleteRoute(std::string_view, const plugin::Route&) override {
    calls_.fetch_add(1, std::memory_order_relaxed);
    return okStatus();
  }
  uint64_t calls() const { return calls_.load(); }

 private:
  std::vector<plugin::Route> routes_;
  std::atomic<uint64_t> calls_{0};
};

// A /26 of the cluster's 10.128.0.0/9 per node: room for 131,072 nodes.
std::string podCidr(int i) {
  uint32_t a = 0x0A800000u + static_cast<uint32_t>(i) * 64;
  return fmt::format("{}.{}.{}.{}/26", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

// A node as a kubelet registers it, with the pod CIDR the IPAM gave it and its route made.
std::string nodeJson(int i) {
  std::string name = fmt::format("node-{:06d}", i);
  std::string labels = fmt::format(
      R"({{"beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/os":"linux",)"
      R"("kubernetes.io/arch":"amd64","kubernetes.io/hostname":"{0}","kubernetes.io/os":"linux",)"
      R"("node.kubernetes.io/instance-type":"m1.large","topology.kubernetes.io/zone":"zone-{1}"}})",
      name, i % 3);
  std::string conds =
      R"({"type":"NetworkUnavailable","status":"False","reason":"RouteCreated"},)"
      R"({"type":"MemoryPressure","status":"False","reason":"KubeletHasSufficientMemory"},)"
      R"({"type":"Ready","status":"True","reason":"KubeletReady"})";
  return fmt::format(
      R"({{"kind":"Node","apiVersion":"v1","metadata":{{"name":"{0}","uid":"uid-{1:06d}",)"
      R"("resourceVersion":"{1}","labels":{2}}},"spec":{{"providerID":"fake://{0}",)"
      R"("podCIDR":"{3}","podCIDRs":["{3}"]}},"status":{{"conditions":[{4}],)"
      R"("addresses":[{{"type":"InternalIP","address":"10.{5}.{6}.{7}"}},)"
      R"({{"type":"Hostname","address":"{0}"}}]}}}})",
      name, i + 1, labels, podCidr(i), conds, (i >> 16) & 255, (i >> 8) & 255, i & 255);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: route-pass <nodes> <passes>\n");
    return 2;
  }
  int n = std::atoi(argv[1]);
  int passes = std::atoi(argv[2]);
  if (n <= 0 || n > 131072 || passes <= 0) {
    std::fprintf(stderr, "route-pass: bad arguments (1 to 131,072 nodes)\n");
    return 2;
  }

  std::vector<plugin::Route> routes;
  routes.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    plugin::Route r;
    r.name = fmt::format("route-{:06d}", i);
    r.target_node = fmt::format("node-{:06d}", i);
    r.destination_cidr = podCidr(i);
    routes.push_back(std::move(r));
  }
  RoutesProvider provider(std::move(routes));
  bench::PassWorld world(provider);
  for (int i = 0; i < n; ++i) {
    if (!world.addNode(nodeJson(i), "route-pass")) {
      return 1;
    }
  }

  auto cluster = controllers::Cidr::parse("10.128.0.0/9");
  controllers::route::RouteController controller(world.context, {*cluster});
  (void)controller.reconcile(true);  // warm-up: the first listing, metric children
  controller.waitForCalls();
  uint64_t calls0 = provider.calls();
  auto cpu0 = controllers::threadCpuTime();
  auto wall0 = std::chrono::steady_clock::now();
  for (int p = 0; p < passes; ++p) {
    (void)controller.reconcile(true);
  }
  controller.waitForCalls();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  double cpu = std::chrono::duration<double>(controllers::threadCpuTime() - cpu0).count();
  double per_node_pass = static_cast<double>(n) * passes;
  std::printf(
      "{\"nodes\": %d, \"passes\": %d, \"cpu_s\": %.6f, \"wall_s\": %.6f, "
      "\"cpu_us_per_node_pass\": %.4f, \"cpu_ms_per_pass\": %.3f, \"provider_calls\": %llu}\n",
      n, passes, cpu, wall, cpu * 1e6 / per_node_pass, cpu * 1e3 / passes,
      static_cast<unsigned long long>(provider.calls() - calls0));
  return 0;
}
