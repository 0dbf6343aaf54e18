// Reads every field of a decoded Node or Service (so AddressSanitizer sees a view into freed
// or foreign memory) and checks the invariants the caches rely on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <span>

#include "host/kube/objects/node.hpp"
#include "host/kube/objects/service.hpp"
#include "test/fuzz/fuzz_support.hpp"

namespace ccm::fuzz {

// `find` looks a key up the way the object's own accessor does.
template <typename List, typename Find>
void checkSorted(const List& kvs, Find&& find) {
  for (size_t i = 1; i < kvs.size(); ++i) {
    require(kvs[i - 1].key <= kvs[i].key, "labels/annotations sorted by key");
  }
  for (const kube::KeyValue kv : kvs) {
    touch(kv.key);
    touch(kv.value);
    require(find(kv.key).has_value(), "every key is found by its lookup");
  }
}

inline void checkSorted(std::span<const kube::KeyValue> kvs) {
  checkSorted(kvs, [kvs](std::string_view k) { return kube::findKey(kvs, k); });
}

inline uint64_t touchNode(const kube::Node& n) {
  uint64_t h = touch(n.name()) + touch(n.uid()) + touch(n.resourceVersion()) +
               touch(n.providerId()) + touch(n.podCidr());
  checkSorted(n.labels(), [&n](std::string_view k) { return n.label(k); });
  checkSorted(n.annotations(), [&n](std::string_view k) { return n.annotation(k); });
  for (auto c : n.podCidrs())
    h += touch(c);
  for (const auto& t : n.taints())
    h += touch(t.key) + touch(t.value) + touch(t.effect);
  for (const auto& a : n.addresses())
    h += touch(a.type) + touch(a.address);
  for (const auto& c : n.conditions()) {
    h += touch(c.type) + touch(c.status) + touch(c.reason);
    require(n.condition(c.type).has_value(), "every condition is found by type");
    const auto* kept_end = std::end(kube::kKeptNodeConditions);
    require(std::find(std::begin(kube::kKeptNodeConditions), kept_end, c.type) != kept_end,
            "only the conditions a controller reads are kept");
  }
  const auto& i = n.nodeInfo();
  h += touch(i.machine_id) + touch(i.system_uuid) + touch(i.boot_id) + touch(i.kernel_version) +
       touch(i.os_image) + touch(i.container_runtime_version) + touch(i.kubelet_version) +
       touch(i.kube_proxy_version) + touch(i.operating_system) + touch(i.architecture);
  return h;
}

inline uint64_t touchService(const kube::Service& s) {
  uint64_t h = touch(s.namespace_) + touch(s.name) + touch(s.uid) + touch(s.resource_version) +
               touch(s.type) + touch(s.cluster_ip) + touch(s.load_balancer_ip) +
               touch(s.external_traffic_policy) + touch(s.load_balancer_class) +
               touch(s.session_affinity) + touch(s.raw_json) + touch(s.key());
  checkSorted(s.labels);
  checkSorted(s.annotations);
  for (auto f : s.finalizers) {
    h += touch(f);
    require(s.hasFinalizer(f), "every finalizer is found");
  }
  for (const auto& p : s.ports) {
    h += touch(p.name) + touch(p.protocol) + touch(p.app_protocol) + touch(p.target_port_name);
  }
  for (auto r : s.load_balancer_source_ranges)
    h += touch(r);
  for (auto f : s.ip_families)
    h += touch(f);
  for (auto e : s.external_ips)
    h += touch(e);
  for (const auto& in : s.ingress) {
    h += touch(in.ip) + touch(in.hostname) + touch(in.ip_mode);
    for (const auto& p : in.ports)
      h += touch(p.protocol) + touch(p.error);
  }
  return h;
}

}  // namespace ccm::fuzz
