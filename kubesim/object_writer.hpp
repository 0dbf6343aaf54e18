// ObjectWriter: the write semantics of the API server's generic registry, shared by the HTTP
// handlers and kubesim's internal actors (simulated kubelets, built-in controllers):
//
//  - create: kind/apiVersion, generateName, uid, creationTimestamp, defaults (Services get
//    IPs and node ports, Services' status is wiped), namespace must exist and not be
//    terminating, validation (422), AlreadyExists (409);
//  - update: a mutation applied to the current object in a retry loop (GuaranteedUpdate);
//    system metadata is kept, the main resource cannot change status and /status cannot
//    change spec, immutable fields and "no new finalizers while deleting" are enforced,
//    no-op writes keep the resourceVersion, removing the last finalizer of an object being
//    deleted deletes it;
//  - create and update record the writer's fields in metadata.managedFields (managed_fields.hpp);
//  - delete: preconditions (409), finalizers turn a delete into setting deletionTimestamp.
//
// Objects are handled in their stored representation (events: core/v1).
//
// THREAD: all methods may be called from any thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kubesim/api_error.hpp"
#include "kubesim/object_store.hpp"
#include "kubesim/service_allocator.hpp"

namespace ccm::kubesim {

// The finalizer of an object deleted with propagationPolicy=Foreground.
constexpr std::string_view kForegroundDeletion = "foregroundDeletion";
// The field manager of kubesim's built-in controllers' writes (as kube-controller-manager's).
constexpr std::string_view kControllerManager = "kube-controller-manager";
// Appends finalizer to doc's metadata.finalizers unless present.
void addFinalizer(JsonValue& doc, std::string_view finalizer, JsonAllocator& alloc);
// Removes finalizer from doc's metadata.finalizers (the member goes when it empties).
void removeFinalizer(JsonValue& doc, std::string_view finalizer);
// doc's metadata.ownerReferences has an entry with this uid; *blocking: it sets
// blockOwnerDeletion.
bool ownedBy(const JsonValue& doc, std::string_view owner_uid, bool* blocking);

class ObjectWriter {
 public:
  ObjectWriter(ObjectStore& store, ServiceAllocator& services)
      : store_(store), services_(services) {}

  struct Result {
    ObjectPtr object;
    bool created = false;
    bool deleted = false;  // the object is gone (tombstone in `object`)
  };

  // doc: the new object; its metadata.namespace must already be the request namespace.
  // events_v1_view: the events.k8s.io/v1 body when created through that API (validation).
  // manager: the field manager recorded in metadata.managedFields.
  ApiOr<Result> create(const ResourceType& type, JsonValue& doc, JsonAllocator& alloc, bool dry_run,
                       const JsonValue* events_v1_view = nullptr,
                       std::string_view manager = kControllerManager);

  // mutate receives the current object (parsed) and edits it in place; an error aborts.
  using Mutation =
      std::function<std::optional<ApiError>(JsonDocument& doc, const StoredObject& current)>;
  ApiOr<Result> update(const ResourceType& type, std::string_view ns, std::string_view name,
                       std::string_view subresource, const Mutation& mutate, bool dry_run,
                       std::string_view manager = kControllerManager);

  struct DeleteOptions {
    std::string uid;               // precondition
    std::string resource_version;  // precondition
    bool dry_run = false;
    // Only mark the object (deletionTimestamp) even without finalizers: its controller
    // finishes the deletion (namespaces). mark may edit the marked object further.
    bool mark_only = false;
    std::function<void(JsonDocument& doc)> mark;
  };
  ApiOr<Result> remove(const ResourceType& type, std::string_view ns, std::string_view name,
                       const DeleteOptions& options);

  ObjectStore& store() { return store_; }
  ServiceAllocator& services() { return services_; }

  // The 409 for a stale resourceVersion.
  static ApiError staleConflict(const ResourceType& type, std::string_view name);

 private:
  // name: the object's name as admission reports it in the 403.
  std::optional<ApiError> checkNamespace(const ResourceType& type, std::string_view ns,
                                         std::string_view name) const;
  void applyCreateDefaults(const ResourceType& type, JsonValue& doc, JsonAllocator& alloc);

  ObjectStore& store_;
  ServiceAllocator& services_;
};

}  // namespace ccm::kubesim
