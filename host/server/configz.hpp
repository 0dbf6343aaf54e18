// /configz: the component configuration, as upstream's cloud-controller-manager serves it
// (component-base's configz under the name "cloudcontrollermanager.config.k8s.io"): one JSON
// object mapping that name to the internal CloudControllerManagerConfiguration, with Go's
// field names (Generic, KubeCloudShared, NodeController, ServiceController,
// NodeStatusUpdateFrequency, Webhook) and durations as Go prints them ("10s", "5m0s"). Only
// upstream's fields are listed; ccm's own flags are in the start-up log (--v=1).
//
// THREAD: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "host/options/options.hpp"

namespace ccm::server {

inline constexpr std::string_view kConfigzName = "cloudcontrollermanager.config.k8s.io";

// The /configz body for the command line's options.
std::string configzJson(const options::Options& options);

}  // namespace ccm::server
