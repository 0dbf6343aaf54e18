// Throughput of the patch engine on the hot requests of a CCM-driven cluster: the kubelet's node
// status heartbeat, the route controller's node status patch, a taint patch and a label merge
// patch, applied to a realistic node (40 images). Prints microseconds per patch, for the engine
// alone and for a store-like round (copy of the stored object, patch, serialisation).
// Built on request only: ninja -C <build> kubesim/patch/kubesim_patch_bench
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "kubesim/patch/patch.hpp"

namespace {

using ccm::kubesim::PatchType;

std::string makeNode() {
  std::string node = R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"node-0001",
    "uid":"6a0f2b7e-0000-4000-8000-000000000001","resourceVersion":"123456",
    "creationTimestamp":"2026-07-24T09:00:00Z",
    "labels":{"beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/os":"linux",
      "kubernetes.io/arch":"amd64","kubernetes.io/hostname":"node-0001","kubernetes.io/os":"linux",
      "node.kubernetes.io/instance-type":"m5.xlarge","topology.kubernetes.io/region":"eu-1",
      "topology.kubernetes.io/zone":"eu-1a"},
    "annotations":{"node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true"}},
    "spec":{"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"],"providerID":"fake://node-0001"},
    "status":{"capacity":{"cpu":"4","ephemeral-storage":"101430960Ki","hugepages-2Mi":"0","memory":"16393220Ki","pods":"110"},
      "allocatable":{"cpu":"4","ephemeral-storage":"93478772582","hugepages-2Mi":"0","memory":"16290820Ki","pods":"110"},
      "conditions":[
        {"type":"MemoryPressure","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:00Z","reason":"KubeletHasSufficientMemory","message":"kubelet has sufficient memory available"},
        {"type":"DiskPressure","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:00Z","reason":"KubeletHasNoDiskPressure","message":"kubelet has no disk pressure"},
        {"type":"PIDPressure","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:00Z","reason":"KubeletHasSufficientPID","message":"kubelet has sufficient PID available"},
        {"type":"Ready","status":"True","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:05Z","reason":"KubeletReady","message":"kubelet is posting ready status"},
        {"type":"NetworkUnavailable","status":"False","lastHeartbeatTime":"2026-07-24T09:00:10Z","lastTransitionTime":"2026-07-24T09:00:10Z","reason":"RouteCreated","message":"RouteController created a route"}],
      "addresses":[{"type":"InternalIP","address":"10.0.0.4"},{"type":"Hostname","address":"node-0001"}],
      "daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},
      "nodeInfo":{"machineID":"0123456789abcdef0123456789abcdef","systemUUID":"01234567-89ab-cdef-0123-456789abcdef",
        "bootID":"01234567-89ab-cdef-0123-456789abcdef","kernelVersion":"6.1.0-23-amd64","osImage":"Debian GNU/Linux 12 bookworm",
        "containerRuntimeVersion":"containerd://1.7.20","kubeletVersion":"v1.36.0","kubeProxyVersion":"",
        "operatingSystem":"linux","architecture":"amd64"},
      "images":[)";
  for (int i = 0; i < 40; ++i) {
    node += i == 0 ? "" : ",";
    node +=
        R"({"names":["registry.example.com/team/service-)" + std::to_string(i) +
        R"(@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","registry.example.com/team/service-)" +
        std::to_string(i) + R"(:v1.2.3"],"sizeBytes":)" + std::to_string(10000000 + i) + "}";
  }
  node += "]}}";
  return node;
}

struct Case {
  const char* name;
  PatchType type;
  const char* body;
};

constexpr Case kCases[] = {
    {"kubelet heartbeat (SMP, $setElementOrder)", PatchType::Strategic,
     R"({"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"},{"type":"NetworkUnavailable"}],
        "conditions":[{"lastHeartbeatTime":"2026-07-24T10:00:40Z","type":"MemoryPressure"},{"lastHeartbeatTime":"2026-07-24T10:00:40Z","type":"DiskPressure"},
                      {"lastHeartbeatTime":"2026-07-24T10:00:40Z","type":"PIDPressure"},{"lastHeartbeatTime":"2026-07-24T10:00:40Z","type":"Ready"}]}})"},
    {"route controller (SMP, replace addresses)", PatchType::Strategic,
     R"({"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"},{"type":"NetworkUnavailable"}],
        "conditions":[{"type":"NetworkUnavailable","status":"False","reason":"RouteCreated","message":"RouteController created a route","lastTransitionTime":"2026-07-24T10:05:00Z","lastHeartbeatTime":"2026-07-24T10:05:00Z"}],
        "addresses":[{"type":"InternalIP","address":"10.0.0.5"},{"type":"Hostname","address":"node-0001"},{"$patch":"replace"}]}})"},
    {"taints (SMP, atomic list + rv)", PatchType::Strategic,
     R"({"metadata":{"resourceVersion":"123456"},"spec":{"taints":[{"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]}})"},
    {"label (merge patch)", PatchType::Merge, R"({"metadata":{"labels":{"zone":"a"}}})"},
    {"annotation (JSON patch)", PatchType::Json,
     R"([{"op":"add","path":"/metadata/annotations/example.com~1owner","value":"me"}])"},
};

// CPU time of this thread: steadier than wall time on a shared machine.
double threadMicroseconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
}

double microsecondsPer(int rounds, auto&& body) {
  double start = threadMicroseconds();
  for (int i = 0; i < rounds; ++i) {
    body();
  }
  return (threadMicroseconds() - start) / rounds;
}

}  // namespace

int main() {
  std::string nodeJson = makeNode();
  rapidjson::Document stored;
  stored.Parse(nodeJson.c_str());
  std::printf("node: %zu bytes of JSON\n", nodeJson.size());
  constexpr int kRounds = 20000;
  for (const Case& c : kCases) {
    // Engine alone: patch a fresh copy (the copy is timed separately and subtracted).
    double copyOnly = microsecondsPer(kRounds, [&] {
      rapidjson::Document work;
      work.CopyFrom(stored, work.GetAllocator());
    });
    double copyAndPatch = microsecondsPer(kRounds, [&] {
      rapidjson::Document work;
      work.CopyFrom(stored, work.GetAllocator());
      if (ccm::kubesim::applyPatch(c.type, "Node", work, work.GetAllocator(), c.body)) {
        std::abort();
      }
    });
    double storeRound = microsecondsPer(kRounds, [&] {
      rapidjson::Document work;
      work.CopyFrom(stored, work.GetAllocator());
      if (ccm::kubesim::applyPatch(c.type, "Node", work, work.GetAllocator(), c.body)) {
        std::abort();
      }
      rapidjson::StringBuffer buffer;
      rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
      work.Accept(writer);
    });
    std::printf("%-45s engine %6.2f us   copy+patch+serialise %6.2f us (%7.0f/s per core)\n",
                c.name, copyAndPatch - copyOnly, storeRound, 1e6 / storeRound);
  }
  return 0;
}
