// ObjectWriter: create/update/delete semantics of the generic registry.
#include "kubesim/object_writer.hpp"

#include "host/runtime/base64.hpp"
#include "kubesim/json_util.hpp"
#include "kubesim/managed_fields.hpp"
#include "kubesim/object_validator.hpp"
#include "kubesim/workload_defaults.hpp"

namespace ccm::kubesim {
namespace {

constexpr int kMaxAttempts = 64;

const ResourceType& namespacesType() {
  return *ResourceRegistry::builtin().find("", "v1", "namespaces");
}

// Puts kind and apiVersion first (as the API server serialises them) with the type's values.
void normalizeTypeMeta(const ResourceType& type, JsonValue& doc, JsonAllocator& alloc) {
  const JsonValue* kind = member(doc, "kind");
  const JsonValue* api = member(doc, "apiVersion");
  if (doc.MemberCount() >= 2 && kind && api && kind == &doc.MemberBegin()->value &&
      api == &(doc.MemberBegin() + 1)->value && stringMember(doc, "kind") == type.kind &&
      stringMember(doc, "apiVersion") == type.apiVersion()) {
    return;
  }
  JsonValue out(rapidjson::kObjectType);
  out.AddMember("kind", makeString(type.kind, alloc), alloc);
  out.AddMember("apiVersion", makeString(type.apiVersion(), alloc), alloc);
  for (auto it = doc.MemberBegin(); it != memberEnd(doc); ++it) {
    std::string_view n(it->name.GetString(), it->name.GetStringLength());
    if (n == "kind" || n == "apiVersion") {
      continue;
    }
    out.AddMember(it->name, it->value, alloc);
  }
  doc = out;
}

void copyMember(JsonValue& to, const JsonValue& from, std::string_view name, JsonAllocator& alloc) {
  if (const JsonValue* v = member(from, name)) {
    JsonValue copy;
    copy.CopyFrom(*v, alloc);
    setMember(to, name, std::move(copy), alloc);
  } else {
    removeMember(to, name);
  }
}

// The API server keeps a Node's spec.podCIDR and spec.podCIDRs together: its internal type has
// only the list; reading v1 folds podCIDR in (podCIDR wins when both are given and differ)
// and writing v1 sets podCIDR from the list's first entry.
void foldNodePodCidrs(JsonValue& doc, JsonAllocator& alloc) {
  JsonValue* spec = member(doc, "spec");
  if (spec == nullptr || !spec->IsObject()) {
    return;
  }
  std::string single(stringMember(*spec, "podCIDR"));
  const JsonValue* list = member(*spec, "podCIDRs");
  bool has_list = list != nullptr && list->IsArray() && !list->Empty();
  std::string first =
      has_list && (*list)[0].IsString() ? std::string((*list)[0].GetString()) : std::string();
  if (!single.empty() && (!has_list || first != single)) {
    JsonValue one(rapidjson::kArrayType);
    one.PushBack(makeString(single, alloc), alloc);
    setMember(*spec, "podCIDRs", std::move(one), alloc);
    return;
  }
  if (has_list) {
    setString(*spec, "podCIDR", first, alloc);
  } else if (list != nullptr) {
    removeMember(*spec, "podCIDRs");
  }
}

// What the API server's Node defaulting and serialization add on every write: allocatable
// copied from capacity when absent, and the nodeInfo / daemonEndpoints members Go always
// writes (their fields have no omitempty).
void applyNodeDefaults(JsonValue& doc, JsonAllocator& alloc) {
  ensureObject(doc, "spec", alloc);
  JsonValue& status = ensureObject(doc, "status", alloc);
  const JsonValue* capacity = member(status, "capacity");
  if (member(status, "allocatable") == nullptr && capacity != nullptr && capacity->IsObject()) {
    JsonValue copy;
    copy.CopyFrom(*capacity, alloc);
    setMember(status, "allocatable", std::move(copy), alloc);
  }
  JsonValue& endpoint =
      ensureObject(ensureObject(status, "daemonEndpoints", alloc), "kubeletEndpoint", alloc);
  if (member(endpoint, "Port") == nullptr) {
    setInt(endpoint, "Port", 0, alloc);
  }
  JsonValue& info = ensureObject(status, "nodeInfo", alloc);
  for (std::string_view field :
       {"machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
        "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture"}) {
    if (member(info, field) == nullptr) {
      setString(info, field, "", alloc);
    }
  }
}

// The TaintNodesByCondition admission (plugin TaintNodesAtCreation): a new Node gets
// node.kubernetes.io/not-ready:NoSchedule unless it has a taint with that key and effect.
void addNotReadyTaint(JsonValue& doc, JsonAllocator& alloc) {
  constexpr std::string_view kKey = "node.kubernetes.io/not-ready";
  JsonValue& spec = ensureObject(doc, "spec", alloc);
  JsonValue* taints = member(spec, "taints");
  if (taints == nullptr || !taints->IsArray()) {
    setMember(spec, "taints", JsonValue(rapidjson::kArrayType), alloc);
    taints = member(spec, "taints");
  }
  for (const auto& t : taints->GetArray()) {
    if (t.IsObject() && stringMember(t, "key") == kKey && stringMember(t, "effect") == "NoSchedule") {
      return;
    }
  }
  JsonValue taint(rapidjson::kObjectType);
  taint.AddMember("key", makeString(kKey, alloc), alloc);
  taint.AddMember("effect", "NoSchedule", alloc);
  taints->PushBack(std::move(taint), alloc);
}

}  // namespace

void addFinalizer(JsonValue& doc, std::string_view finalizer, JsonAllocator& alloc) {
  JsonValue& meta = ensureObject(doc, "metadata", alloc);
  JsonValue* fin = member(meta, "finalizers");
  if (fin == nullptr || !fin->IsArray()) {
    setMember(meta, "finalizers", JsonValue(rapidjson::kArrayType), alloc);
    fin = member(meta, "finalizers");
  }
  for (const auto& f : fin->GetArray()) {
    if (f.IsString() && std::string_view(f.GetString(), f.GetStringLength()) == finalizer) {
      return;
    }
  }
  fin->PushBack(makeString(finalizer, alloc), alloc);
}

void removeFinalizer(JsonValue& doc, std::string_view finalizer) {
  JsonValue* meta = member(doc, "metadata");
  JsonValue* fin = meta != nullptr ? member(*meta, "finalizers") : nullptr;
  if (fin == nullptr || !fin->IsArray()) {
    return;
  }
  for (auto it = fin->Begin(); it != fin->End();) {
    if (it->IsString() && std::string_view(it->GetString(), it->GetStringLength()) == finalizer) {
      it = fin->Erase(it);
    } else {
      ++it;
    }
  }
  if (fin->Empty()) {
    removeMember(*meta, "finalizers");
  }
}

bool ownedBy(const JsonValue& doc, std::string_view owner_uid, bool* blocking) {
  const JsonValue* refs = memberPath(doc, {"metadata", "ownerReferences"});
  if (refs == nullptr || !refs->IsArray()) {
    return false;
  }
  for (const auto& ref : refs->GetArray()) {
    if (ref.IsObject() && stringMember(ref, "uid") == owner_uid) {
      const JsonValue* b = member(ref, "blockOwnerDeletion");
      *blocking = b != nullptr && b->IsBool() && b->GetBool();
      return true;
    }
  }
  return false;
}

ApiError ObjectWriter::staleConflict(const ResourceType& type, std::string_view name) {
  return ApiError::conflict(type.group, type.resource, name,
                            "the object has been modified; please apply your changes to the "
                            "latest version and try again");
}

std::optional<ApiError> ObjectWriter::checkNamespace(const ResourceType& type,
                                                     std::string_view ns,
                                                     std::string_view name) const {
  if (!type.namespaced) {
    return std::nullopt;
  }
  ObjectPtr nsobj = store_.get(namespacesType(), "", ns);
  if (!nsobj) {
    return ApiError::notFound("", "namespaces", ns);
  }
  if (nsobj->deleting) {
    ApiError e = ApiError::forbidden(type.group, type.resource, name,
                                     "unable to create new content in namespace " +
                                         std::string(ns) + " because it is being terminated");
    e.mutableDetails().causes.push_back({"NamespaceTerminating",
                                         "namespace " + std::string(ns) + " is being terminated",
                                         "metadata.namespace"});
    return e;
  }
  return std::nullopt;
}

void ObjectWriter::applyCreateDefaults(const ResourceType& type, JsonValue& doc,
                                       JsonAllocator& alloc) {
  const std::string& r = type.resource;
  if (r == "nodes") {
    addNotReadyTaint(doc, alloc);
    applyNodeDefaults(doc, alloc);
  } else if (r == "services") {
    // The API server wipes status on create.
    JsonValue status(rapidjson::kObjectType);
    status.AddMember("loadBalancer", JsonValue(rapidjson::kObjectType), alloc);
    setMember(doc, "status", std::move(status), alloc);
  } else if (r == "namespaces") {
    JsonValue& spec = ensureObject(doc, "spec", alloc);
    JsonValue fin(rapidjson::kArrayType);
    fin.PushBack(JsonValue("kubernetes"), alloc);
    setMember(spec, "finalizers", std::move(fin), alloc);
    JsonValue& status = ensureObject(doc, "status", alloc);
    setString(status, "phase", "Active", alloc);
  } else if (r == "secrets") {
    if (stringMember(doc, "type").empty()) {
      setString(doc, "type", "Opaque", alloc);
    }
    if (JsonValue* sd = member(doc, "stringData"); sd && sd->IsObject()) {
      JsonValue& data = ensureObject(doc, "data", alloc);
      for (auto it = sd->MemberBegin(); it != memberEnd(*sd); ++it) {
        if (it->value.IsString()) {
          setString(data, {it->name.GetString(), it->name.GetStringLength()},
                    base64Encode({it->value.GetString(), it->value.GetStringLength()}), alloc);
        }
      }
      removeMember(doc, "stringData");
    }
  } else if (r == "pods") {
    JsonValue& spec = ensureObject(doc, "spec", alloc);
    // The ServiceAccount admission plugin names the namespace's default account.
    if (stringMember(spec, "serviceAccountName").empty()) {
      setString(spec, "serviceAccountName", "default", alloc);
    }
    defaultPodSpec(spec, alloc);
    // No scheduler, no kubelet for pods: they stay Pending.
    JsonValue status(rapidjson::kObjectType);
    status.AddMember("phase", "Pending", alloc);
    status.AddMember("qosClass", "BestEffort", alloc);
    setMember(doc, "status", std::move(status), alloc);
  } else {
    defaultWorkloadOnCreate(type, doc, alloc);
  }
}

ApiOr<ObjectWriter::Result> ObjectWriter::create(const ResourceType& type, JsonValue& doc,
                                                 JsonAllocator& alloc, bool dry_run,
                                                 const JsonValue* events_v1_view,
                                                 std::string_view manager) {
  normalizeTypeMeta(type, doc, alloc);
  JsonValue& meta = ensureObject(doc, "metadata", alloc);
  std::string ns(stringMember(meta, "namespace"));
  if (!type.namespaced) {
    removeMember(meta, "namespace");
    ns.clear();
  }
  // Admission names the object (before generateName is applied: the prefix, else "Unknown").
  std::string admission_name(stringMember(meta, "name"));
  if (admission_name.empty()) {
    admission_name = std::string(stringMember(meta, "generateName"));
  }
  if (admission_name.empty()) {
    admission_name = "Unknown";
  }
  if (auto err = checkNamespace(type, ns, admission_name)) {
    return *err;
  }
  std::string generate(stringMember(meta, "generateName"));
  bool generated = stringMember(meta, "name").empty() && !generate.empty();
  if (generated) {
    setString(meta, "name", generate + randomNameSuffix(), alloc);
  }
  setString(meta, "uid", newUid(), alloc);
  setString(meta, "creationTimestamp", formatTime(std::chrono::system_clock::now()), alloc);
  removeMember(meta, "deletionTimestamp");
  removeMember(meta, "deletionGracePeriodSeconds");
  removeMember(meta, "resourceVersion");
  removeMember(meta, "selfLink");
  applyCreateDefaults(type, doc, alloc);
  if (type.resource == "nodes") {
    foldNodePodCidrs(doc, alloc);
  }
  if (type.resource == "services") {
    // The registry allocates before it validates: its refusals come alone.
    if (auto err = services_.prepare(doc, alloc, nullptr)) {
      return *err;
    }
  }
  FieldErrors errs = ObjectValidator::validateCreate(type, doc, events_v1_view);
  if (!errs.empty()) {
    return ApiError::invalid(type.group, type.kind, stringMember(*member(doc, "metadata"), "name"),
                             errs);
  }
  recordManagedFields(type, doc, nullptr, manager, "", alloc);
  for (int attempt = 0; attempt < 8; ++attempt) {
    PreparedObject prepared = prepareObject(type, doc, alloc);
    if (dry_run) {
      return Result{std::move(prepared).finish(0), true, false};
    }
    std::string name = prepared.name;
    auto r = store_.put(type, nullptr, std::move(prepared));
    if (r.status == ObjectStore::CommitStatus::Ok) {
      return Result{r.object, true, false};
    }
    if (!generated) {
      return ApiError::alreadyExists(type.group, type.resource, name);
    }
    setString(*member(doc, "metadata"), "name", generate + randomNameSuffix(), alloc);
  }
  ApiError e = ApiError::alreadyExists(type.group, type.resource, generate);
  e.mutableDetails().retry_after_seconds = 1;
  return e;
}

ApiOr<ObjectWriter::Result> ObjectWriter::update(const ResourceType& type, std::string_view ns,
                                                 std::string_view name,
                                                 std::string_view subresource,
                                                 const Mutation& mutate, bool dry_run,
                                                 std::string_view manager) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    ObjectPtr cur = store_.get(type, ns, name);
    if (!cur) {
      return ApiError::notFound(type.group, type.resource, name);
    }
    // Parse in place from a private copy (faster than copying every string into the
    // document); the buffer lives until this attempt is over. The old object is a copy of
    // the parsed tree made before the mutation: its strings point into the same buffer,
    // which nothing writes to after the parse, so the object is parsed once, not twice.
    std::string doc_text = cur->json;
    JsonDocument doc;
    doc.ParseInsitu(doc_text.data());
    JsonDocument old;
    old.CopyFrom(doc, old.GetAllocator());
    if (auto err = mutate(doc, *cur)) {
      return *err;
    }
    JsonAllocator& alloc = doc.GetAllocator();
    if (!doc.IsObject()) {
      return ApiError::badRequest("the object provided is not a JSON object");
    }
    normalizeTypeMeta(type, doc, alloc);
    JsonValue& meta = ensureObject(doc, "metadata", alloc);
    const JsonValue& old_meta = *member(old, "metadata");
    std::string_view new_name = stringMember(meta, "name");
    if (new_name != name) {
      return ApiError::badRequest("the name of the object (" + std::string(new_name) +
                                  ") does not match the name on the URL (" + std::string(name) +
                                  ")");
    }
    if (type.namespaced) {
      std::string_view new_ns = stringMember(meta, "namespace");
      if (new_ns.empty()) {
        setString(meta, "namespace", ns, alloc);
      } else if (new_ns != ns) {
        return ApiError::badRequest("the namespace of the object (" + std::string(new_ns) +
                                    ") does not match the namespace on the request (" +
                                    std::string(ns) + ")");
      }
    } else {
      removeMember(meta, "namespace");
    }
    if (stringMember(meta, "uid").empty()) {
      setString(meta, "uid", stringMember(old_meta, "uid"), alloc);
    }
    for (auto field : {"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                       "generation", "selfLink"}) {
      copyMember(meta, old_meta, field, alloc);
    }
    if (subresource == "status") {
      copyMember(doc, old, "spec", alloc);
    } else if (type.hasSubresource("status")) {
      copyMember(doc, old, "status", alloc);
    }
    if (tracksGeneration(type) && subresource.empty()) {
      defaultWorkloadSpec(type, doc, alloc);
      const JsonValue* new_spec = member(doc, "spec");
      const JsonValue* old_spec = member(old, "spec");
      bool changed = (new_spec == nullptr) != (old_spec == nullptr) ||
                     (new_spec != nullptr && *new_spec != *old_spec);
      if (changed) {
        const JsonValue* gen = member(old_meta, "generation");
        setInt(meta, "generation", (gen != nullptr && gen->IsInt64() ? gen->GetInt64() : 0) + 1,
               alloc);
      }
    }
    if (type.resource == "nodes") {
      foldNodePodCidrs(doc, alloc);
      applyNodeDefaults(doc, alloc);
    }
    if (type.resource == "services" && subresource.empty()) {
      if (auto err = services_.prepare(doc, alloc, &old)) {
        return *err;
      }
    }
    FieldErrors errs = ObjectValidator::validateUpdate(type, doc, old);
    if (!errs.empty()) {
      return ApiError::invalid(type.group, type.kind, name, errs);
    }
    recordManagedFields(type, doc, &old, manager, subresource, alloc);
    PreparedObject prepared = prepareObject(type, doc, alloc);
    if (dry_run) {
      return Result{std::move(prepared).finish(cur->rv), false, false};
    }
    if (prepared.deleting && !prepared.has_finalizers) {
      // As etcd's delete: the DELETED event carries the last stored state, with the
      // finalizers it still had; the emptied version is never stored (only answered).
      auto r = store_.remove(type, cur);
      if (r.status == ObjectStore::CommitStatus::Stale) {
        continue;
      }
      return Result{std::move(prepared).finish(r.object->rv), false, true};
    }
    auto r = store_.put(type, cur, std::move(prepared));
    if (r.status == ObjectStore::CommitStatus::Stale) {
      continue;
    }
    return Result{r.object, false, false};
  }
  return ApiError(500, "ServerTimeout",
                  "The update operation against " + type.qualifiedResource() +
                      " could not be completed at this time, please try again.");
}

ApiOr<ObjectWriter::Result> ObjectWriter::remove(const ResourceType& type, std::string_view ns,
                                                 std::string_view name,
                                                 const DeleteOptions& options) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    ObjectPtr cur = store_.get(type, ns, name);
    if (!cur) {
      return ApiError::notFound(type.group, type.resource, name);
    }
    if (!options.uid.empty() && options.uid != cur->uid) {
      return ApiError::conflict(type.group, type.resource, name,
                                "Precondition failed: UID in precondition: " + options.uid +
                                    ", UID in object meta: " + cur->uid);
    }
    if (!options.resource_version.empty() && options.resource_version != decimal(cur->rv)) {
      return ApiError::conflict(
          type.group, type.resource, name,
          "Precondition failed: ResourceVersion in precondition: " + options.resource_version +
              ", ResourceVersion in object meta: " + decimal(cur->rv));
    }
    if (options.dry_run) {
      return Result{cur, false, !cur->has_finalizers};
    }
    if (cur->has_finalizers || options.mark_only) {
      if (cur->deleting) {
        return Result{cur, false, false};
      }
      JsonDocument doc;
      doc.Parse(cur->json.data(), cur->json.size());
      JsonValue& meta = ensureObject(doc, "metadata", doc.GetAllocator());
      setString(meta, "deletionTimestamp", formatTime(std::chrono::system_clock::now()),
                doc.GetAllocator());
      setInt(meta, "deletionGracePeriodSeconds", 0, doc.GetAllocator());
      if (options.mark) {
        options.mark(doc);
      }
      PreparedObject prepared = prepareObject(type, doc, doc.GetAllocator());
      auto r = store_.put(type, cur, std::move(prepared));
      if (r.status == ObjectStore::CommitStatus::Stale) {
        continue;
      }
      return Result{r.object, false, false};
    }
    auto r = store_.remove(type, cur);
    if (r.status == ObjectStore::CommitStatus::Stale) {
      continue;
    }
    return Result{r.object, false, true};
  }
  return ApiError(500, "ServerTimeout",
                  "The delete operation against " + type.qualifiedResource() +
                      " could not be completed at this time, please try again.");
}

}  // namespace ccm::kubesim
