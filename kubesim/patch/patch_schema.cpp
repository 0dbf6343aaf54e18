// The strategic-merge-patch tables of the built-in kinds (see patch_schema.hpp). Written from the
// patchStrategy/patchMergeKey struct tags of k8s.io/api core/v1; RBAC, coordination, events,
// discovery and the config kinds (ConfigMap, Secret, Endpoints) have no merging lists.
#include "kubesim/patch/patch_schema.hpp"

namespace ccm::kubesim {
namespace {

using enum ListStrategy;

constexpr FieldSchema kObjectMeta[] = {
    {"finalizers", MergeScalars, {}, {}},
    {"ownerReferences", MergeByKey, "uid", {}},
};

// Node.
constexpr FieldSchema kNodeSpec[] = {
    {"podCIDRs", MergeScalars, {}, {}},
};
constexpr FieldSchema kNodeStatus[] = {
    {"conditions", MergeByKey, "type", {}},
    {"addresses", MergeByKey, "type", {}},
};
constexpr FieldSchema kNode[] = {
    {"metadata", Atomic, {}, kObjectMeta},
    {"spec", Atomic, {}, kNodeSpec},
    {"status", Atomic, {}, kNodeStatus},
};

// Service.
constexpr FieldSchema kServiceSpec[] = {
    {"ports", MergeByKey, "port", {}},
};
constexpr FieldSchema kServiceStatus[] = {
    {"conditions", MergeByKey, "type", {}},
};
constexpr FieldSchema kService[] = {
    {"metadata", Atomic, {}, kObjectMeta},
    {"spec", Atomic, {}, kServiceSpec},
    {"status", Atomic, {}, kServiceStatus},
};

// Pod.
constexpr FieldSchema kContainer[] = {
    {"ports", MergeByKey, "containerPort", {}},
    {"env", MergeByKey, "name", {}},
    {"volumeMounts", MergeByKey, "mountPath", {}},
    {"volumeDevices", MergeByKey, "devicePath", {}},
};
constexpr FieldSchema kPodSpec[] = {
    {"volumes", MergeByKey, "name", {}},
    {"initContainers", MergeByKey, "name", kContainer},
    {"containers", MergeByKey, "name", kContainer},
    {"ephemeralContainers", MergeByKey, "name", kContainer},
    {"imagePullSecrets", MergeByKey, "name", {}},
    {"hostAliases", MergeByKey, "ip", {}},
    {"topologySpreadConstraints", MergeByKey, "topologyKey", {}},
    {"resourceClaims", MergeByKey, "name", {}},
    {"schedulingGates", MergeByKey, "name", {}},
};
constexpr FieldSchema kPodStatus[] = {
    {"conditions", MergeByKey, "type", {}},
    {"podIPs", MergeByKey, "ip", {}},
    {"hostIPs", MergeByKey, "ip", {}},
    {"resourceClaimStatuses", MergeByKey, "name", {}},
};
constexpr FieldSchema kPod[] = {
    {"metadata", Atomic, {}, kObjectMeta},
    {"spec", Atomic, {}, kPodSpec},
    {"status", Atomic, {}, kPodStatus},
};

// Namespace (spec.finalizers has no patch strategy: atomic).
constexpr FieldSchema kNamespaceStatus[] = {
    {"conditions", MergeByKey, "type", {}},
};
constexpr FieldSchema kNamespace[] = {
    {"metadata", Atomic, {}, kObjectMeta},
    {"status", Atomic, {}, kNamespaceStatus},
};

// ServiceAccount (imagePullSecrets is atomic).
constexpr FieldSchema kServiceAccount[] = {
    {"metadata", Atomic, {}, kObjectMeta},
    {"secrets", MergeByKey, "name", {}},
};

// Everything else: Endpoints, EndpointSlice, Event (both groups), Lease, ConfigMap, Secret, the
// RBAC kinds and unknown kinds.
constexpr FieldSchema kMetadataOnly[] = {
    {"metadata", Atomic, {}, kObjectMeta},
};

struct KindSchema {
  std::string_view kind;
  std::span<const FieldSchema> fields;
};

constexpr KindSchema kKinds[] = {
    {"Node", kNode},
    {"Service", kService},
    {"Pod", kPod},
    {"Namespace", kNamespace},
    {"ServiceAccount", kServiceAccount},
};

}  // namespace

std::span<const FieldSchema> strategicSchemaForKind(std::string_view kind) {
  for (const KindSchema& entry : kKinds) {
    if (entry.kind == kind) {
      return entry.fields;
    }
  }
  return kMetadataOnly;
}

const FieldSchema* findField(std::span<const FieldSchema> fields, std::string_view name) {
  for (const FieldSchema& field : fields) {
    if (field.name == name) {
      return &field;
    }
  }
  return nullptr;
}

}  // namespace ccm::kubesim
