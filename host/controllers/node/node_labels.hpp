// Node labels of the cloud node controller: the labels metadata puts on a node at
// initialisation, and the beta -> stable label reconciliation of initialised nodes.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/kube/objects/node.hpp"
#include "host/plugin/provider.hpp"

namespace ccm::controllers::node {

using LabelList = std::vector<std::pair<std::string, std::string>>;

// True for keys in the kubernetes.io or k8s.io domains (and their subdomains), which
// providers may not set as additional labels.
bool isReservedLabelKey(std::string_view key);

// True when key/value are a valid Kubernetes label key (optional DNS-subdomain prefix of at
// most 253 characters, '/', a name of at most 63) and label value.
bool isValidLabelKey(std::string_view key);
bool isValidLabelValue(std::string_view value);

// The labels to set from metadata: instance type, zone and region under both the stable and
// the beta keys (overwriting), then the additional labels that are valid, not reserved and
// not already on the node. Rejected additional labels are described in *warnings.
LabelList labelsFromMetadata(const kube::Node& node, const plugin::InstanceMetadata& metadata,
                             std::vector<std::string>* warnings);

// Beta labels are the source of truth (upstream): the stable labels to add or correct.
LabelList stableLabelFixes(const kube::Node& node);

}  // namespace ccm::controllers::node
