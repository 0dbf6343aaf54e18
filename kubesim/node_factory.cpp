// NodeFactory: realistic kubelet-registered Nodes and node Leases.
#include "kubesim/node_factory.hpp"

#include <cstdio>

namespace ccm::kubesim {
namespace {

struct Image {
  const char* repo;
  const char* tag;
  int64_t size;
};

constexpr Image kImages[] = {
    {"registry.k8s.io/kube-proxy", "v1.32.0", 30905476},
    {"registry.k8s.io/pause", "3.10", 320368},
    {"registry.k8s.io/coredns/coredns", "v1.11.3", 18562039},
    {"registry.k8s.io/metrics-server/metrics-server", "v0.7.2", 19494617},
    {"docker.io/calico/node", "v3.29.1", 142488426},
    {"docker.io/calico/cni", "v3.29.1", 94514370},
    {"docker.io/calico/kube-controllers", "v3.29.1", 35611346},
    {"registry.k8s.io/ingress-nginx/controller", "v1.12.0", 105524851},
    {"quay.io/prometheus/node-exporter", "v1.8.2", 11796532},
    {"registry.k8s.io/sig-storage/csi-node-driver-registrar", "v2.12.0", 10873632},
    {"registry.k8s.io/sig-storage/livenessprobe", "v2.14.0", 9645345},
    {"docker.io/library/nginx", "1.27.3", 72955450},
    {"docker.io/library/redis", "7.4.1", 45006722},
    {"docker.io/library/postgres", "16.6", 154330581},
    {"quay.io/jetstack/cert-manager-controller", "v1.16.2", 24562811},
    {"docker.io/grafana/grafana", "11.4.0", 137412066},
    {"quay.io/prometheus/prometheus", "v3.0.1", 113745324},
    {"docker.io/fluent/fluent-bit", "3.2.2", 32117649},
    {"registry.k8s.io/kube-state-metrics/kube-state-metrics", "v2.14.0", 18223764},
    {"docker.io/library/busybox", "1.37.0", 2167176},
    {"docker.io/bitnami/kubectl", "1.32.0", 79466124},
    {"ghcr.io/external-secrets/external-secrets", "v0.12.1", 39114417},
    {"docker.io/library/python", "3.12-slim", 45122611},
    {"docker.io/library/golang", "1.23", 299201211},
};

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

std::string hexDigest(uint64_t seed, size_t chars) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  uint64_t v = seed;
  while (out.size() < chars) {
    v = mix(v + 0x9e3779b97f4a7c15ULL);
    for (int i = 0; i < 16 && out.size() < chars; ++i) {
      out.push_back(kHex[(v >> (i * 4)) & 15]);
    }
  }
  return out;
}

std::string uuidFrom(uint64_t seed) {
  std::string h = hexDigest(seed, 32);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-4" + h.substr(13, 3) + "-a" + h.substr(17, 3) +
         "-" + h.substr(20, 12);
}

void condition(JsonValue& arr, JsonAllocator& alloc, const char* type, const char* status,
               const char* reason, const char* message, const std::string& now) {
  JsonValue c(rapidjson::kObjectType);
  setString(c, "type", type, alloc);
  setString(c, "status", status, alloc);
  setString(c, "lastHeartbeatTime", now, alloc);
  setString(c, "lastTransitionTime", now, alloc);
  setString(c, "reason", reason, alloc);
  setString(c, "message", message, alloc);
  arr.PushBack(c, alloc);
}

struct ConditionText {
  const char* type;
  const char* ok_reason;
  const char* ok_message;
};
constexpr ConditionText kPressure[] = {
    {"MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
    {"DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
    {"PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
};

}  // namespace

std::string NodeFactory::nodeName(const std::string& prefix, int index) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%05d", index);
  return prefix + buf;
}

std::string NodeFactory::nodeIp(int index) {
  return "10." + std::to_string(16 + (index >> 16) % 200) + "." +
         std::to_string((index >> 8) & 255) + "." + std::to_string(index & 255);
}

std::string NodeFactory::node(const std::string& name, int index, WallTime now) const {
  uint64_t seed = mix(std::hash<std::string>{}(name));
  JsonDocument doc;
  auto& a = doc.GetAllocator();
  doc.SetObject();
  setString(doc, "kind", "Node", a);
  setString(doc, "apiVersion", "v1", a);
  JsonValue& meta = ensureObject(doc, "metadata", a);
  setString(meta, "name", name, a);
  JsonValue& labels = ensureObject(meta, "labels", a);
  setString(labels, "beta.kubernetes.io/arch", "amd64", a);
  setString(labels, "beta.kubernetes.io/os", "linux", a);
  setString(labels, "kubernetes.io/arch", "amd64", a);
  setString(labels, "kubernetes.io/hostname", name, a);
  setString(labels, "kubernetes.io/os", "linux", a);
  JsonValue& ann = ensureObject(meta, "annotations", a);
  setString(ann, "kubeadm.alpha.kubernetes.io/cri-socket", "unix:///run/containerd/containerd.sock",
            a);
  setString(ann, "node.alpha.kubernetes.io/ttl", "0", a);
  setString(ann, "volumes.kubernetes.io/controller-managed-attach-detach", "true", a);
  if (options_.provided_node_ip) {
    setString(ann, "alpha.kubernetes.io/provided-node-ip", nodeIp(index), a);
  }

  JsonValue& spec = ensureObject(doc, "spec", a);
  JsonValue taints(rapidjson::kArrayType);
  JsonValue taint(rapidjson::kObjectType);
  setString(taint, "key", "node.cloudprovider.kubernetes.io/uninitialized", a);
  setString(taint, "value", "true", a);
  setString(taint, "effect", "NoSchedule", a);
  taints.PushBack(taint, a);
  setMember(spec, "taints", std::move(taints), a);

  JsonValue& status = ensureObject(doc, "status", a);
  static constexpr int kCpus[] = {4, 8, 16, 32};
  int cpus = kCpus[seed % 4];
  int64_t mem_ki = int64_t{cpus} * 4 * 1024 * 1024 - 262144 + static_cast<int64_t>(seed % 65536);
  JsonValue& cap = ensureObject(status, "capacity", a);
  setString(cap, "cpu", std::to_string(cpus), a);
  setString(cap, "ephemeral-storage", "101430960Ki", a);
  setString(cap, "hugepages-1Gi", "0", a);
  setString(cap, "hugepages-2Mi", "0", a);
  setString(cap, "memory", std::to_string(mem_ki) + "Ki", a);
  setString(cap, "pods", "110", a);
  JsonValue& alloc = ensureObject(status, "allocatable", a);
  setString(alloc, "cpu", std::to_string(cpus * 1000 - 100) + "m", a);
  setString(alloc, "ephemeral-storage", "93478772582", a);
  setString(alloc, "hugepages-1Gi", "0", a);
  setString(alloc, "hugepages-2Mi", "0", a);
  setString(alloc, "memory", std::to_string(mem_ki - 102400) + "Ki", a);
  setString(alloc, "pods", "110", a);

  std::string ts = formatTime(now);
  JsonValue conds(rapidjson::kArrayType);
  for (const auto& c : kPressure) {
    condition(conds, a, c.type, "False", c.ok_reason, c.ok_message, ts);
  }
  condition(conds, a, "Ready", "True", "KubeletReady", "kubelet is posting ready status", ts);
  setMember(status, "conditions", std::move(conds), a);

  JsonValue addrs(rapidjson::kArrayType);
  JsonValue host(rapidjson::kObjectType);
  setString(host, "type", "Hostname", a);
  setString(host, "address", name, a);
  addrs.PushBack(host, a);
  setMember(status, "addresses", std::move(addrs), a);

  JsonValue& de = ensureObject(status, "daemonEndpoints", a);
  JsonValue& ke = ensureObject(de, "kubeletEndpoint", a);
  setInt(ke, "Port", 10250, a);

  JsonValue& info = ensureObject(status, "nodeInfo", a);
  setString(info, "machineID", hexDigest(seed, 32), a);
  setString(info, "systemUUID", uuidFrom(seed + 1), a);
  setString(info, "bootID", uuidFrom(seed + 2), a);
  setString(info, "kernelVersion", "6.1.0-28-cloud-amd64", a);
  setString(info, "osImage", "Debian GNU/Linux 12 (bookworm)", a);
  setString(info, "containerRuntimeVersion", "containerd://1.7.24", a);
  setString(info, "kubeletVersion", options_.kubelet_version, a);
  setString(info, "kubeProxyVersion", options_.kubelet_version, a);
  setString(info, "operatingSystem", "linux", a);
  setString(info, "architecture", "amd64", a);

  constexpr size_t kImageCount = sizeof(kImages) / sizeof(kImages[0]);
  size_t n = 12 + (seed >> 8) % (kImageCount - 11);
  JsonValue images(rapidjson::kArrayType);
  for (size_t i = 0; i < n; ++i) {
    const Image& img = kImages[(i + seed) % kImageCount];
    JsonValue e(rapidjson::kObjectType);
    JsonValue names(rapidjson::kArrayType);
    names.PushBack(makeString(std::string(img.repo) +
                                  "@sha256:" + hexDigest(std::hash<std::string>{}(img.repo), 64),
                              a),
                   a);
    names.PushBack(makeString(std::string(img.repo) + ":" + img.tag, a), a);
    e.AddMember("names", names, a);
    e.AddMember("sizeBytes", JsonValue(img.size), a);
    images.PushBack(e, a);
  }
  setMember(status, "images", std::move(images), a);
  return toJson(doc);
}

std::string NodeFactory::lease(const std::string& name, const std::string& node_uid,
                               WallTime now) const {
  return R"({"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":)" +
         jsonString(name) +
         R"(,"namespace":"kube-node-lease","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":)" +
         jsonString(name) + R"(,"uid":)" + jsonString(node_uid) +
         R"(}]},"spec":{"holderIdentity":)" + jsonString(name) + R"(,"leaseDurationSeconds":)" +
         std::to_string(options_.lease_duration_seconds) + R"(,"renewTime":)" +
         jsonString(formatMicroTime(now)) + "}}";
}

void NodeFactory::setConditions(JsonValue& node, JsonAllocator& alloc, const std::string& ready,
                                WallTime now) {
  JsonValue& status = ensureObject(node, "status", alloc);
  JsonValue* conds = member(status, "conditions");
  if (conds == nullptr || !conds->IsArray()) {
    setMember(status, "conditions", JsonValue(rapidjson::kArrayType), alloc);
    conds = member(status, "conditions");
  }
  std::string ts = formatTime(now);
  auto set = [&](std::string_view type, const std::string& st, const char* reason,
                 const char* message) {
    for (auto& c : conds->GetArray()) {
      if (stringMember(c, "type") != type) {
        continue;
      }
      if (stringMember(c, "status") != st) {
        setString(c, "status", st, alloc);
        setString(c, "lastTransitionTime", ts, alloc);
      }
      if (st != "Unknown") {
        setString(c, "lastHeartbeatTime", ts, alloc);
      }
      setString(c, "reason", reason, alloc);
      setString(c, "message", message, alloc);
      return;
    }
    JsonValue c(rapidjson::kObjectType);
    setString(c, "type", type, alloc);
    setString(c, "status", st, alloc);
    setString(c, "lastHeartbeatTime", ts, alloc);
    setString(c, "lastTransitionTime", ts, alloc);
    setString(c, "reason", reason, alloc);
    setString(c, "message", message, alloc);
    conds->PushBack(c, alloc);
  };
  if (ready == "Unknown") {
    for (const auto& c : kPressure) {
      set(c.type, "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.");
    }
    set("Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.");
    return;
  }
  for (const auto& c : kPressure) {
    set(c.type, "False", c.ok_reason, c.ok_message);
  }
  if (ready == "True") {
    set("Ready", "True", "KubeletReady", "kubelet is posting ready status");
  } else {
    set("Ready", "False", "KubeletNotReady",
        "container runtime network not ready: NetworkReady=false "
        "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not "
        "initialized");
  }
}

}  // namespace ccm::kubesim
