// kube objects -> provider inputs.
#include "host/controllers/common/provider_refs.hpp"

namespace ccm::controllers {

plugin::NodeRef NodeRefs::add(const std::shared_ptr<const kube::Node>& node) {
  add(std::span(&node, 1));
  return refs_.back();
}

void NodeRefs::add(std::span<const std::shared_ptr<const kube::Node>> nodes) {
  size_t pairs = 0;
  size_t addresses = 0;
  for (const auto& n : nodes) {
    pairs += n->labels().size() + n->annotations().size();
    addresses += n->addresses().size();
  }
  plugin::KeyValueRef* kv = nullptr;
  plugin::AddressRef* addr = nullptr;
  if (pairs > 0) {
    pair_blocks_.push_back(std::make_unique<plugin::KeyValueRef[]>(pairs));
    kv = pair_blocks_.back().get();
  }
  if (addresses > 0) {
    address_blocks_.push_back(std::make_unique<plugin::AddressRef[]>(addresses));
    addr = address_blocks_.back().get();
  }
  nodes_.reserve(nodes_.size() + nodes.size());
  refs_.reserve(refs_.size() + nodes.size());
  auto view = [](std::string_view text, NodeText) { return text; };
  for (const auto& node : nodes) {
    plugin::NodeRef r = buildNodeRef(*node, kv, addr, view);
    nodes_.push_back(node);
    refs_.push_back(r);
  }
}

ServiceRefHolder::ServiceRefHolder(std::shared_ptr<const kube::Service> service)
    : service_(std::move(service)) {
  const kube::Service& s = *service_;
  for (const auto& kv : s.labels) {
    labels_.push_back({kv.key, kv.value});
  }
  for (const auto& kv : s.annotations) {
    annotations_.push_back({kv.key, kv.value});
  }
  target_ports_.reserve(s.ports.size());
  for (const auto& p : s.ports) {
    target_ports_.push_back(!p.target_port_name.empty() ? std::string(p.target_port_name)
                            : p.target_port != 0        ? std::to_string(p.target_port)
                                                        : std::string());
    ports_.push_back({p.name, p.protocol, p.port, p.node_port, target_ports_.back(),
                      p.app_protocol});
  }
  for (const auto& in : s.ingress) {
    sdk::Ingress out;
    out.ip = std::string(in.ip);
    out.hostname = std::string(in.hostname);
    out.ip_mode = std::string(in.ip_mode);
    for (const auto& p : in.ports) {
      out.ports.push_back({p.port, std::string(p.protocol), std::string(p.error)});
    }
    status_.ingress.push_back(std::move(out));
  }
  ref_.namespace_name = s.namespace_;
  ref_.name = s.name;
  ref_.uid = s.uid;
  ref_.labels = labels_;
  ref_.annotations = annotations_;
  ref_.type = s.type;
  ref_.ports = ports_;
  ref_.load_balancer_ip = s.load_balancer_ip;
  ref_.source_ranges = s.load_balancer_source_ranges;
  ref_.external_traffic_policy = s.external_traffic_policy;
  ref_.health_check_node_port = s.health_check_node_port;
  ref_.ip_families = s.ip_families;
  ref_.load_balancer_class = s.load_balancer_class;
  ref_.session_affinity = s.session_affinity;
  ref_.cluster_ip = s.cluster_ip;
  ref_.current_status = &status_;
  ref_.object_json = s.raw_json;
}

}  // namespace ccm::controllers
