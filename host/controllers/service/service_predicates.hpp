// The service controller's decisions as pure functions of cached objects: which Services want
// a cloud load balancer, which need clean-up, which spec changes matter, which Nodes belong in
// a load balancer's host set, and which Node changes trigger a host update (upstream's rules,
// reference §5.2, §5.3, §5.8).
//
// THREAD: pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/kube/objects/node.hpp"
#include "host/kube/objects/service.hpp"

namespace ccm::controllers::service {

// Which Services of type LoadBalancer the controller handles, by spec.loadBalancerClass
// (--load-balancer-class, --load-balancer-class-only). The default value is upstream's rule:
// only Services without a class.
struct ClassSelection {
  std::vector<std::string> classes;  // handled besides (or, without unclassed, instead of) none
  bool unclassed = true;             // Services without a class are handled

  // From --load-balancer-class and --load-balancer-class-only.
  static ClassSelection fromFlags(const std::vector<std::string>& classes, bool class_only);
  // Is the Service's class (or its lack of one) handled?
  bool handles(const kube::Service& svc) const;
};

// type LoadBalancer and a class the selection handles.
bool wantsLoadBalancer(const kube::Service& svc, const ClassSelection& classes);

// Of type LoadBalancer with a class another controller handles: never written, never passed
// to the provider.
bool belongsElsewhere(const kube::Service& svc, const ClassSelection& classes);

// Has the load-balancer-cleanup finalizer, is being deleted or no longer of type LoadBalancer,
// and does not belong elsewhere (a Service of another class keeps whatever finalizers its own
// controller manages).
bool needsCleanup(const kube::Service& svc, const ClassSelection& classes);

// Annotation changes the host itself wrote for the provider: key -> value set, or nullopt for
// a key removed.
using AnnotationWrite = std::map<std::string, std::optional<std::string>>;

// Did a field the load balancer depends on change (or did the wish for one change)? old may be
// null (treated as "no load balancer wanted"). An annotation change that is exactly own_write
// (the host's write of the provider's annotations) does not count: it would only make the
// provider redo what it just did.
bool needsUpdate(const kube::Service* old_svc, const kube::Service& new_svc,
                 const ClassSelection& classes, const AnnotationWrite* own_write = nullptr);

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
