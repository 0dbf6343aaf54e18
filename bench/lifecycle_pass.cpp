// lifecycle-pass: what one monitor pass of the cloud node lifecycle controller costs over N
// cached nodes, in process (no API server, no plugin). Fills a detached node informer with N
// kubelet-like nodes spread over three zones, `not_ready` of them NotReady (their instances
// exist), then runs `passes` monitor passes and prints one JSON object with the CPU the passes
// used (the controller's own ccm_controller_pass_cpu_seconds_total, helper threads included),
// their wall time and the provider calls they made. Not a test: it asserts nothing.
//
//   lifecycle-pass <nodes> <passes> [not_ready]
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/pass_world.hpp"
#include "host/controllers/lifecycle/node_lifecycle_controller.hpp"

using namespace ccm;

namespace {

// Every instance exists and is running; counts the existence calls.
class CountingProvider final : public testing::UnimplementedProvider {
 public:
  CountingProvider() : UnimplementedProvider("bench") {}
  StatusOr<plugin::Existence> instanceExists(const plugin::NodeRef&) override {
    calls_.fetch_add(1, std::memory_order_relaxed);
    return plugin::Existence::Exists;
  }
  uint64_t calls() const { return calls_.load(); }

 private:
  std::atomic<uint64_t> calls_{0};
};

// A node as a kubelet registers it (the usual labels, four conditions with Ready last).
std::string nodeJson(int i, bool ready) {
  std::string name = fmt::format("node-{:06d}", i);
  std::string zone = fmt::format("zone-{}", i % 3);
  std::string labels = fmt::format(
      R"({{"beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/os":"linux",)"
      R"("kubernetes.io/arch":"amd64","kubernetes.io/hostname":"{0}","kubernetes.io/os":"linux",)"
      R"("node.kubernetes.io/instance-type":"m1.large","topology.kubernetes.io/region":"r1",)"
      R"("topology.kubernetes.io/zone":"{1}","failure-domain.beta.kubernetes.io/zone":"{1}"}})",
      name, zone);
  std::string conds;
  for (const char* t : {"MemoryPressure", "DiskPressure", "PIDPressure"}) {
    conds += fmt::format(R"({{"type":"{}","status":"False","reason":"KubeletHasSufficient"}},)", t);
  }
  conds += fmt::format(R"({{"type":"Ready","status":"{}","reason":"KubeletReady"}})",
                       ready ? "True" : "False");
  return fmt::format(
      R"({{"kind":"Node","apiVersion":"v1","metadata":{{"name":"{0}","uid":"uid-{1:06d}",)"
      R"("resourceVersion":"{1}","labels":{2}}},"spec":{{"providerID":"fake://{0}"}},)"
      R"("status":{{"conditions":[{3}],"addresses":[{{"type":"InternalIP","address":"10.{4}.{5}.{6}"}}]}}}})",
      name, i + 1, labels, conds, (i >> 16) & 255, (i >> 8) & 255, i & 255);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: lifecycle-pass <nodes> <passes> [not_ready]\n");
    return 2;
  }
  int n = std::atoi(argv[1]);
  int passes = std::atoi(argv[2]);
  int not_ready = argc > 3 ? std::atoi(argv[3]) : 0;
  if (n <= 0 || passes <= 0 || not_ready < 0 || not_ready > n) {
    std::fprintf(stderr, "lifecycle-pass: bad arguments\n");
    return 2;
  }

  CountingProvider provider;
  bench::PassWorld world(provider);
  world.options.node_monitor_period = std::chrono::seconds(5);
  for (int i = 0; i < n; ++i) {
    // Spread the NotReady nodes evenly over the cluster.
    bool ready = not_ready == 0 || (static_cast<int64_t>(i) * not_ready) % n >= not_ready;
    if (!world.addNode(nodeJson(i, ready), "lifecycle-pass")) {
      return 1;
    }
  }

  controllers::lifecycle::NodeLifecycleController controller(world.context);
  controller.monitorNodes({});  // warm-up: metric children, buckets, zone maps
  const std::vector<std::string> label = {"cloud-node-lifecycle"};
  double cpu0 = world.registry.valueForTest("ccm_controller_pass_cpu_seconds_total", label);
  uint64_t calls0 = provider.calls();
  auto wall0 = std::chrono::steady_clock::now();
  for (int p = 0; p < passes; ++p) {
    controller.monitorNodes({});
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  double cpu = world.registry.valueForTest("ccm_controller_pass_cpu_seconds_total", label) - cpu0;
  double per_node_pass = static_cast<double>(n) * passes;
  std::printf(
      "{\"nodes\": %d, \"not_ready\": %d, \"passes\": %d, \"cpu_s\": %.6f, \"wall_s\": %.6f, "
      "\"cpu_us_per_node_pass\": %.4f, \"cpu_ms_per_pass\": %.3f, \"provider_calls\": %llu}\n",
      n, not_ready, passes, cpu, wall, cpu * 1e6 / per_node_pass, cpu * 1e3 / passes,
      static_cast<unsigned long long>(provider.calls() - calls0));
  return 0;
}
