// Service and node predicates of the service controller.
#include "host/controllers/service/service_predicates.hpp"

#include <algorithm>

#include "host/controllers/common/well_known.hpp"

namespace ccm::controllers::service {
namespace {

// Two lists (spans, or a Node's lists) of the same length whose elements are pairwise equal.
template <typename List, typename Eq>
bool spanEqual(const List& a, const List& b, Eq eq) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), eq);
}

template <typename List>
bool kvEqual(const List& a, const List& b) {
  return spanEqual(a, b, [](const kube::KeyValue& x, const kube::KeyValue& y) {
    return x.key == y.key && x.value == y.value;
  });
}

// b is a with exactly the changes of write applied (and nothing else differs).
bool annotationsDifferOnlyBy(std::span<const kube::KeyValue> a, std::span<const kube::KeyValue> b,
                             const AnnotationWrite& write) {
  auto find = [](std::span<const kube::KeyValue> kv,
                 std::string_view key) -> std::optional<std::string_view> {
    for (const auto& e : kv) {
      if (e.key == key) {
        return e.value;
      }
    }
    return std::nullopt;
  };
  for (const auto& [k, v] : write) {
    auto now = find(b, k);
    if (now.has_value() != v.has_value() || (now && *now != *v)) {
      return false;
    }
  }
  auto same_outside = [&](std::span<const kube::KeyValue> x, std::span<const kube::KeyValue> y) {
    for (const auto& e : x) {
      if (write.count(std::string(e.key)) == 0 && find(y, e.key) != std::optional(e.value)) {
        return false;
      }
    }
    return true;
  };
  return same_outside(a, b) && same_outside(b, a);
}

bool portsEqual(std::span<const kube::ServicePort> a, std::span<const kube::ServicePort> b) {
  return spanEqual(a, b, [](const kube::ServicePort& x, const kube::ServicePort& y) {
    return x.name == y.name && x.protocol == y.protocol && x.port == y.port &&
           x.node_port == y.node_port && x.target_port == y.target_port &&
           x.target_port_name == y.target_port_name && x.app_protocol == y.app_protocol;
  });
}

bool stringsEqual(std::span<const std::string_view> a, std::span<const std::string_view> b) {
  return spanEqual(a, b, std::equal_to<>());
}

}  // namespace

ClassSelection ClassSelection::fromFlags(const std::vector<std::string>& classes, bool class_only) {
  ClassSelection s;
  s.classes = classes;
  s.unclassed = !class_only || classes.empty();
  return s;
}

bool ClassSelection::handles(const kube::Service& svc) const {
  if (!svc.has_load_balancer_class) {
    return unclassed;
  }
  return std::find(classes.begin(), classes.end(), svc.load_balancer_class) != classes.end();
}

bool wantsLoadBalancer(const kube::Service& svc, const ClassSelection& classes) {
  return svc.type == "LoadBalancer" && classes.handles(svc);
}

bool belongsElsewhere(const kube::Service& svc, const ClassSelection& classes) {
  return svc.type == "LoadBalancer" && !classes.handles(svc);
}

bool needsCleanup(const kube::Service& svc, const ClassSelection& classes) {
  if (!svc.hasFinalizer(keys::kLoadBalancerCleanupFinalizer) || belongsElsewhere(svc, classes)) {
    return false;
  }
  return svc.deletion_timestamp != 0 || svc.type != "LoadBalancer";
}

bool needsUpdate(const kube::Service* old_svc, const kube::Service& new_svc,
                 const ClassSelection& classes, const AnnotationWrite* own_write) {
  bool old_wants = old_svc != nullptr && wantsLoadBalancer(*old_svc, classes);
  bool new_wants = wantsLoadBalancer(new_svc, classes);
  if (!old_wants && !new_wants) {
    return false;
  }
  if (old_wants != new_wants) {
    return true;
  }
  const kube::Service& o = *old_svc;
  const kube::Service& n = new_svc;
  if (!stringsEqual(o.load_balancer_source_ranges, n.load_balancer_source_ranges)) {
    return true;
  }
  if (!portsEqual(o.ports, n.ports)) {
    return true;
  }
  if (o.session_affinity != n.session_affinity) {
    return true;
  }
  if (o.has_session_affinity_config != n.has_session_affinity_config ||
      o.session_affinity_timeout_seconds != n.session_affinity_timeout_seconds) {
    return true;
  }
  if (o.load_balancer_ip != n.load_balancer_ip) {
    return true;
  }
  if (!stringsEqual(o.external_ips, n.external_ips)) {
    return true;
  }
  if (!kvEqual(o.annotations, n.annotations) &&
      (own_write == nullptr || own_write->empty() ||
       !annotationsDifferOnlyBy(o.annotations, n.annotations, *own_write))) {
    return true;
  }
  if (o.uid != n.uid) {
    return true;
  }
  if (o.external_traffic_policy != n.external_traffic_policy) {
    return true;
  }
  if (o.health_check_node_port != n.health_check_node_port) {
    return true;
  }
  return o.ip_families.size() != n.ip_families.size();
}

bool parsesAsFalse(std::string_view v) {
  return v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False";
}

bool nodeIncluded(const kube::Node& node) {
  auto v = node.label(keys::kExcludeFromLoadBalancers);
  return !v || parsesAsFalse(*v);
}

bool nodeNotToBeDeleted(const kube::Node& node) {
  return !node.hasTaint(keys::kToBeDeletedTaint);
}

bool nodeNotDeleted(const kube::Node& node) {
  return node.deletionTimestamp() == 0;
}

bool nodeInLoadBalancerSet(const kube::Node& node) {
  return nodeNotDeleted(node) && nodeIncluded(node) && nodeNotToBeDeleted(node);
}

bool shouldSyncUpdatedNode(const kube::Node& old_node, const kube::Node& new_node) {
  if (nodeIncluded(old_node) != nodeIncluded(new_node)) {
    return true;
  }
  return old_node.providerId() != new_node.providerId();
}

bool nodeChangedForProvider(const kube::Node& o, const kube::Node& n) {
  if (o.providerId() != n.providerId() || o.deletionTimestamp() != n.deletionTimestamp()) {
    return true;
  }
  if (!kvEqual(o.labels(), n.labels()) || !kvEqual(o.annotations(), n.annotations())) {
    return true;
  }
  if (!spanEqual(o.addresses(), n.addresses(),
                 [](const kube::NodeAddress& x, const kube::NodeAddress& y) {
                   return x.type == y.type && x.address == y.address;
                 })) {
    return true;
  }
  if (!spanEqual(o.taints(), n.taints(), [](const kube::Taint& x, const kube::Taint& y) {
        return x.key == y.key && x.value == y.value && x.effect == y.effect;
      })) {
    return true;
  }
  const auto& a = o.nodeInfo();
  const auto& b = n.nodeInfo();
  return a.machine_id != b.machine_id || a.system_uuid != b.system_uuid || a.boot_id != b.boot_id ||
         a.kernel_version != b.kernel_version || a.os_image != b.os_image ||
         a.container_runtime_version != b.container_runtime_version ||
         a.kubelet_version != b.kubelet_version || a.operating_system != b.operating_system ||
         a.architecture != b.architecture;
}

}  // namespace ccm::controllers::service
