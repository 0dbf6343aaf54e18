// Well-known keys the cloud controllers read and write: labels, taints, annotations,
// finalizers, condition types and reasons (upstream's exact spellings).
#pragma once

#include <string_view>

namespace ccm::controllers::keys {

// Taints.
inline constexpr std::string_view kUninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized";
inline constexpr std::string_view kShutdownTaint = "node.cloudprovider.kubernetes.io/shutdown";
inline constexpr std::string_view kToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler";
inline constexpr std::string_view kNoSchedule = "NoSchedule";

// Node labels (stable and beta).
inline constexpr std::string_view kInstanceType = "node.kubernetes.io/instance-type";
inline constexpr std::string_view kInstanceTypeBeta = "beta.kubernetes.io/instance-type";
inline constexpr std::string_view kZone = "topology.kubernetes.io/zone";
inline constexpr std::string_view kZoneBeta = "failure-domain.beta.kubernetes.io/zone";
inline constexpr std::string_view kRegion = "topology.kubernetes.io/region";
inline constexpr std::string_view kRegionBeta = "failure-domain.beta.kubernetes.io/region";
inline constexpr std::string_view kExcludeFromLoadBalancers =
    "node.kubernetes.io/exclude-from-external-load-balancers";

// Node annotations.
inline constexpr std::string_view kProvidedNodeIp = "alpha.kubernetes.io/provided-node-ip";

// Services.
inline constexpr std::string_view kLoadBalancerCleanupFinalizer =
    "service.kubernetes.io/load-balancer-cleanup";
inline constexpr std::string_view kSourceRangesAnnotation =
    "service.beta.kubernetes.io/load-balancer-source-ranges";

// Node conditions.
inline constexpr std::string_view kReady = "Ready";
inline constexpr std::string_view kNetworkUnavailable = "NetworkUnavailable";

}  // namespace ccm::controllers::keys
