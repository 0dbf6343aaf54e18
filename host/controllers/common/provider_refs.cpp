// kube objects -> provider inputs.
#include "host/controllers/common/provider_refs.hpp"

namespace ccm::controllers {

plugin::NodeRef NodeRefs::add(const std::shared_ptr<const kube::Node>& node) {
  auto h = std::make_unique<Holder>();
  h->node = node;
  for (const auto& kv : node->labels) {
    h->labels.push_back({kv.key, kv.value});
  }
  for (const auto& kv : node->annotations) {
    h->annotations.push_back({kv.key, kv.value});
  }
  for (const auto& a : node->addresses) {
    h->addresses.push_back({a.type, a.address});
  }
  plugin::NodeRef r;
  r.name = node->name;
  r.uid = node->uid;
  r.provider_id = node->provider_id;
  r.labels = h->labels;
  r.annotations = h->annotations;
  r.addresses = h->addresses;
  const auto& ni = node->node_info;
  r.node_info = {ni.machine_id,     ni.system_uuid,     ni.boot_id,
                 ni.kernel_version, ni.os_image,        ni.container_runtime_version,
                 ni.kubelet_version, ni.operating_system, ni.architecture};
  holders_.push_back(std::move(h));
  refs_.push_back(r);
  return r;
}

void NodeRefs::add(std::span<const std::shared_ptr<const kube::Node>> nodes) {
  refs_.reserve(refs_.size() + nodes.size());
  for (const auto& n : nodes) {
    add(n);
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
