// ResourceRegistry: the resource types kubesim serves (group, version, plural, Kind, scope,
// verbs, short names, subresources, selectable fields) — the single table that discovery,
// routing, RBAC, storage and validation all read.
//
// THREAD: immutable after construction; builtin() is safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ccm::kubesim {

struct ResourceType {
  int id = 0;          // index in the registry
  int storage_id = 0;  // types sharing storage (core and events.k8s.io Events) share this
  std::string group;   // "" for core
  std::string version;
  std::string resource;  // plural, e.g. "nodes"
  std::string singular;
  std::string kind;
  bool namespaced = false;
  bool stored = true;  // false: create-only review endpoints (TokenReview, ...)
  std::vector<std::string> verbs;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> subresources;  // "status", "token"
  // Field selector labels beyond metadata.name / metadata.namespace.
  std::vector<std::string> field_labels;
  bool allow_namespace_field = true;  // nodes accept only metadata.name and spec.unschedulable
  bool returns_deleted_object = false;
  // The registry strategy's AllowCreateOnUpdate: a PUT of a missing name creates it (201).
  bool allow_create_on_update = false;
  // AllowUnconditionalUpdate: a PUT without metadata.resourceVersion is accepted (false:
  // 422 "must be specified for an update", as for Leases).
  bool allow_unconditional_update = true;

  std::string apiVersion() const { return group.empty() ? version : group + "/" + version; }
  std::string listKind() const { return kind + "List"; }
  // "nodes" or "leases.coordination.k8s.io" (error messages)
  std::string qualifiedResource() const {
    return group.empty() ? resource : resource + "." + group;
  }
  bool hasSubresource(std::string_view name) const;
  bool hasVerb(std::string_view verb) const;
  // All selectable field labels, in the order StoredObject::fields holds their values.
  std::vector<std::string> allFieldLabels() const;
};

struct ApiGroupInfo {
  std::string name;  // "" for core
  std::string version;
};

class ResourceRegistry {
 public:
  // The table kubesim serves.
  static const ResourceRegistry& builtin();

  const std::vector<ResourceType>& all() const { return types_; }
  const ResourceType& at(int id) const { return types_[static_cast<size_t>(id)]; }
  const ResourceType* find(std::string_view group, std::string_view version,
                           std::string_view resource) const;
  // First type with this group and Kind.
  const ResourceType* findKind(std::string_view group, std::string_view kind) const;
  // By apiVersion ("v1", "rbac.authorization.k8s.io/v1") and Kind.
  const ResourceType* findApiVersionKind(std::string_view api_version, std::string_view kind) const;
  // Groups in discovery order (core first).
  const std::vector<ApiGroupInfo>& groups() const { return groups_; }
  bool hasGroupVersion(std::string_view group, std::string_view version) const;
  int storageCount() const { return storage_count_; }

 private:
  ResourceRegistry();
  std::vector<ResourceType> types_;
  std::vector<ApiGroupInfo> groups_;
  int storage_count_ = 0;
};

}  // namespace ccm::kubesim
