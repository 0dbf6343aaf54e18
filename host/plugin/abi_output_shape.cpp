// Shape checks of plugin output: pointer/length pairs, NULL entries, bounded counts.
#include "host/plugin/abi_output_shape.hpp"

#include <fmt/format.h>

#include "ccm/types.hpp"

namespace ccm::plugin {
namespace {

// An array field and its count: consistent and bounded.
std::string checkArray(std::string_view field, std::string_view count_field, const void* data,
                       size_t count, size_t max) {
  if (data == nullptr && count != 0) {
    return fmt::format("{} is NULL with {} {}", field, count_field, count);
  }
  if (count > max) {
    return fmt::format("{} {} is more than the {} the host accepts", count_field, count, max);
  }
  return {};
}

std::string checkAddresses(std::string_view field, std::string_view count_field,
                           const ccm_node_address* addresses, size_t count) {
  if (auto e = checkArray(field, count_field, addresses, count, kMaxOutputAddresses); !e.empty()) {
    return e;
  }
  for (size_t i = 0; i < count; ++i) {
    for (auto [name, value] :
         {std::pair{"type", addresses[i].type}, std::pair{"address", addresses[i].address}}) {
      if (auto e = checkStrShape(fmt::format("{}[{}].{}", field, i, name), value); !e.empty()) {
        return e;
      }
    }
  }
  return {};
}

std::string checkPairs(std::string_view field, std::string_view count_field, const ccm_kv* kv,
                       size_t count, size_t max) {
  if (auto e = checkArray(field, count_field, kv, count, max); !e.empty()) {
    return e;
  }
  for (size_t i = 0; i < count; ++i) {
    for (auto [name, value] : {std::pair{"key", kv[i].key}, std::pair{"value", kv[i].value}}) {
      if (auto e = checkStrShape(fmt::format("{}[{}].{}", field, i, name), value); !e.empty()) {
        return e;
      }
    }
  }
  return {};
}

std::string checkIngress(std::string_view field, const ccm_lb_ingress* raw) {
  ccm_lb_ingress in = sdk::copyStruct(raw);
  for (auto [name, value] : {std::pair{"ip", in.ip}, std::pair{"hostname", in.hostname},
                             std::pair{"ip_mode", in.ip_mode}}) {
    if (auto e = checkStrShape(fmt::format("{}.{}", field, name), value); !e.empty()) {
      return e;
    }
  }
  std::string ports = fmt::format("{}.ports", field);
  if (auto e = checkArray(ports, "port_count", in.ports, in.port_count, kMaxOutputPorts);
      !e.empty()) {
    return e;
  }
  for (size_t j = 0; j < in.port_count; ++j) {
    if (in.ports[j] == nullptr) {
      return fmt::format("{}[{}] is NULL", ports, j);
    }
    ccm_port_status p = sdk::copyStruct(in.ports[j]);
    for (auto [name, value] : {std::pair{"protocol", p.protocol}, std::pair{"error", p.error}}) {
      if (auto e = checkStrShape(fmt::format("{}[{}].{}", ports, j, name), value); !e.empty()) {
        return e;
      }
    }
  }
  return {};
}

}  // namespace

std::string checkStrShape(std::string_view field, ccm_str s) {
  if (s.data == nullptr && s.size != 0) {
    return fmt::format("{} has data NULL with size {}", field, s.size);
  }
  return {};
}

std::string checkMetadataShape(const ccm_instance_metadata* metadata) {
  ccm_instance_metadata m = sdk::copyStruct(metadata);
  for (auto [name, value] :
       {std::pair{"provider_id", m.provider_id}, std::pair{"instance_type", m.instance_type},
        std::pair{"zone", m.zone}, std::pair{"region", m.region}}) {
    if (auto e = checkStrShape(name, value); !e.empty()) {
      return e;
    }
  }
  if (auto e = checkAddresses("addresses", "address_count", m.addresses, m.address_count);
      !e.empty()) {
    return e;
  }
  return checkPairs("additional_labels", "additional_label_count", m.additional_labels,
                    m.additional_label_count, kMaxOutputLabels);
}

std::string checkLbStatusShape(const ccm_lb_status* status, bool annotations) {
  ccm_lb_status s = sdk::copyStruct(status);
  if (auto e =
          checkArray("ingress", "ingress_count", s.ingress, s.ingress_count, kMaxOutputIngress);
      !e.empty()) {
    return e;
  }
  for (size_t i = 0; i < s.ingress_count; ++i) {
    if (s.ingress[i] == nullptr) {
      return fmt::format("ingress[{}] is NULL", i);
    }
    if (auto e = checkIngress(fmt::format("ingress[{}]", i), s.ingress[i]); !e.empty()) {
      return e;
    }
  }
  // Since 1.1; zero (absent) in a 1.0 plugin's shorter struct.
  if (!annotations) {
    return {};
  }
  if (auto e = checkPairs("annotations", "annotation_count", s.annotations, s.annotation_count,
                          kMaxOutputAnnotations);
      !e.empty()) {
    return e;
  }
  if (auto e = checkArray("removed_annotations", "removed_annotation_count", s.removed_annotations,
                          s.removed_annotation_count, kMaxOutputAnnotations);
      !e.empty()) {
    return e;
  }
  for (size_t i = 0; i < s.removed_annotation_count; ++i) {
    if (auto e = checkStrShape(fmt::format("removed_annotations[{}]", i), s.removed_annotations[i]);
        !e.empty()) {
      return e;
    }
  }
  return {};
}

std::string checkRouteShape(const ccm_route* route) {
  ccm_route r = sdk::copyStruct(route);
  for (auto [name, value] : {std::pair{"name", r.name}, std::pair{"target_node", r.target_node},
                             std::pair{"destination_cidr", r.destination_cidr}}) {
    if (auto e = checkStrShape(name, value); !e.empty()) {
      return e;
    }
  }
  return checkAddresses("target_node_addresses", "target_node_address_count",
                        r.target_node_addresses, r.target_node_address_count);
}

}  // namespace ccm::plugin
