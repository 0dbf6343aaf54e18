// Instances: matching Nodes to the World's machines and answering the instance calls.
#include "plugins/fake-cloud/instances.hpp"

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "plugins/fake-cloud/ipv4.hpp"

namespace ccm::fakecloud {
namespace {

constexpr std::string_view kProvidedNodeIp = "alpha.kubernetes.io/provided-node-ip";

std::string providerIdOf(const World& world, const InstanceSpec& spec) {
  return spec.provider_id.empty() ? world.provider_id_prefix + spec.name : spec.provider_id;
}

bool isIpv4(std::string_view text) {
  return parseIpv4(text).has_value();
}

// A stable number for a node name: its trailing digits, else an FNV-1a hash.
uint64_t nodeIndex(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1]))) {
    --i;
  }
  if (i < name.size() && name.size() - i <= 9) {
    return std::stoull(std::string(name.substr(i)));
  }
  uint64_t h = 1469598103934665603ULL;
  for (char c : name) {
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return h;
}

// The index-th usable address of a block ("" when cidr is not a block).
std::string derivedIp(const std::string& cidr, uint64_t index) {
  auto block = parseIpv4Block(cidr);
  if (!block) {
    return "";
  }
  return formatIpv4(block->base + static_cast<uint32_t>(index % (block->size - 2)) + 1);
}

// The node's own InternalIP: the provided-node-ip annotation's first address, else its first
// InternalIP address; "" when it brings none.
std::string ownInternalIp(const sdk::NodeView& node) {
  if (auto provided = node.annotation(kProvidedNodeIp)) {
    std::string_view first = provided->substr(0, provided->find(','));
    if (isIpv4(first)) {
      return std::string(first);
    }
  }
  for (const auto& addr : node.addresses()) {
    if (addr.type == "InternalIP" && isIpv4(addr.address)) {
      return std::string(addr.address);
    }
  }
  return "";
}

InstanceSpec automaticInstance(const AutoInstances& a, const std::string& name,
                               const sdk::NodeView& node) {
  InstanceSpec s;
  s.name = name;
  uint64_t index = nodeIndex(name);
  s.type = a.type;
  s.region = a.region;
  if (!a.zones.empty()) {
    s.zone = a.zones[index % a.zones.size()];
  }
  std::string internal = ownInternalIp(node);
  if (internal.empty()) {
    internal = derivedIp(a.internal_cidr, index);
  }
  s.addresses.push_back({"InternalIP", internal});
  if (!a.external_cidr.empty()) {
    s.addresses.push_back({"ExternalIP", derivedIp(a.external_cidr, index)});
  }
  if (a.hostname_address) {
    s.addresses.push_back({"Hostname", name});
  }
  s.labels = a.labels;
  return s;
}

// The node's machine, whatever its state: the listed instance with its providerID, else the
// one with its name, else an automatic one when the World has them.
std::optional<InstanceSpec> findInstance(const World& world, const sdk::NodeView& node) {
  std::string name(node.name());
  std::string_view pid = node.providerId();
  const std::string& prefix = world.provider_id_prefix;
  if (!pid.empty()) {
    for (const auto& spec : world.instances) {
      if (providerIdOf(world, spec) == pid) {
        return spec;
      }
    }
    if (pid.substr(0, prefix.size()) != prefix) {
      return std::nullopt;
    }
    name = std::string(pid.substr(prefix.size()));
  }
  for (const auto& spec : world.instances) {
    if (spec.name == name) {
      if (!pid.empty() && providerIdOf(world, spec) != pid) {
        return std::nullopt;  // the node claims a machine that is not this one
      }
      return spec;
    }
  }
  if (!world.auto_instances.enabled) {
    return std::nullopt;
  }
  return automaticInstance(world.auto_instances, name, node);
}

// The node's machine when it exists (running or shut down); else the error to answer.
sdk::Result<InstanceSpec> existingInstance(const World& world, const sdk::NodeView& node) {
  auto spec = findInstance(world, node);
  if (!spec) {
    if (world.unknown_when_unlisted) {
      return sdk::Error::unavailable("fake-cloud: cannot tell whether " + std::string(node.name()) +
                                     " exists");
    }
    return sdk::Error::notFound("fake-cloud: no instance for node " + std::string(node.name()));
  }
  switch (spec->state) {
    case InstanceState::Absent:
      return sdk::Error::notFound("fake-cloud: instance " + spec->name + " does not exist");
    case InstanceState::Unknown:
      return sdk::Error::unavailable("fake-cloud: state of instance " + spec->name + " is unknown");
    case InstanceState::Running:
    case InstanceState::Shutdown:
      break;
  }
  return *std::move(spec);
}

}  // namespace

sdk::Result<sdk::Existence> instanceExists(const World& world, const sdk::NodeView& node) {
  auto spec = existingInstance(world, node);
  if (spec.ok()) {
    return sdk::Existence::Exists;
  }
  if (spec.error().code() == CCM_STATUS_NOT_FOUND) {
    return sdk::Existence::NotFound;
  }
  return spec.error();
}

sdk::Result<sdk::Power> instancePower(const World& world, const sdk::NodeView& node) {
  auto spec = existingInstance(world, node);
  if (!spec.ok()) {
    return spec.error();
  }
  return spec.value().state == InstanceState::Shutdown ? sdk::Power::Shutdown : sdk::Power::Running;
}

sdk::Result<sdk::InstanceMetadata> instanceMetadata(const World& world, const sdk::NodeView& node) {
  auto found = existingInstance(world, node);
  if (!found.ok()) {
    return found.error();
  }
  InstanceSpec& spec = found.value();
  sdk::InstanceMetadata m;
  m.provider_id = providerIdOf(world, spec);
  m.instance_type = spec.type;
  m.zone = spec.zone;
  m.region = spec.region.empty() ? world.region : spec.region;
  m.addresses = std::move(spec.addresses);
  m.additional_labels = std::move(spec.labels);
  return m;
}

}  // namespace ccm::fakecloud
