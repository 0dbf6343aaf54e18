// The protobuf field-number table.
#include "kubesim/protobuf_fields.hpp"

#include <sstream>
#include <string_view>

namespace ccm::kubesim {
namespace {

// "Struct: field=N ..." — protobuf field numbers of the API types (k8s.io/api generated.proto).
constexpr std::string_view kNumbers = R"(
ObjectMeta: name=1 generateName=2 namespace=3 selfLink=4 uid=5 resourceVersion=6 generation=7 creationTimestamp=8 deletionTimestamp=9 deletionGracePeriodSeconds=10 labels=11 annotations=12 ownerReferences=13 finalizers=14 managedFields=17
ManagedFieldsEntry: manager=1 operation=2 apiVersion=3 time=4 fieldsType=6 fieldsV1=7 subresource=8
OwnerReference: kind=1 name=3 uid=4 apiVersion=5 controller=6 blockOwnerDeletion=7
ObjectReference: kind=1 namespace=2 name=3 uid=4 apiVersion=5 resourceVersion=6 fieldPath=7
LocalObjectReference: name=1
Namespace: metadata=1 spec=2 status=3
NamespaceSpec: finalizers=1
NamespaceStatus: phase=1
ConfigMap: metadata=1 data=2 binaryData=3 immutable=4
Secret: metadata=1 data=2 type=3 stringData=4 immutable=5
ServiceAccount: metadata=1 secrets=2 imagePullSecrets=3 automountServiceAccountToken=4
Service: metadata=1 spec=2 status=3
ServiceSpec: ports=1 selector=2 clusterIP=3 type=4 externalIPs=5 sessionAffinity=7 loadBalancerIP=8 loadBalancerSourceRanges=9 externalName=10 externalTrafficPolicy=11 healthCheckNodePort=12 publishNotReadyAddresses=13 ipFamilyPolicy=17 clusterIPs=18 ipFamilies=19 allocateLoadBalancerNodePorts=20 loadBalancerClass=21 internalTrafficPolicy=22 trafficDistribution=23
ServicePort: name=1 protocol=2 port=3 targetPort=4 nodePort=5 appProtocol=6
ServiceStatus: loadBalancer=1 conditions=2
LoadBalancerStatus: ingress=1
LoadBalancerIngress: ip=1 hostname=2 ipMode=3 ports=4
PortStatus: port=1 protocol=2 error=3
Lease: metadata=1 spec=2
LeaseSpec: holderIdentity=1 leaseDurationSeconds=2 acquireTime=3 renewTime=4 leaseTransitions=5 strategy=6 preferredHolder=7
Event: metadata=1 involvedObject=2 reason=3 message=4 source=5 firstTimestamp=6 lastTimestamp=7 count=8 type=9 eventTime=10 series=11 action=12 related=13 reportingComponent=14 reportingInstance=15
EventSource: component=1 host=2
EventSeries: count=1 lastObservedTime=2
ClusterRole: metadata=1 rules=2 aggregationRule=3
Role: metadata=1 rules=2
PolicyRule: verbs=1 apiGroups=2 resources=3 resourceNames=4 nonResourceURLs=5
AggregationRule: clusterRoleSelectors=1
LabelSelector: matchLabels=1 matchExpressions=2
LabelSelectorRequirement: key=1 operator=2 values=3
ClusterRoleBinding: metadata=1 subjects=2 roleRef=3
RoleBinding: metadata=1 subjects=2 roleRef=3
Subject: kind=1 apiGroup=2 name=3 namespace=4
RoleRef: apiGroup=1 kind=2 name=3
TokenRequest: metadata=1 spec=2 status=3
TokenRequestSpec: audiences=1 expirationSeconds=4
TokenReview: metadata=1 spec=2
TokenReviewSpec: token=1 audiences=2
SelfSubjectReview: metadata=1
SubjectAccessReview: metadata=1 spec=2
LocalSubjectAccessReview: metadata=1 spec=2
SubjectAccessReviewSpec: resourceAttributes=1 nonResourceAttributes=2 user=3 groups=4 uid=6
SelfSubjectAccessReview: metadata=1 spec=2
SelfSubjectAccessReviewSpec: resourceAttributes=1 nonResourceAttributes=2
ResourceAttributes: namespace=1 verb=2 group=3 version=4 resource=5 subresource=6 name=7
NonResourceAttributes: path=1 verb=2
DeleteOptions: gracePeriodSeconds=1 preconditions=2 orphanDependents=3 propagationPolicy=4 dryRun=5
Preconditions: uid=1 resourceVersion=2
Node: metadata=1 spec=2 status=3
NodeSpec: podCIDR=1 externalID=2 providerID=3 unschedulable=4 taints=5 configSource=6 podCIDRs=7
Taint: key=1 value=2 effect=3 timeAdded=4
NodeStatus: capacity=1 allocatable=2 phase=3 conditions=4 addresses=5 daemonEndpoints=6 nodeInfo=7 images=8 volumesInUse=9 volumesAttached=10 config=11 runtimeHandlers=12 features=13 declaredFeatures=14
NodeCondition: type=1 status=2 lastHeartbeatTime=3 lastTransitionTime=4 reason=5 message=6
NodeAddress: type=1 address=2
NodeDaemonEndpoints: kubeletEndpoint=1
DaemonEndpoint: Port=1
NodeSystemInfo: machineID=1 systemUUID=2 bootID=3 kernelVersion=4 osImage=5 containerRuntimeVersion=6 kubeletVersion=7 kubeProxyVersion=8 operatingSystem=9 architecture=10 swap=11
ContainerImage: names=1 sizeBytes=2
AttachedVolume: name=1 devicePath=2
Endpoints: metadata=1 subsets=2
EndpointSubset: addresses=1 notReadyAddresses=2 ports=3
EndpointAddress: ip=1 targetRef=2 hostname=3 nodeName=4
EndpointPort: name=1 port=2 protocol=3 appProtocol=4
Condition: type=1 status=2 observedGeneration=3 lastTransitionTime=4 reason=5 message=6
ListMeta: selfLink=1 resourceVersion=2 continue=3 remainingItemCount=4
Status: metadata=1 status=2 message=3 reason=4 details=5 code=6
StatusDetails: name=1 group=2 kind=3 causes=4 retryAfterSeconds=5 uid=6
StatusCause: reason=1 message=2 field=3
)";

ProtobufFieldNumbers parse() {
  ProtobufFieldNumbers numbers;
  std::istringstream lines{std::string(kNumbers)};
  std::string line;
  while (std::getline(lines, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) {
      continue;
    }
    auto& fields = numbers[line.substr(0, colon)];
    std::istringstream parts(line.substr(colon + 1));
    std::string f;
    while (parts >> f) {
      size_t eq = f.find('=');
      fields[std::stoi(f.substr(eq + 1))] = f.substr(0, eq);
    }
  }
  return numbers;
}

}  // namespace

const ProtobufFieldNumbers& protobufFieldNumbers() {
  static const ProtobufFieldNumbers* table = new ProtobufFieldNumbers(parse());
  return *table;
}

}  // namespace ccm::kubesim
