// Node address rules of the cloud node controller (upstream's updateNodeAddress and
// GetNodeAddressesFromNodeIP), as pure functions.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "host/kube/objects/node.hpp"
#include "host/plugin/provider.hpp"
#include "host/runtime/status.hpp"

namespace ccm::controllers::node {

using Addresses = std::vector<plugin::NodeAddress>;

// The cloud's addresses plus, when the cloud reports no Hostname, every Hostname address the
// node already has (the kubelet-reported hostname survives).
Addresses withKubeletHostname(const Addresses& cloud,
                              const kube::NodeList<kube::NodeAddress>& current);

// Filters cloud addresses by the alpha.kubernetes.io/provided-node-ip annotation: one IP, or
// two of different families. For each provided IP (in order) the matching cloud addresses
// come first (compared as IPs, not text) and claim their type; then every address of an
// unclaimed type follows in cloud order. Errors: an unparsable annotation, a dual-stack pair
// with an unspecified address or two of one family, a provided IP the cloud does not report.
StatusOr<Addresses> filterByProvidedNodeIp(std::string_view annotation, const Addresses& cloud);

// What to publish for a node given the cloud's addresses: std::nullopt when nothing should be
// written (the cloud reported none: existing addresses are kept), else the full list with
// each (type, address) once (the API server refuses duplicates).
StatusOr<std::optional<Addresses>> desiredAddresses(const kube::Node& node, const Addresses& cloud);

// True when the node's current addresses differ from desired, compared as ordered lists of
// (type, address): the order matters to consumers (the first InternalIP is "the" node IP).
// Upstream keys the old list by type, so a node with two addresses of one type is "changed"
// on every refresh; this comparison has no such false positive.
bool addressesChanged(const kube::NodeList<kube::NodeAddress>& current, const Addresses& desired);

// True when both are IP addresses with the same value ("2001:db8::1" == "2001:db8:0::1").
bool sameIp(std::string_view a, std::string_view b);

}  // namespace ccm::controllers::node
