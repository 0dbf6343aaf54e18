// Node address mapping from Nova and Neutron data.
#include "plugins/openstack/node_addresses.hpp"

#include <algorithm>
#include <map>

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

bool isV6(const std::string& addr) {
  return ipFamilyOf(addr) == 6;
}

void add(std::vector<sdk::NodeAddress>& out, const std::string& type, const std::string& addr) {
  sdk::NodeAddress a{type, addr};
  if (std::find(out.begin(), out.end(), a) == out.end()) {
    out.push_back(std::move(a));
  }
}

void removeAddress(std::vector<sdk::NodeAddress>& out, const std::string& addr) {
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const sdk::NodeAddress& a) { return a.address == addr; }),
            out.end());
}

}  // namespace

std::vector<sdk::NodeAddress> mapNodeAddresses(const Server& server, const std::vector<Port>& ports,
                                          const std::vector<NovaAddress>& extra,
                                          const NetworkingConfig& cfg) {
  std::vector<sdk::NodeAddress> out;
  bool v6_off = cfg.ipv6_support_disabled;
  for (const Port& port : ports) {
    if (port.status != "ACTIVE") {
      continue;
    }
    for (const FixedIp& ip : port.fixed_ips) {
      if (v6_off && isV6(ip.ip_address)) {
        continue;
      }
      add(out, "InternalIP", ip.ip_address);
    }
  }
  if (!server.access_ipv4.empty()) {
    add(out, "ExternalIP", server.access_ipv4);
  }
  if (!server.access_ipv6.empty() && !v6_off) {
    add(out, "ExternalIP", server.access_ipv6);
  }
  if (auto it = server.metadata.find("hostname");
      it != server.metadata.end() && !it->second.empty()) {
    add(out, "Hostname", it->second);
  }

  std::map<std::string, std::vector<const NovaAddress*>> by_network;  // sorted by name
  for (const NovaAddress& a : server.addresses) {
    by_network[a.network].push_back(&a);
  }
  for (const NovaAddress& a : extra) {
    by_network[a.network].push_back(&a);
  }
  for (const auto& [network, addrs] : by_network) {
    for (const NovaAddress* a : addrs) {
      if (v6_off && (a->version == 6 || isV6(a->addr))) {
        continue;
      }
      if (a->type == "floating") {
        add(out, "ExternalIP", a->addr);
      } else if (contains(cfg.public_network_names, network)) {
        removeAddress(out, a->addr);
        add(out, "ExternalIP", a->addr);
      } else if (cfg.internal_network_names.empty() ||
                 contains(cfg.internal_network_names, network)) {
        add(out, "InternalIP", a->addr);
      } else {
        removeAddress(out, a->addr);
      }
    }
  }
  sortNodeAddresses(out, cfg.address_sort_cidrs);
  return out;
}

void sortNodeAddresses(std::vector<sdk::NodeAddress>& addresses, const std::vector<Cidr>& order) {
  if (order.empty()) {
    return;
  }
  struct Keyed {
    sdk::NodeAddress addr;
    size_t priority;
    IpAddress ip;
  };
  std::vector<Keyed> keyed;
  for (auto& a : addresses) {
    Keyed k{a, 0, {}};
    if (a.type != "Hostname") {
      if (auto ip = IpAddress::parse(a.address)) {
        k.ip = *ip;
        for (size_t i = 0; i < order.size(); ++i) {
          if (order[i].contains(*ip)) {
            k.priority = order.size() - i;
            break;
          }
        }
      }
    }
    keyed.push_back(std::move(k));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    if (a.priority != b.priority) {
      return a.priority > b.priority;
    }
    if (a.priority == 0) {
      return false;
    }
    return a.ip.bytes < b.ip.bytes;
  });
  addresses.clear();
  for (auto& k : keyed) {
    addresses.push_back(std::move(k.addr));
  }
}

}  // namespace ccm::openstack
