// Instances over Nova and Neutron.
#include "plugins/openstack/instances.hpp"

#include <map>
#include <regex>

#include "plugins/openstack/node_addresses.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr size_t kSmallBatch = 3;
constexpr size_t kPortQueryChunk = 40;

}  // namespace

sdk::Result<ProviderId> parseProviderId(const std::string& provider_id) {
  static const std::regex kRe(R"(^openstack://([^/]*)/([^/]+)$)");
  std::string full = provider_id;
  if (full.find("://") == std::string::npos) {
    full = "openstack://" + full;
  }
  std::smatch m;
  if (!std::regex_match(full, m, kRe)) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "providerID \"" + provider_id +
                                             "\" is not openstack:///<server-id> or "
                                             "openstack://<region>/<server-id>");
  }
  return ProviderId{m[1].str(), m[2].str()};
}

std::string Instances::providerIdFor(const std::string& server_id) const {
  if (config_.regional_provider_id) {
    return "openstack://" + config_.global.region + "/" + server_id;
  }
  return "openstack:///" + server_id;
}

sdk::Result<Server> Instances::findServer(const sdk::Call& call, const sdk::Node& node) {
  if (!node.provider_id.empty()) {
    CCM_SDK_ASSIGN_OR_RETURN(ProviderId pid, parseProviderId(node.provider_id));
    if (!pid.region.empty() && pid.region != config_.global.region) {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "providerID " + node.provider_id + " is in region " +
                                               pid.region + ", this provider serves region \"" +
                                               config_.global.region + "\"");
    }
    auto server = nova_.getServer(call, pid.server_id);
    if (!server.ok() && server.status().code() == CCM_STATUS_NOT_FOUND) {
      return sdk::Status(CCM_STATUS_NOT_FOUND, "server " + pid.server_id + " of node " + node.name +
                                        " does not exist (Nova answered 404)");
    }
    return server;
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<Server> found, nova_.findByName(call, node.name));
  if (found.empty()) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "node " + node.name + " has no providerID and no server is named so");
  }
  if (found.size() > 1) {
    return sdk::Status(CCM_STATUS_FAILED_PRECONDITION,
                  "node " + node.name + " has no providerID and several servers are named so");
  }
  return std::move(found.front());
}

sdk::Result<Existence> Instances::exists(const sdk::Call& call, const sdk::Node& node) {
  auto server = findServer(call, node);
  if (server.ok()) {
    return Existence::Exists;
  }
  if (server.status().code() == CCM_STATUS_NOT_FOUND && !node.provider_id.empty()) {
    return Existence::NotFound;
  }
  return server.status();
}

sdk::Result<Power> Instances::shutdown(const sdk::Call& call, const sdk::Node& node) {
  CCM_SDK_ASSIGN_OR_RETURN(Server server, findServer(call, node));
  return server.status == "SHUTOFF" ? Power::Shutdown : Power::Running;
}

sdk::Result<sdk::InstanceMetadata> Instances::build(const sdk::Call& call, const Server& server,
                                            const std::vector<Port>& ports) {
  sdk::InstanceMetadata md;
  md.provider_id = providerIdFor(server.id);
  md.region = config_.global.region;
  md.zone = sanitizeZone(server.availability_zone);
  if (!server.flavor_original_name.empty()) {
    if (isValidLabelValue(server.flavor_original_name)) {
      md.instance_type = server.flavor_original_name;
    } else {
      call.warning("Flavor name is not a valid label value; no instance type",
                   {{"server", server.id}, {"flavor", server.flavor_original_name}});
    }
  } else if (!server.flavor_id.empty()) {
    auto name = nova_.flavorName(call, server.flavor_id);
    if (name.ok() && isValidLabelValue(*name) && !name->empty()) {
      md.instance_type = *name;
    } else if (name.ok() || name.status().code() == CCM_STATUS_NOT_FOUND) {
      // A deleted flavor (404) still identifies the instance type by its ID.
      md.instance_type = isValidLabelValue(server.flavor_id) ? server.flavor_id : "";
    } else {
      return name.status().withPrefix("flavor of server " + server.id);
    }
  }
  std::vector<NovaAddress> extra;
  for (const Port& port : ports) {
    for (const std::string& sub_id : port.trunk_subport_ids) {
      auto sub = neutron_.getPort(call, sub_id);
      if (!sub.ok()) {
        call.warning("Cannot read trunk sub-port",
                     {{"port", sub_id}, {"error", sub.status().message()}});
        continue;
      }
      auto net = neutron_.getNetwork(call, sub->network_id);
      if (!net.ok()) {
        call.warning("Cannot read the network of a trunk sub-port",
                     {{"port", sub_id}, {"error", net.status().message()}});
        continue;
      }
      for (const FixedIp& ip : sub->fixed_ips) {
        extra.push_back({net->name, ip.ip_address, ipFamilyOf(ip.ip_address), "fixed"});
      }
    }
  }
  md.addresses = mapNodeAddresses(server, ports, extra, config_.networking);
  return md;
}

sdk::Result<sdk::InstanceMetadata> Instances::metadata(const sdk::Call& call,
                                                       const sdk::Node& node) {
  auto server = findServer(call, node);
  if (!server.ok()) {
    if (server.status().code() == CCM_STATUS_FAILED_PRECONDITION && node.provider_id.empty()) {
      return sdk::Status(CCM_STATUS_NOT_FOUND, server.status().message());
    }
    return server.status();
  }
  CCM_SDK_ASSIGN_OR_RETURN(std::vector<Port> ports,
                          neutron_.listPorts(call, "device_id=" + urlEncode(server->id)));
  return build(call, *server, ports);
}

std::vector<sdk::Result<sdk::InstanceMetadata>> Instances::metadataBatch(
    const sdk::Call& call, const std::vector<sdk::Node>& nodes) {
  std::vector<sdk::Result<sdk::InstanceMetadata>> out;
  if (nodes.size() <= kSmallBatch) {
    for (const sdk::Node& node : nodes) {
      out.push_back(metadata(call, node));
    }
    return out;
  }
  std::map<std::string, Server> by_id;
  std::map<std::string, std::vector<std::string>> ids_by_name;
  sdk::Status listed = nova_.listServers(call, [&](Server s) {
    ids_by_name[s.name].push_back(s.id);
    std::string id = s.id;
    by_id.emplace(std::move(id), std::move(s));
  });
  if (!listed.ok()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      out.push_back(listed);
    }
    return out;
  }
  // Resolve each node to a server ID (or an error).
  std::vector<sdk::Result<std::string>> resolved;
  std::vector<std::string> wanted;
  for (const sdk::Node& node : nodes) {
    if (!node.provider_id.empty()) {
      auto pid = parseProviderId(node.provider_id);
      if (!pid.ok()) {
        resolved.push_back(pid.status());
      } else if (!pid->region.empty() && pid->region != config_.global.region) {
        resolved.push_back(sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                                  "providerID " + node.provider_id + " is in another region"));
      } else if (by_id.count(pid->server_id) == 0) {
        resolved.push_back(sdk::Status(CCM_STATUS_NOT_FOUND, "server " + pid->server_id + " of node " +
                                                      node.name + " does not exist"));
      } else {
        resolved.push_back(pid->server_id);
      }
    } else {
      auto it = ids_by_name.find(node.name);
      if (it == ids_by_name.end()) {
        resolved.push_back(sdk::Status(CCM_STATUS_NOT_FOUND, "no server is named " + node.name));
      } else if (it->second.size() > 1) {
        resolved.push_back(
            sdk::Status(CCM_STATUS_FAILED_PRECONDITION, "several servers are named " + node.name));
      } else {
        resolved.push_back(it->second.front());
      }
    }
    if (resolved.back().ok()) {
      wanted.push_back(*resolved.back());
    }
  }
  // Ports of all wanted servers, a chunk of device IDs per request.
  std::map<std::string, std::vector<Port>> ports_by_device;
  sdk::Status ports_status;
  for (size_t i = 0; i < wanted.size() && ports_status.ok(); i += kPortQueryChunk) {
    std::string query;
    for (size_t j = i; j < std::min(wanted.size(), i + kPortQueryChunk); ++j) {
      query += (query.empty() ? "" : "&") + std::string("device_id=") + urlEncode(wanted[j]);
    }
    auto ports = neutron_.listPorts(call, query);
    if (!ports.ok()) {
      ports_status = ports.status();
      break;
    }
    for (Port& p : *ports) {
      ports_by_device[p.device_id].push_back(std::move(p));
    }
  }
  for (auto& r : resolved) {
    if (!r.ok()) {
      out.push_back(r.status());
    } else if (!ports_status.ok()) {
      out.push_back(ports_status);
    } else {
      out.push_back(build(call, by_id.at(*r), ports_by_device[*r]));
    }
  }
  return out;
}

}  // namespace ccm::openstack
