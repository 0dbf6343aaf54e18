// AbiInput implementation: a bump allocator and the conversions to ABI structs.
#include "host/plugin/abi_input.hpp"

#include <algorithm>

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

size_t AbiInput::put(const ccm_kv*& to, std::span<const KeyValueRef> items) {
  to = list<ccm_kv>(items, [&](const KeyValueRef& e) { return ccm_kv{str(e.key), str(e.value)}; });
  return items.size();
}

size_t AbiInput::put(const ccm_str*& to, std::span<const std::string_view> items) {
  to = list<ccm_str>(items, [&](std::string_view v) { return str(v); });
  return items.size();
}

const ccm_node* AbiInput::node(const NodeRef& n) {
  auto* info = object<ccm_node_info>();
  info->machine_id = str(n.node_info.machine_id);
  info->system_uuid = str(n.node_info.system_uuid);
  info->boot_id = str(n.node_info.boot_id);
  info->kernel_version = str(n.node_info.kernel_version);
  info->os_image = str(n.node_info.os_image);
  info->container_runtime_version = str(n.node_info.container_runtime_version);
  info->kubelet_version = str(n.node_info.kubelet_version);
  info->operating_system = str(n.node_info.operating_system);
  info->architecture = str(n.node_info.architecture);
  auto* out = object<ccm_node>();
  out->name = str(n.name);
  out->uid = str(n.uid);
  out->provider_id = str(n.provider_id);
  out->label_count = put(out->labels, n.labels);
  out->annotation_count = put(out->annotations, n.annotations);
  out->address_count = put(out->addresses, n.addresses);
  out->node_info = info;
  out->object_json = nodes_with_json_ ? str(n.object_json) : ccm_str{nullptr, 0};
  return out;
}

const ccm_node* const* AbiInput::nodes(std::span<const NodeRef> ns) {
  return list<const ccm_node*>(ns, [&](const NodeRef& n) { return node(n); });
}

namespace {
// A host set's C form: the node structs and their strings, in an input of their own.
struct SharedNodes {
  explicit SharedNodes(std::span<const NodeRef> refs, bool with_json)
      : input(with_json), nodes(input.nodes(refs)), count(refs.size()), source(refs.data()) {}
  AbiInput input;
  const ccm_node* const* nodes;
  size_t count;
  const NodeRef* source;  // the refs it was built from
};
// The keys the two forms are kept under in a set's HostForms.
constexpr char kWithJson = 0;
constexpr char kWithoutJson = 1;
}  // namespace

std::tuple<const ccm_node* const*, size_t> AbiInput::args(const SharedHosts& hosts) {
  if (hosts.forms == nullptr) {
    return args(hosts.refs);
  }
  auto form = std::static_pointer_cast<const SharedNodes>(
      hosts.forms->get(nodes_with_json_ ? &kWithJson : &kWithoutJson, [&] {
        return std::make_shared<const SharedNodes>(hosts.refs, nodes_with_json_);
      }));
  if (form->source != hosts.refs.data() || form->count != hosts.refs.size()) {
    // Forms belong to one set; refs of another set given with them are converted here.
    return args(hosts.refs);
  }
  shared_.push_back(form);
  return {form->nodes, form->count};
}

const ccm_lb_status* AbiInput::lbStatus(const LoadBalancerStatus* s) {
  auto* out = object<ccm_lb_status>();
  if (s == nullptr) {
    return out;
  }
  out->ingress_count = put(out->ingress, s->ingress, [&](const sdk::Ingress& in) {
    ccm_lb_ingress c{sizeof(ccm_lb_ingress), str(in.ip), str(in.hostname),
                     str(in.ip_mode),        nullptr,    0};
    c.port_count = put(c.ports, in.ports, [&](const sdk::PortStatus& p) {
      return ccm_port_status{sizeof(ccm_port_status), p.port, str(p.protocol), str(p.error)};
    });
    return c;
  });
  return out;
}

const ccm_service* AbiInput::service(const ServiceRef& s) {
  auto* out = object<ccm_service>();
  out->namespace_ = str(s.namespace_name);
  out->name = str(s.name);
  out->uid = str(s.uid);
  out->label_count = put(out->labels, s.labels);
  out->annotation_count = put(out->annotations, s.annotations);
  out->type = str(s.type);
  out->port_count = put(out->ports, s.ports, [&](const ServicePortRef& p) {
    return ccm_service_port{
        sizeof(ccm_service_port), str(p.name),        str(p.protocol), p.port, p.node_port,
        str(p.target_port),       str(p.app_protocol)};
  });
  out->load_balancer_ip = str(s.load_balancer_ip);
  out->source_range_count = put(out->source_ranges, s.source_ranges);
  out->external_traffic_policy = str(s.external_traffic_policy);
  out->health_check_node_port = s.health_check_node_port;
  out->ip_family_count = put(out->ip_families, s.ip_families);
  out->load_balancer_class = str(s.load_balancer_class);
  out->session_affinity = str(s.session_affinity);
  out->cluster_ip = str(s.cluster_ip);
  out->current_status = lbStatus(s.current_status);
  // The ABI promises services their JSON whenever the host has it.
  out->object_json = str(s.object_json);
  return out;
}

const ccm_route* AbiInput::route(const Route& r) {
  auto* out = object<ccm_route>();
  out->name = str(r.name);
  out->target_node = str(r.target_node);
  out->destination_cidr = str(r.destination_cidr);
  out->blackhole = r.blackhole;
  out->enable_node_addresses = r.enable_node_addresses;
  out->target_node_address_count = put(out->target_node_addresses, r.target_node_addresses);
  return out;
}

}  // namespace ccm::plugin
