#include "host/plugin/isolation/values.hpp"

namespace ccm::plugin::isolation {

namespace {

// The smallest encoding of one list item: a string is at least its 4-byte count.
constexpr size_t kMinString = 4;

void putPairs(Writer& w, std::span<const KeyValueRef> kv) {
  w.u32(static_cast<uint32_t>(kv.size()));
  for (const auto& p : kv) {
    w.str(p.key);
    w.str(p.value);
  }
}

void putLabels(Writer& w, const sdk::Labels& kv) {
  w.u32(static_cast<uint32_t>(kv.size()));
  for (const auto& [k, v] : kv) {
    w.str(k);
    w.str(v);
  }
}

sdk::Labels getLabels(Reader& r) {
  sdk::Labels out;
  uint32_t n = r.count(2 * kMinString);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    std::string k(r.str());
    std::string v(r.str());
    out.emplace_back(std::move(k), std::move(v));
  }
  return out;
}

void putAddresses(Writer& w, const std::vector<NodeAddress>& a) {
  w.u32(static_cast<uint32_t>(a.size()));
  for (const auto& x : a) {
    w.str(x.type);
    w.str(x.address);
  }
}

std::vector<NodeAddress> getAddresses(Reader& r) {
  std::vector<NodeAddress> out;
  uint32_t n = r.count(2 * kMinString);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    NodeAddress a;
    a.type = r.str();
    a.address = r.str();
    out.push_back(std::move(a));
  }
  return out;
}

void putViews(Writer& w, std::span<const std::string_view> v) {
  w.u32(static_cast<uint32_t>(v.size()));
  for (auto s : v) {
    w.str(s);
  }
}

}  // namespace

void putNode(Writer& w, const NodeRef& n) {
  w.str(n.name);
  w.str(n.uid);
  w.str(n.provider_id);
  putPairs(w, n.labels);
  putPairs(w, n.annotations);
  w.u32(static_cast<uint32_t>(n.addresses.size()));
  for (const auto& a : n.addresses) {
    w.str(a.type);
    w.str(a.address);
  }
  const NodeInfoRef& i = n.node_info;
  for (auto s : {i.machine_id, i.system_uuid, i.boot_id, i.kernel_version, i.os_image,
                 i.container_runtime_version, i.kubelet_version, i.operating_system,
                 i.architecture}) {
    w.str(s);
  }
  w.str(n.object_json);
}

void NodeData::decode(Reader& r) {
  ref_.name = keep(r.str());
  ref_.uid = keep(r.str());
  ref_.provider_id = keep(r.str());
  for (auto* list : {&labels_, &annotations_}) {
    uint32_t n = r.count(2 * kMinString);
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
      std::string_view k = keep(r.str());
      list->push_back({k, keep(r.str())});
    }
  }
  uint32_t n = r.count(2 * kMinString);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    std::string_view t = keep(r.str());
    addresses_.push_back({t, keep(r.str())});
  }
  NodeInfoRef& i = ref_.node_info;
  for (auto* f : {&i.machine_id, &i.system_uuid, &i.boot_id, &i.kernel_version, &i.os_image,
                  &i.container_runtime_version, &i.kubelet_version, &i.operating_system,
                  &i.architecture}) {
    *f = keep(r.str());
  }
  ref_.object_json = keep(r.str());
  ref_.labels = labels_;
  ref_.annotations = annotations_;
  ref_.addresses = addresses_;
}

void putService(Writer& w, const ServiceRef& s) {
  w.str(s.namespace_name);
  w.str(s.name);
  w.str(s.uid);
  putPairs(w, s.labels);
  putPairs(w, s.annotations);
  w.str(s.type);
  w.u32(static_cast<uint32_t>(s.ports.size()));
  for (const auto& p : s.ports) {
    w.str(p.name);
    w.str(p.protocol);
    w.i32(p.port);
    w.i32(p.node_port);
    w.str(p.target_port);
    w.str(p.app_protocol);
  }
  w.str(s.load_balancer_ip);
  putViews(w, s.source_ranges);
  w.str(s.external_traffic_policy);
  w.i32(s.health_check_node_port);
  putViews(w, s.ip_families);
  w.str(s.load_balancer_class);
  w.str(s.session_affinity);
  w.str(s.cluster_ip);
  w.boolean(s.current_status != nullptr);
  if (s.current_status != nullptr) {
    putLoadBalancerStatus(w, *s.current_status);
  }
  w.str(s.object_json);
}

void ServiceData::decode(Reader& r) {
  ref_.namespace_name = keep(r.str());
  ref_.name = keep(r.str());
  ref_.uid = keep(r.str());
  for (auto* list : {&labels_, &annotations_}) {
    uint32_t n = r.count(2 * kMinString);
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
      std::string_view k = keep(r.str());
      list->push_back({k, keep(r.str())});
    }
  }
  ref_.type = keep(r.str());
  uint32_t ports = r.count(4 * kMinString + 8);
  for (uint32_t i = 0; i < ports && r.ok(); ++i) {
    ServicePortRef p;
    p.name = keep(r.str());
    p.protocol = keep(r.str());
    p.port = r.i32();
    p.node_port = r.i32();
    p.target_port = keep(r.str());
    p.app_protocol = keep(r.str());
    ports_.push_back(p);
  }
  ref_.load_balancer_ip = keep(r.str());
  uint32_t ranges = r.count(kMinString);
  for (uint32_t i = 0; i < ranges && r.ok(); ++i) {
    source_ranges_.push_back(keep(r.str()));
  }
  ref_.external_traffic_policy = keep(r.str());
  ref_.health_check_node_port = r.i32();
  uint32_t families = r.count(kMinString);
  for (uint32_t i = 0; i < families && r.ok(); ++i) {
    ip_families_.push_back(keep(r.str()));
  }
  ref_.load_balancer_class = keep(r.str());
  ref_.session_affinity = keep(r.str());
  ref_.cluster_ip = keep(r.str());
  if (r.boolean()) {
    current_status_ = getLoadBalancerStatus(r);
  }
  ref_.object_json = keep(r.str());
  ref_.labels = labels_;
  ref_.annotations = annotations_;
  ref_.ports = ports_;
  ref_.source_ranges = source_ranges_;
  ref_.ip_families = ip_families_;
  ref_.current_status = current_status_ ? &*current_status_ : nullptr;
}

void putMetadata(Writer& w, const InstanceMetadata& m) {
  w.str(m.provider_id);
  w.str(m.instance_type);
  w.str(m.zone);
  w.str(m.region);
  putAddresses(w, m.addresses);
  putLabels(w, m.additional_labels);
}

InstanceMetadata getMetadata(Reader& r) {
  InstanceMetadata m;
  m.provider_id = r.str();
  m.instance_type = r.str();
  m.zone = r.str();
  m.region = r.str();
  m.addresses = getAddresses(r);
  m.additional_labels = getLabels(r);
  return m;
}

void putLoadBalancerStatus(Writer& w, const LoadBalancerStatus& s) {
  w.u32(static_cast<uint32_t>(s.ingress.size()));
  for (const auto& ing : s.ingress) {
    w.str(ing.ip);
    w.str(ing.hostname);
    w.str(ing.ip_mode);
    w.u32(static_cast<uint32_t>(ing.ports.size()));
    for (const auto& p : ing.ports) {
      w.i32(p.port);
      w.str(p.protocol);
      w.str(p.error);
    }
  }
  putLabels(w, s.annotations);
  w.u32(static_cast<uint32_t>(s.removed_annotations.size()));
  for (const auto& a : s.removed_annotations) {
    w.str(a);
  }
}

LoadBalancerStatus getLoadBalancerStatus(Reader& r) {
  LoadBalancerStatus s;
  uint32_t n = r.count(4 * kMinString);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    sdk::Ingress ing;
    ing.ip = r.str();
    ing.hostname = r.str();
    ing.ip_mode = r.str();
    uint32_t ports = r.count(4 + 2 * kMinString);
    for (uint32_t j = 0; j < ports && r.ok(); ++j) {
      sdk::PortStatus p;
      p.port = r.i32();
      p.protocol = r.str();
      p.error = r.str();
      ing.ports.push_back(std::move(p));
    }
    s.ingress.push_back(std::move(ing));
  }
  s.annotations = getLabels(r);
  uint32_t removed = r.count(kMinString);
  for (uint32_t i = 0; i < removed && r.ok(); ++i) {
    s.removed_annotations.emplace_back(r.str());
  }
  return s;
}

void putRoute(Writer& w, const Route& route) {
  w.str(route.name);
  w.str(route.target_node);
  w.str(route.destination_cidr);
  w.boolean(route.blackhole);
  w.boolean(route.enable_node_addresses);
  putAddresses(w, route.target_node_addresses);
}

Route getRoute(Reader& r) {
  Route route;
  route.name = r.str();
  route.target_node = r.str();
  route.destination_cidr = r.str();
  route.blackhole = r.boolean();
  route.enable_node_addresses = r.boolean();
  route.target_node_addresses = getAddresses(r);
  return route;
}

namespace {

void putCapability(Writer& w, const CapabilityInfo& c) {
  w.boolean(c.present);
  w.u32(c.max_concurrency);
  w.boolean(c.wants_object_json);
}

CapabilityInfo getCapability(Reader& r) {
  CapabilityInfo c;
  c.present = r.boolean();
  c.max_concurrency = r.u32();
  c.wants_object_json = r.boolean();
  return c;
}

}  // namespace

void putProviderInfo(Writer& w, const ProviderInfo& info) {
  w.str(info.name);
  w.str(info.version);
  w.u32(info.abi_major);
  w.u32(info.abi_minor);
  w.str(info.path);
  w.str(info.provider_id_prefix);
  w.str(info.annotation_domain);
  w.str(info.metric_namespace);
  putCapability(w, info.instances);
  putCapability(w, info.instances_batch);
  w.u32(info.max_batch_size);
  putCapability(w, info.load_balancer);
  putCapability(w, info.routes);
}

ProviderInfo getProviderInfo(Reader& r) {
  ProviderInfo info;
  info.name = r.str();
  info.version = r.str();
  info.abi_major = r.u32();
  info.abi_minor = r.u32();
  info.path = r.str();
  info.provider_id_prefix = r.str();
  info.annotation_domain = r.str();
  info.metric_namespace = r.str();
  info.instances = getCapability(r);
  info.instances_batch = getCapability(r);
  info.max_batch_size = r.u32();
  info.load_balancer = getCapability(r);
  info.routes = getCapability(r);
  return info;
}

}  // namespace ccm::plugin::isolation
