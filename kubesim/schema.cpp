// Schema: the type table and the decoding checks.
#include "kubesim/schema.hpp"

#include <cmath>
#include <sstream>

#include "host/runtime/base64.hpp"
#include "kubesim/api_error.hpp"
#include "kubesim/go_time.hpp"

namespace ccm::kubesim {
namespace {

// One struct per line: "Name: field:type field:type ...". Types: string int (int32) long
// (int64) bool number quantity intorstr time microtime bytes any StructName []T map[T].
// "@meta" expands to "apiVersion:string kind:string metadata:ObjectMeta".
constexpr std::string_view kTable = R"(
ObjectMeta: name:string generateName:string namespace:string selfLink:string uid:string resourceVersion:string generation:long creationTimestamp:time deletionTimestamp:time deletionGracePeriodSeconds:long labels:map[string] annotations:map[string] ownerReferences:[]OwnerReference finalizers:[]string managedFields:[]ManagedFieldsEntry
OwnerReference: apiVersion:string kind:string name:string uid:string controller:bool blockOwnerDeletion:bool
ManagedFieldsEntry: manager:string operation:string apiVersion:string time:time fieldsType:string fieldsV1:any subresource:string
ObjectReference: kind:string namespace:string name:string uid:string apiVersion:string resourceVersion:string fieldPath:string
LocalObjectReference: name:string
Condition: type:string status:string observedGeneration:long lastTransitionTime:time reason:string message:string
ListMeta: selfLink:string resourceVersion:string continue:string remainingItemCount:long
Status: apiVersion:string kind:string metadata:ListMeta status:string message:string reason:string details:StatusDetails code:int
StatusDetails: name:string group:string kind:string uid:string causes:[]StatusCause retryAfterSeconds:int
StatusCause: reason:string message:string field:string
Node: @meta spec:NodeSpec status:NodeStatus
NodeSpec: podCIDR:string podCIDRs:[]string providerID:string unschedulable:bool taints:[]Taint configSource:any externalID:string
Taint: key:string value:string effect:string timeAdded:time
NodeStatus: capacity:map[quantity] allocatable:map[quantity] phase:string conditions:[]NodeCondition addresses:[]NodeAddress daemonEndpoints:NodeDaemonEndpoints nodeInfo:NodeSystemInfo images:[]ContainerImage volumesInUse:[]string volumesAttached:[]AttachedVolume config:any runtimeHandlers:[]any features:any declaredFeatures:[]string
NodeCondition: type:string status:string lastHeartbeatTime:time lastTransitionTime:time reason:string message:string
NodeAddress: type:string address:string
NodeDaemonEndpoints: kubeletEndpoint:DaemonEndpoint
DaemonEndpoint: Port:int
NodeSystemInfo: machineID:string systemUUID:string bootID:string kernelVersion:string osImage:string containerRuntimeVersion:string kubeletVersion:string kubeProxyVersion:string operatingSystem:string architecture:string swap:any
ContainerImage: names:[]string sizeBytes:long
AttachedVolume: name:string devicePath:string
Service: @meta spec:ServiceSpec status:ServiceStatus
ServiceSpec: ports:[]ServicePort selector:map[string] clusterIP:string clusterIPs:[]string type:string externalIPs:[]string sessionAffinity:string loadBalancerIP:string loadBalancerSourceRanges:[]string externalName:string externalTrafficPolicy:string healthCheckNodePort:int publishNotReadyAddresses:bool sessionAffinityConfig:any ipFamilies:[]string ipFamilyPolicy:string allocateLoadBalancerNodePorts:bool loadBalancerClass:string internalTrafficPolicy:string trafficDistribution:string
ServicePort: name:string protocol:string appProtocol:string port:int targetPort:intorstr nodePort:int
ServiceStatus: loadBalancer:LoadBalancerStatus conditions:[]Condition
LoadBalancerStatus: ingress:[]LoadBalancerIngress
LoadBalancerIngress: ip:string hostname:string ipMode:string ports:[]PortStatus
PortStatus: port:int protocol:string error:string
Endpoints: @meta subsets:[]EndpointSubset
EndpointSubset: addresses:[]EndpointAddress notReadyAddresses:[]EndpointAddress ports:[]EndpointPort
EndpointAddress: ip:string hostname:string nodeName:string targetRef:ObjectReference
EndpointPort: name:string port:int protocol:string appProtocol:string
EndpointSlice: @meta addressType:string endpoints:[]Endpoint ports:[]EndpointSlicePort
Endpoint: addresses:[]string conditions:EndpointConditions hostname:string targetRef:ObjectReference deprecatedTopology:map[string] nodeName:string zone:string hints:any
EndpointConditions: ready:bool serving:bool terminating:bool
EndpointSlicePort: name:string protocol:string port:int appProtocol:string
Event: @meta involvedObject:ObjectReference reason:string message:string source:EventSource firstTimestamp:time lastTimestamp:time count:int type:string eventTime:microtime series:EventSeries action:string related:ObjectReference reportingComponent:string reportingInstance:string
EventSource: component:string host:string
EventSeries: count:int lastObservedTime:microtime
EventsV1Event: @meta eventTime:microtime series:EventSeries reportingController:string reportingInstance:string action:string reason:string regarding:ObjectReference related:ObjectReference note:string type:string deprecatedSource:EventSource deprecatedFirstTimestamp:time deprecatedLastTimestamp:time deprecatedCount:int
Lease: @meta spec:LeaseSpec
LeaseSpec: holderIdentity:string leaseDurationSeconds:int acquireTime:microtime renewTime:microtime leaseTransitions:int strategy:string preferredHolder:string
Namespace: @meta spec:NamespaceSpec status:NamespaceStatus
NamespaceSpec: finalizers:[]string
NamespaceStatus: phase:string conditions:[]any
ConfigMap: @meta immutable:bool data:map[string] binaryData:map[bytes]
Secret: @meta immutable:bool data:map[bytes] stringData:map[string] type:string
ServiceAccount: @meta secrets:[]ObjectReference imagePullSecrets:[]LocalObjectReference automountServiceAccountToken:bool
Pod: @meta spec:PodSpec status:PodStatus
PodSpec: volumes:[]any initContainers:[]Container containers:[]Container ephemeralContainers:[]any restartPolicy:string terminationGracePeriodSeconds:long activeDeadlineSeconds:long dnsPolicy:string nodeSelector:map[string] serviceAccountName:string serviceAccount:string automountServiceAccountToken:bool nodeName:string hostNetwork:bool hostPID:bool hostIPC:bool shareProcessNamespace:bool securityContext:any imagePullSecrets:[]LocalObjectReference hostname:string subdomain:string affinity:any schedulerName:string tolerations:[]Toleration hostAliases:[]any priorityClassName:string priority:int dnsConfig:any readinessGates:[]any runtimeClassName:string enableServiceLinks:bool preemptionPolicy:string overhead:map[quantity] topologySpreadConstraints:[]any setHostnameAsFQDN:bool os:any hostUsers:bool schedulingGates:[]any resourceClaims:[]any resources:any
Container: name:string image:string command:[]string args:[]string workingDir:string ports:[]ContainerPort envFrom:[]any env:[]any resources:any resizePolicy:[]any restartPolicy:string volumeMounts:[]any volumeDevices:[]any livenessProbe:any readinessProbe:any startupProbe:any lifecycle:any terminationMessagePath:string terminationMessagePolicy:string imagePullPolicy:string securityContext:any stdin:bool stdinOnce:bool tty:bool
ContainerPort: name:string hostPort:int containerPort:int protocol:string hostIP:string
Toleration: key:string operator:string value:string effect:string tolerationSeconds:long
PodStatus: phase:string conditions:[]any message:string reason:string nominatedNodeName:string hostIP:string hostIPs:[]any podIP:string podIPs:[]any startTime:time initContainerStatuses:[]any containerStatuses:[]any qosClass:string ephemeralContainerStatuses:[]any resize:string resourceClaimStatuses:[]any observedGeneration:long
ClusterRole: @meta rules:[]PolicyRule aggregationRule:AggregationRule
Role: @meta rules:[]PolicyRule
PolicyRule: verbs:[]string apiGroups:[]string resources:[]string resourceNames:[]string nonResourceURLs:[]string
AggregationRule: clusterRoleSelectors:[]LabelSelector
LabelSelector: matchLabels:map[string] matchExpressions:[]LabelSelectorRequirement
LabelSelectorRequirement: key:string operator:string values:[]string
ClusterRoleBinding: @meta subjects:[]Subject roleRef:RoleRef
RoleBinding: @meta subjects:[]Subject roleRef:RoleRef
Subject: kind:string apiGroup:string name:string namespace:string
RoleRef: apiGroup:string kind:string name:string
PodTemplateSpec: metadata:ObjectMeta spec:PodSpec
DaemonSet: @meta spec:DaemonSetSpec status:DaemonSetStatus
DaemonSetSpec: selector:LabelSelector template:PodTemplateSpec updateStrategy:DaemonSetUpdateStrategy minReadySeconds:int revisionHistoryLimit:int
DaemonSetUpdateStrategy: type:string rollingUpdate:RollingUpdateDaemonSet
RollingUpdateDaemonSet: maxUnavailable:intorstr maxSurge:intorstr
DaemonSetStatus: currentNumberScheduled:int numberMisscheduled:int desiredNumberScheduled:int numberReady:int observedGeneration:long updatedNumberScheduled:int numberAvailable:int numberUnavailable:int collisionCount:int conditions:[]any
Deployment: @meta spec:DeploymentSpec status:DeploymentStatus
DeploymentSpec: replicas:int selector:LabelSelector template:PodTemplateSpec strategy:DeploymentStrategy minReadySeconds:int revisionHistoryLimit:int paused:bool progressDeadlineSeconds:int
DeploymentStrategy: type:string rollingUpdate:RollingUpdateDeployment
RollingUpdateDeployment: maxUnavailable:intorstr maxSurge:intorstr
DeploymentStatus: observedGeneration:long replicas:int updatedReplicas:int readyReplicas:int availableReplicas:int unavailableReplicas:int terminatingReplicas:int conditions:[]any collisionCount:int
PodDisruptionBudget: @meta spec:PodDisruptionBudgetSpec status:PodDisruptionBudgetStatus
PodDisruptionBudgetSpec: minAvailable:intorstr selector:LabelSelector maxUnavailable:intorstr unhealthyPodEvictionPolicy:string
PodDisruptionBudgetStatus: observedGeneration:long disruptedPods:map[time] disruptionsAllowed:int currentHealthy:int desiredHealthy:int expectedPods:int conditions:[]Condition
TokenRequest: @meta spec:TokenRequestSpec status:TokenRequestStatus
TokenRequestSpec: audiences:[]string expirationSeconds:long boundObjectRef:any
TokenRequestStatus: token:string expirationTimestamp:time
TokenReview: @meta spec:TokenReviewSpec status:any
TokenReviewSpec: token:string audiences:[]string
SelfSubjectReview: @meta status:any
SubjectAccessReview: @meta spec:SubjectAccessReviewSpec status:any
LocalSubjectAccessReview: @meta spec:SubjectAccessReviewSpec status:any
SubjectAccessReviewSpec: resourceAttributes:ResourceAttributes nonResourceAttributes:NonResourceAttributes user:string groups:[]string extra:map[any] uid:string
ResourceAttributes: namespace:string verb:string group:string version:string resource:string subresource:string name:string fieldSelector:any labelSelector:any
NonResourceAttributes: path:string verb:string
SelfSubjectAccessReview: @meta spec:SelfSubjectAccessReviewSpec status:any
SelfSubjectAccessReviewSpec: resourceAttributes:ResourceAttributes nonResourceAttributes:NonResourceAttributes
DeleteOptions: apiVersion:string kind:string gracePeriodSeconds:long preconditions:Preconditions orphanDependents:bool propagationPolicy:string dryRun:[]string ignoreStoreReadErrorWithClusterBreakingPotential:bool
Preconditions: uid:string resourceVersion:string
)";

std::string_view jsonTypeName(const JsonValue& v) {
  if (v.IsString()) {
    return "string";
  }
  if (v.IsNumber()) {
    return "number";
  }
  if (v.IsBool()) {
    return "bool";
  }
  if (v.IsObject()) {
    return "object";
  }
  if (v.IsArray()) {
    return "array";
  }
  return "null";
}

bool validQuantity(std::string_view s) {
  // Loose form of ^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    ++i;
  }
  size_t digits = i;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) {
    ++i;
  }
  if (i == digits) {
    return false;
  }
  std::string_view suffix = s.substr(i);
  static const char* kSuffixes[] = {"",  "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n",
                                    "u", "m",  "k",  "M",  "G",  "T",  "P",  "E"};
  for (const char* suf : kSuffixes) {
    if (suffix == suf) {
      return true;
    }
  }
  if (!suffix.empty() && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t j = 1;
    if (j < suffix.size() && (suffix[j] == '+' || suffix[j] == '-')) {
      ++j;
    }
    if (j == suffix.size()) {
      return false;
    }
    for (; j < suffix.size(); ++j) {
      if (suffix[j] < '0' || suffix[j] > '9') {
        return false;
      }
    }
    return true;
  }
  return false;
}

}  // namespace

const Schema::TypeRef* Schema::StructDef::field(std::string_view name) const {
  for (const auto& [n, t] : fields) {
    if (n == name) {
      return &t;
    }
  }
  return nullptr;
}

const Schema& Schema::builtin() {
  static const Schema* schema = new Schema();
  return *schema;
}

Schema::TypeRef Schema::parseType(std::string_view text) const {
  TypeRef t;
  if (text.rfind("[]", 0) == 0) {
    t.kind = Kind::Array;
    t.element = std::make_shared<TypeRef>(parseType(text.substr(2)));
  } else if (text.rfind("map[", 0) == 0) {
    t.kind = Kind::Map;
    t.element = std::make_shared<TypeRef>(parseType(text.substr(4, text.size() - 5)));
  } else if (text == "string") {
    t.kind = Kind::String;
  } else if (text == "int") {
    t.kind = Kind::Int32;
  } else if (text == "long") {
    t.kind = Kind::Int64;
  } else if (text == "bool") {
    t.kind = Kind::Bool;
  } else if (text == "number") {
    t.kind = Kind::Number;
  } else if (text == "quantity") {
    t.kind = Kind::Quantity;
  } else if (text == "intorstr") {
    t.kind = Kind::IntOrString;
  } else if (text == "time") {
    t.kind = Kind::Time;
  } else if (text == "microtime") {
    t.kind = Kind::MicroTime;
  } else if (text == "bytes") {
    t.kind = Kind::Bytes;
  } else if (text == "any") {
    t.kind = Kind::Any;
  } else {
    t.kind = Kind::Struct;
    t.struct_name = std::string(text);
  }
  return t;
}

Schema::Schema() {
  std::istringstream lines{std::string(kTable)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) {
      continue;
    }
    size_t colon = line.find(':');
    StructDef def;
    def.name = line.substr(0, colon);
    std::istringstream fields(line.substr(colon + 1));
    std::string f;
    while (fields >> f) {
      if (f == "@meta") {
        def.fields.emplace_back("apiVersion", parseType("string"));
        def.fields.emplace_back("kind", parseType("string"));
        def.fields.emplace_back("metadata", parseType("ObjectMeta"));
        continue;
      }
      size_t c = f.find(':');
      def.fields.emplace_back(f.substr(0, c), parseType(f.substr(c + 1)));
    }
    structs_.emplace(def.name, std::move(def));
  }
}

const Schema::StructDef* Schema::structDef(std::string_view name) const {
  auto it = structs_.find(name);
  return it == structs_.end() ? nullptr : &it->second;
}

std::string Schema::rootFor(std::string_view group, std::string_view kind) const {
  if (group == "events.k8s.io" && kind == "Event") {
    return "EventsV1Event";
  }
  return std::string(kind);
}

std::string Schema::goTypeName(const TypeRef& t) const {
  switch (t.kind) {
    case Kind::String:
      return "string";
    case Kind::Int32:
      return "int32";
    case Kind::Int64:
      return "int64";
    case Kind::Bool:
      return "bool";
    case Kind::Number:
      return "float64";
    case Kind::Quantity:
      return "resource.Quantity";
    case Kind::IntOrString:
      return "intstr.IntOrString";
    case Kind::Time:
      return "v1.Time";
    case Kind::MicroTime:
      return "v1.MicroTime";
    case Kind::Bytes:
      return "[]uint8";
    case Kind::Any:
      return "interface {}";
    case Kind::Struct:
      return "v1." + t.struct_name;
    case Kind::Map:
      return "map[string]" + goTypeName(*t.element);
    case Kind::Array:
      return "[]" + goTypeName(*t.element);
  }
  return "interface {}";
}

Schema::Issues Schema::check(std::string_view root, JsonValue& v, JsonAllocator& alloc,
                             bool prune) const {
  Issues issues;
  const StructDef* def = structDef(root);
  if (def == nullptr) {
    return issues;
  }
  if (!v.IsObject()) {
    issues.type_error = "json: cannot unmarshal " + std::string(jsonTypeName(v)) +
                        " into Go value of type v1." + std::string(root);
    return issues;
  }
  std::string path;
  checkStruct(*def, v, alloc, prune, path, issues);
  return issues;
}

void Schema::checkStruct(const StructDef& def, JsonValue& v, JsonAllocator& alloc, bool prune,
                         std::string& path, Issues& issues) const {
  const size_t base = path.size();
  for (auto it = v.MemberBegin(); it != memberEnd(v);) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (base != 0) {
      path.push_back('.');
    }
    path.append(name);
    const TypeRef* t = def.field(name);
    if (t == nullptr) {
      issues.unknown_fields.push_back(path);
      path.resize(base);
      if (prune) {
        it = v.EraseMember(it);
        continue;
      }
      ++it;
      continue;
    }
    if (it->value.IsNull()) {
      path.resize(base);
      if (prune) {
        it = v.EraseMember(it);
        continue;
      }
      ++it;
      continue;
    }
    checkValue(*t, it->value, alloc, prune, path, def.name, issues);
    path.resize(base);
    ++it;
  }
}

void Schema::checkValue(const TypeRef& t, JsonValue& v, JsonAllocator& alloc, bool prune,
                        std::string& path, const std::string& parent, Issues& issues) const {
  auto typeError = [&](const std::string& detail = {}) {
    if (issues.type_error) {
      return;
    }
    if (!detail.empty()) {
      issues.type_error = detail;
      return;
    }
    issues.type_error = "json: cannot unmarshal " + std::string(jsonTypeName(v)) +
                        " into Go struct field " + parent + "." + path + " of type " +
                        goTypeName(t);
  };
  if (v.IsNull()) {
    return;
  }
  switch (t.kind) {
    case Kind::String:
      if (!v.IsString()) {
        typeError();
      }
      break;
    case Kind::Int32:
    case Kind::Int64: {
      if (!v.IsNumber()) {
        typeError();
        break;
      }
      bool integral = v.IsInt64() || v.IsUint64();
      bool range_ok = t.kind == Kind::Int64 ? v.IsInt64() : v.IsInt();
      if (v.IsDouble()) {
        double d = v.GetDouble();
        integral = std::floor(d) == d;
        range_ok = integral && std::fabs(d) < (t.kind == Kind::Int64 ? 9.2e18 : 2147483648.0);
        if (range_ok) {
          v.SetInt64(static_cast<int64_t>(d));  // 1.0 decodes as 1
        }
      }
      if (!integral || !range_ok) {
        std::string num = toJson(v);
        issues.type_error = issues.type_error.value_or("json: cannot unmarshal number " + num +
                                                       " into Go struct field " + parent + "." +
                                                       path + " of type " + goTypeName(t));
      }
      break;
    }
    case Kind::Bool:
      if (!v.IsBool()) {
        typeError();
      }
      break;
    case Kind::Number:
      if (!v.IsNumber()) {
        typeError();
      }
      break;
    case Kind::Quantity:
      if (v.IsNumber()) {
        break;
      }
      if (!v.IsString()) {
        typeError();
      } else if (!validQuantity({v.GetString(), v.GetStringLength()})) {
        typeError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
      }
      break;
    case Kind::IntOrString:
      if (!v.IsString() && !v.IsInt()) {
        typeError();
      }
      break;
    case Kind::Time:
    case Kind::MicroTime:
      // metav1.Time reads RFC 3339, metav1.MicroTime exactly six fractional digits.
      if (!v.IsString()) {
        typeError();
      } else if (auto err = goTimeParseError(
                     t.kind == Kind::MicroTime ? GoTimeLayout::Rfc3339Micro : GoTimeLayout::Rfc3339,
                     {v.GetString(), v.GetStringLength()})) {
        typeError(*err);
      }
      break;
    case Kind::Bytes:
      if (!v.IsString()) {
        typeError();
      } else if (!base64DecodeStrict({v.GetString(), v.GetStringLength()})) {
        typeError("illegal base64 data at input byte 0");
      }
      break;
    case Kind::Any:
      break;
    case Kind::Struct: {
      if (!v.IsObject()) {
        typeError();
        break;
      }
      const StructDef* def = structDef(t.struct_name);
      if (def != nullptr) {
        checkStruct(*def, v, alloc, prune, path, issues);
      }
      break;
    }
    case Kind::Map:
      if (!v.IsObject()) {
        typeError();
        break;
      }
      for (auto it = v.MemberBegin(); it != memberEnd(v); ++it) {
        if (it->value.IsNull() && t.element->kind == Kind::String) {
          it->value.SetString("", 0);  // Go decodes a null map value as ""
          continue;
        }
        if (t.element->kind == Kind::String && it->value.IsString()) {
          continue;  // the common case, no path needed
        }
        const size_t base = path.size();
        path.push_back('.');
        path.append(it->name.GetString(), it->name.GetStringLength());
        checkValue(*t.element, it->value, alloc, prune, path, parent, issues);
        path.resize(base);
      }
      break;
    case Kind::Array:
      if (!v.IsArray()) {
        typeError();
        break;
      }
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        if (t.element->kind == Kind::Struct) {
          if (!v[i].IsObject() && !v[i].IsNull()) {
            checkValue(*t.element, v[i], alloc, prune, path, parent, issues);
            continue;
          }
          const StructDef* def = structDef(t.element->struct_name);
          if (def != nullptr && v[i].IsObject()) {
            const size_t base = path.size();
            path += "[" + std::to_string(i) + "]";
            checkStruct(*def, v[i], alloc, prune, path, issues);
            path.resize(base);
          }
        } else {
          checkValue(*t.element, v[i], alloc, prune, path, parent, issues);
        }
      }
      break;
  }
}

}  // namespace ccm::kubesim
