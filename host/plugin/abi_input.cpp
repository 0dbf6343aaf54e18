// AbiInput implementation: a bump allocator and the conversions to ABI structs.
#include "host/plugin/abi_input.hpp"

namespace ccm::plugin {

void* AbiInput::allocate(size_t bytes, size_t align) {
  size_t start = (used_ + align - 1) & ~(align - 1);
  if (blocks_.empty() || start + bytes > capacity_) {
    size_t size = std::max<size_t>(bytes + align, 8192);
    blocks_.push_back(std::make_unique<std::byte[]>(size));
    capacity_ = size;
    start = 0;  // new[] memory is aligned for every ABI type
  }
  used_ = start + bytes;
  return blocks_.back().get() + start;
}

ccm_str AbiInput::str(std::string_view s) {
  if (s.empty()) {
    return ccm_str{nullptr, 0};
  }
  auto* p = static_cast<char*>(allocate(s.size() + 1, 1));
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';  // not required by the ABI, but kind to C plugins
  return ccm_str{p, s.size()};
}

const ccm_kv* AbiInput::kvs(std::span<const KeyValueRef> kv) {
  auto* out = array<ccm_kv>(kv.size());
  for (size_t i = 0; i < kv.size(); ++i) {
    out[i] = {str(kv[i].key), str(kv[i].value)};
  }
  return out;
}

const ccm_node_address* AbiInput::addresses(std::span<const AddressRef> a) {
  auto* out = array<ccm_node_address>(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    out[i] = {str(a[i].type), str(a[i].address)};
  }
  return out;
}

const ccm_node* AbiInput::node(const NodeRef& n, bool with_json) {
  auto* info = array<ccm_node_info>(1);
  info->struct_size = sizeof(ccm_node_info);
  info->machine_id = str(n.node_info.machine_id);
  info->system_uuid = str(n.node_info.system_uuid);
  info->boot_id = str(n.node_info.boot_id);
  info->kernel_version = str(n.node_info.kernel_version);
  info->os_image = str(n.node_info.os_image);
  info->container_runtime_version = str(n.node_info.container_runtime_version);
  info->kubelet_version = str(n.node_info.kubelet_version);
  info->operating_system = str(n.node_info.operating_system);
  info->architecture = str(n.node_info.architecture);
  auto* out = array<ccm_node>(1);
  out->struct_size = sizeof(ccm_node);
  out->name = str(n.name);
  out->uid = str(n.uid);
  out->provider_id = str(n.provider_id);
  out->labels = kvs(n.labels);
  out->label_count = n.labels.size();
  out->annotations = kvs(n.annotations);
  out->annotation_count = n.annotations.size();
  out->addresses = addresses(n.addresses);
  out->address_count = n.addresses.size();
  out->node_info = info;
  out->object_json = with_json ? str(n.object_json) : ccm_str{nullptr, 0};
  return out;
}

const ccm_node* const* AbiInput::nodes(std::span<const NodeRef> ns, bool with_json) {
  auto** out = array<const ccm_node*>(ns.size());
  for (size_t i = 0; i < ns.size(); ++i) {
    out[i] = node(ns[i], with_json);
  }
  return out;
}

const ccm_lb_status* AbiInput::lbStatus(const LoadBalancerStatus* s) {
  auto* out = array<ccm_lb_status>(1);
  out->struct_size = sizeof(ccm_lb_status);
  if (s == nullptr || s->ingress.empty()) {
    return out;
  }
  auto** ingress = array<const ccm_lb_ingress*>(s->ingress.size());
  for (size_t i = 0; i < s->ingress.size(); ++i) {
    const auto& in = s->ingress[i];
    auto* c = array<ccm_lb_ingress>(1);
    c->struct_size = sizeof(ccm_lb_ingress);
    c->ip = str(in.ip);
    c->hostname = str(in.hostname);
    c->ip_mode = str(in.ip_mode);
    auto** ports = array<const ccm_port_status*>(in.ports.size());
    for (size_t j = 0; j < in.ports.size(); ++j) {
      auto* p = array<ccm_port_status>(1);
      *p = {sizeof(ccm_port_status), in.ports[j].port, str(in.ports[j].protocol),
            str(in.ports[j].error)};
      ports[j] = p;
    }
    c->ports = ports;
    c->port_count = in.ports.size();
    ingress[i] = c;
  }
  out->ingress = ingress;
  out->ingress_count = s->ingress.size();
  return out;
}

const ccm_service* AbiInput::service(const ServiceRef& s) {
  auto* out = array<ccm_service>(1);
  out->struct_size = sizeof(ccm_service);
  out->namespace_ = str(s.namespace_name);
  out->name = str(s.name);
  out->uid = str(s.uid);
  out->labels = kvs(s.labels);
  out->label_count = s.labels.size();
  out->annotations = kvs(s.annotations);
  out->annotation_count = s.annotations.size();
  out->type = str(s.type);
  auto** ports = array<const ccm_service_port*>(s.ports.size());
  for (size_t i = 0; i < s.ports.size(); ++i) {
    auto* p = array<ccm_service_port>(1);
    const ServicePortRef& sp = s.ports[i];
    *p = {sizeof(ccm_service_port), str(sp.name), str(sp.protocol), sp.port, sp.node_port,
          str(sp.target_port), str(sp.app_protocol)};
    ports[i] = p;
  }
  out->ports = ports;
  out->port_count = s.ports.size();
  out->load_balancer_ip = str(s.load_balancer_ip);
  auto* ranges = array<ccm_str>(s.source_ranges.size());
  for (size_t i = 0; i < s.source_ranges.size(); ++i) {
    ranges[i] = str(s.source_ranges[i]);
  }
  out->source_ranges = ranges;
  out->source_range_count = s.source_ranges.size();
  out->external_traffic_policy = str(s.external_traffic_policy);
  out->health_check_node_port = s.health_check_node_port;
  auto* families = array<ccm_str>(s.ip_families.size());
  for (size_t i = 0; i < s.ip_families.size(); ++i) {
    families[i] = str(s.ip_families[i]);
  }
  out->ip_families = families;
  out->ip_family_count = s.ip_families.size();
  out->load_balancer_class = str(s.load_balancer_class);
  out->session_affinity = str(s.session_affinity);
  out->cluster_ip = str(s.cluster_ip);
  out->current_status = lbStatus(s.current_status);
  // The ABI promises services their JSON whenever the host has it.
  out->object_json = str(s.object_json);
  return out;
}

const ccm_route* AbiInput::route(const Route& r) {
  auto* out = array<ccm_route>(1);
  out->struct_size = sizeof(ccm_route);
  out->name = str(r.name);
  out->target_node = str(r.target_node);
  out->destination_cidr = str(r.destination_cidr);
  out->blackhole = r.blackhole;
  out->enable_node_addresses = r.enable_node_addresses;
  auto* addrs = array<ccm_node_address>(r.target_node_addresses.size());
  for (size_t i = 0; i < r.target_node_addresses.size(); ++i) {
    addrs[i] = {str(r.target_node_addresses[i].type), str(r.target_node_addresses[i].address)};
  }
  out->target_node_addresses = addrs;
  out->target_node_address_count = r.target_node_addresses.size();
  return out;
}

}  // namespace ccm::plugin
