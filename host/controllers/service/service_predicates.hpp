// The service controller's decisions as pure functions of cached objects: which Services want
// a cloud load balancer, which need clean-up, which spec changes matter, which Nodes belong in
// a load balancer's host set, and which Node changes trigger a host update (upstream's rules,
// reference §5.2, §5.3, §5.8).
//
// THREAD: pure functions.
#pragma once

#include <string_view>

#include "host/kube/objects/node.hpp"
#include "host/kube/objects/service.hpp"

namespace ccm::controllers::service {

// type LoadBalancer and no spec.loadBalancerClass.
bool wantsLoadBalancer(const kube::Service& svc);

// Has the load-balancer-cleanup finalizer and is being deleted or no longer of type
// LoadBalancer.
bool needsCleanup(const kube::Service& svc);

// Did a field the load balancer depends on change (or did the wish for one change)? old may be
// null (treated as "no load balancer wanted").
bool needsUpdate(const kube::Service* old_svc, const kube::Service& new_svc);

// Go's strconv.ParseBool false values: 0 f F false FALSE False.
bool parsesAsFalse(std::string_view value);

// Not excluded by node.kubernetes.io/exclude-from-external-load-balancers (absent, or a value
// that parses as false).
bool nodeIncluded(const kube::Node& node);
// No ToBeDeletedByClusterAutoscaler taint (any effect).
bool nodeNotToBeDeleted(const kube::Node& node);
// No deletionTimestamp.
bool nodeNotDeleted(const kube::Node& node);
// The stable node set predicates (KEP-3458): all three above. Readiness and cordoning are
// deliberately not considered.
bool nodeInLoadBalancerSet(const kube::Node& node);

// Does a Node update change a load balancer's host set (upstream's shouldSyncUpdatedNode):
// the exclusion label flipped, or spec.providerID changed.
bool shouldSyncUpdatedNode(const kube::Node& old_node, const kube::Node& new_node);

// Did anything a provider sees of a Node (labels, annotations, providerID, addresses, taints,
// deletionTimestamp, nodeInfo) change? Heartbeats and conditions alone do not count.
bool nodeChangedForProvider(const kube::Node& old_node, const kube::Node& new_node);

}  // namespace ccm::controllers::service
