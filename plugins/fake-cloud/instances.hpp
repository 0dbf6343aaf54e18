// Instances: which machine of the World a Node is — a listed instance, matched by providerID
// and else by name, or an automatic one made up for the node — and what the cloud answers
// about it (existence, power state, metadata).
#pragma once

#include "ccm/provider.hpp"
#include "plugins/fake-cloud/config.hpp"

namespace ccm::fakecloud {

// Exists or NotFound; UNAVAILABLE when the machine's state is unknown (or no machine matches
// and the World says unlisted nodes are unknown).
sdk::Result<sdk::Existence> instanceExists(const World& world, const sdk::NodeView& node);

// Running or Shutdown; NOT_FOUND or UNAVAILABLE as for instanceMetadata.
sdk::Result<sdk::Power> instancePower(const World& world, const sdk::NodeView& node);

// The machine's metadata; NOT_FOUND when there is none (or it is absent), UNAVAILABLE when its
// state is unknown.
sdk::Result<sdk::InstanceMetadata> instanceMetadata(const World& world, const sdk::NodeView& node);

}  // namespace ccm::fakecloud
