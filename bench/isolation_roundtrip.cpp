// isolation-roundtrip: the per-call cost of --provider-isolation=process. Times the round trip
// of one trivial provider call (instance_exists on fake-cloud) made through the in-process
// adapter (AbiProvider) and through an isolated child (IsolatedProvider), one caller at a
// time, and prints one JSON object. Run by bench/scenarios.py's isolation scenario:
//
//   isolation-roundtrip <cloud-controller-manager> <plugin-dir> <cloud-config> <calls>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "host/plugin/abi_provider.hpp"
#include "host/plugin/isolation/isolated_provider.hpp"
#include "host/plugin/plugin_loader.hpp"

using namespace ccm;
using namespace ccm::plugin;

namespace {

// Median and 99th percentile of `calls` round trips, in microseconds; -1 on a failed call.
struct Timing {
  double median_us = -1;
  double p99_us = -1;
};

Timing timeCalls(Provider& p, int calls) {
  NodeRef node;
  node.name = "bench-node-1";
  node.provider_id = "fake://bench-node-1";
  std::vector<double> us;
  us.reserve(static_cast<size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = p.instanceExists(node);
    auto t1 = std::chrono::steady_clock::now();
    if (!r.ok()) {
      std::fprintf(stderr, "call failed: %s\n", r.status().message().c_str());
      return {};
    }
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)]};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr,
                 "usage: %s <cloud-controller-manager> <plugin-dir> <cloud-config> <calls>\n",
                 argv[0]);
    return 2;
  }
  std::string binary = argv[1];
  std::string plugin_dir = argv[2];
  std::string config_path = argv[3];
  int calls = std::atoi(argv[4]);
  if (calls <= 0) {
    std::fprintf(stderr, "calls must be positive\n");
    return 2;
  }
  std::ifstream in(config_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string config = ss.str();

  LoadOptions load;
  load.plugin_dir = plugin_dir;
  load.name = "fake-cloud";
  auto loaded = PluginLoader::load(load);
  if (!loaded.ok()) {
    std::fprintf(stderr, "load: %s\n", loaded.status().message().c_str());
    return 1;
  }
  auto local = AbiProvider::create(*loaded, config, config_path, ProviderOptions{});
  if (!local.ok()) {
    std::fprintf(stderr, "create: %s\n", local.status().message().c_str());
    return 1;
  }
  (void)timeCalls(**local, std::min(calls, 200));  // warm-up
  Timing in_process = timeCalls(**local, calls);

  isolation::IsolationOptions iso;
  iso.provider = "fake-cloud";
  iso.executable = binary;
  iso.argv = {binary, "--cloud-provider=fake-cloud", "--cloud-provider-plugin-dir=" + plugin_dir,
              "--cloud-config=" + config_path, "--provider-isolation=process", "-v=0"};
  auto started = isolation::IsolatedProvider::start(iso, ProviderOptions{}, config, config_path);
  if (auto* failed = std::get_if<isolation::StartFailure>(&started)) {
    std::fprintf(stderr, "isolated start: %s\n", failed->status.message().c_str());
    return 1;
  }
  auto& child = std::get<0>(started);
  (void)timeCalls(*child, std::min(calls, 200));
  Timing isolated = timeCalls(*child, calls);
  std::printf("{\"calls\": %d, \"in_process_median_us\": %.2f, \"in_process_p99_us\": %.2f, "
              "\"isolated_median_us\": %.2f, \"isolated_p99_us\": %.2f}\n",
              calls, in_process.median_us, in_process.p99_us, isolated.median_us,
              isolated.p99_us);
  return in_process.median_us < 0 || isolated.median_us < 0 ? 1 : 0;
}
