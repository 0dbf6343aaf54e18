// The built-in resource table of kubesim.
#include "kubesim/resource_registry.hpp"

#include <algorithm>

namespace ccm::kubesim {
namespace {

const std::vector<std::string> kAllVerbs = {"create", "delete", "deletecollection", "get",
                                            "list",   "patch",  "update",           "watch"};
const std::vector<std::string> kCreateOnly = {"create"};

struct Spec {
  std::string group;
  std::string version;
  std::string resource;
  std::string singular;
  std::string kind;
  bool namespaced;
  std::vector<std::string> short_names;
  std::vector<std::string> subresources;
  std::vector<std::string> field_labels;
  std::vector<std::string> categories;
  bool stored = true;
  bool returns_deleted_object = false;
  std::string shares_storage_with;  // resource name in the core group
};

std::vector<Spec> specs() {
  const std::vector<std::string> event_fields = {"involvedObject.kind",
                                                 "involvedObject.namespace",
                                                 "involvedObject.name",
                                                 "involvedObject.uid",
                                                 "involvedObject.apiVersion",
                                                 "involvedObject.resourceVersion",
                                                 "involvedObject.fieldPath",
                                                 "reason",
                                                 "reportingComponent",
                                                 "source",
                                                 "type"};
  return {
      {"",
       "v1",
       "namespaces",
       "namespace",
       "Namespace",
       false,
       {"ns"},
       {"status"},
       {"status.phase"},
       {},
       true,
       true,
       ""},
      {"",
       "v1",
       "nodes",
       "node",
       "Node",
       false,
       {"no"},
       {"status"},
       {"spec.unschedulable"},
       {},
       true,
       false,
       ""},
      {"",
       "v1",
       "services",
       "service",
       "Service",
       true,
       {"svc"},
       {"status"},
       {"spec.clusterIP", "spec.type"},
       {"all"},
       true,
       true,
       ""},
      {"", "v1", "endpoints", "endpoints", "Endpoints", true, {"ep"}, {}, {}, {}, true, false, ""},
      {"", "v1", "events", "event", "Event", true, {"ev"}, {}, event_fields, {}, true, false, ""},
      {"",
       "v1",
       "pods",
       "pod",
       "Pod",
       true,
       {"po"},
       {"status"},
       {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"},
       {"all"},
       true,
       true,
       ""},
      {"", "v1", "configmaps", "configmap", "ConfigMap", true, {"cm"}, {}, {}, {}, true, false, ""},
      {"", "v1", "secrets", "secret", "Secret", true, {}, {}, {"type"}, {}, true, false, ""},
      {"",
       "v1",
       "serviceaccounts",
       "serviceaccount",
       "ServiceAccount",
       true,
       {"sa"},
       {"token"},
       {},
       {},
       true,
       false,
       ""},
      {"coordination.k8s.io",
       "v1",
       "leases",
       "lease",
       "Lease",
       true,
       {},
       {},
       {},
       {},
       true,
       false,
       ""},
      {"events.k8s.io",
       "v1",
       "events",
       "event",
       "Event",
       true,
       {"ev"},
       {},
       event_fields,
       {},
       true,
       false,
       "events"},
      {"discovery.k8s.io",
       "v1",
       "endpointslices",
       "endpointslice",
       "EndpointSlice",
       true,
       {},
       {},
       {},
       {},
       true,
       false,
       ""},
      {"rbac.authorization.k8s.io",
       "v1",
       "clusterroles",
       "clusterrole",
       "ClusterRole",
       false,
       {},
       {},
       {},
       {},
       true,
       false,
       ""},
      {"rbac.authorization.k8s.io",
       "v1",
       "clusterrolebindings",
       "clusterrolebinding",
       "ClusterRoleBinding",
       false,
       {},
       {},
       {},
       {},
       true,
       false,
       ""},
      {"rbac.authorization.k8s.io",
       "v1",
       "roles",
       "role",
       "Role",
       true,
       {},
       {},
       {},
       {},
       true,
       false,
       ""},
      {"rbac.authorization.k8s.io",
       "v1",
       "rolebindings",
       "rolebinding",
       "RoleBinding",
       true,
       {},
       {},
       {},
       {},
       true,
       false,
       ""},
      {"apps",
       "v1",
       "daemonsets",
       "daemonset",
       "DaemonSet",
       true,
       {"ds"},
       {"status"},
       {},
       {"all"},
       true,
       false,
       ""},
      {"apps",
       "v1",
       "deployments",
       "deployment",
       "Deployment",
       true,
       {"deploy"},
       {"status"},
       {},
       {"all"},
       true,
       false,
       ""},
      {"policy",
       "v1",
       "poddisruptionbudgets",
       "poddisruptionbudget",
       "PodDisruptionBudget",
       true,
       {"pdb"},
       {"status"},
       {},
       {},
       true,
       false,
       ""},
      {"authentication.k8s.io",
       "v1",
       "tokenreviews",
       "tokenreview",
       "TokenReview",
       false,
       {},
       {},
       {},
       {},
       false,
       false,
       ""},
      {"authentication.k8s.io",
       "v1",
       "selfsubjectreviews",
       "selfsubjectreview",
       "SelfSubjectReview",
       false,
       {},
       {},
       {},
       {},
       false,
       false,
       ""},
      {"authorization.k8s.io",
       "v1",
       "subjectaccessreviews",
       "subjectaccessreview",
       "SubjectAccessReview",
       false,
       {},
       {},
       {},
       {},
       false,
       false,
       ""},
      {"authorization.k8s.io",
       "v1",
       "selfsubjectaccessreviews",
       "selfsubjectaccessreview",
       "SelfSubjectAccessReview",
       false,
       {},
       {},
       {},
       {},
       false,
       false,
       ""},
      {"authorization.k8s.io",
       "v1",
       "localsubjectaccessreviews",
       "localsubjectaccessreview",
       "LocalSubjectAccessReview",
       true,
       {},
       {},
       {},
       {},
       false,
       false,
       ""},
  };
}

}  // namespace

bool ResourceType::hasSubresource(std::string_view name) const {
  return std::find(subresources.begin(), subresources.end(), name) != subresources.end();
}

bool ResourceType::hasVerb(std::string_view verb) const {
  return std::find(verbs.begin(), verbs.end(), verb) != verbs.end();
}

std::vector<std::string> ResourceType::allFieldLabels() const {
  std::vector<std::string> out = {"metadata.name"};
  if (namespaced) {
    out.push_back("metadata.namespace");
  }
  out.insert(out.end(), field_labels.begin(), field_labels.end());
  return out;
}

const ResourceRegistry& ResourceRegistry::builtin() {
  static const ResourceRegistry* registry = new ResourceRegistry();
  return *registry;
}

ResourceRegistry::ResourceRegistry() {
  int next_storage = 0;
  for (auto& s : specs()) {
    ResourceType t;
    t.id = static_cast<int>(types_.size());
    t.group = s.group;
    t.version = s.version;
    t.resource = s.resource;
    t.singular = s.singular;
    t.kind = s.kind;
    t.namespaced = s.namespaced;
    t.stored = s.stored;
    t.verbs = s.stored ? kAllVerbs : kCreateOnly;
    t.short_names = s.short_names;
    t.categories = s.categories;
    t.subresources = s.subresources;
    t.field_labels = s.field_labels;
    t.allow_namespace_field = s.resource != "nodes";
    t.returns_deleted_object = s.returns_deleted_object;
    // As the API server's registry strategies for these kinds say.
    static const std::vector<std::string> kCreateOnUpdate = {
        "leases", "endpoints", "events", "services", "roles", "rolebindings", "clusterroles",
        "clusterrolebindings"};
    t.allow_create_on_update = std::find(kCreateOnUpdate.begin(), kCreateOnUpdate.end(),
                                         s.resource) != kCreateOnUpdate.end();
    t.allow_unconditional_update = s.resource != "leases";
    if (!s.shares_storage_with.empty()) {
      const ResourceType* other = find("", "v1", s.shares_storage_with);
      t.storage_id = other->storage_id;
    } else {
      t.storage_id = next_storage++;
    }
    types_.push_back(std::move(t));
    bool known = false;
    for (const auto& g : groups_) {
      known = known || g.name == s.group;
    }
    if (!known) {
      groups_.push_back({s.group, s.version});
    }
  }
  storage_count_ = next_storage;
}

const ResourceType* ResourceRegistry::find(std::string_view group, std::string_view version,
                                           std::string_view resource) const {
  for (const auto& t : types_) {
    if (t.group == group && t.version == version && t.resource == resource) {
      return &t;
    }
  }
  return nullptr;
}

const ResourceType* ResourceRegistry::findKind(std::string_view group,
                                               std::string_view kind) const {
  for (const auto& t : types_) {
    if (t.group == group && t.kind == kind) {
      return &t;
    }
  }
  return nullptr;
}

const ResourceType* ResourceRegistry::findApiVersionKind(std::string_view api_version,
                                                         std::string_view kind) const {
  for (const auto& t : types_) {
    if (t.apiVersion() == api_version && t.kind == kind) {
      return &t;
    }
  }
  return nullptr;
}

bool ResourceRegistry::hasGroupVersion(std::string_view group, std::string_view version) const {
  for (const auto& g : groups_) {
    if (g.name == group && g.version == version) {
      return true;
    }
  }
  return false;
}

}  // namespace ccm::kubesim
