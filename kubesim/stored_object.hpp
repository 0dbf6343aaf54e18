// StoredObject: one persisted API object, kept compactly as its serialised JSON (kind,
// apiVersion and metadata.resourceVersion included) plus the small index selectors and
// bookkeeping need (namespace, name, uid, labels, selectable field values, finalizer state).
//
// Objects are immutable once committed and shared as ObjectPtr between the store, the watch
// history, watchers and responses in flight.
//
// PreparedObject is an object serialised before its resourceVersion is known: the JSON holds
// a marker where the RV goes, so the store can splice the RV in under its lock without
// re-serialising.
//
// THREAD: immutable; share freely.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kubesim/json_util.hpp"
#include "kubesim/label_selector.hpp"
#include "kubesim/resource_registry.hpp"

namespace ccm::kubesim {

struct StoredObject {
  std::string json;
  uint64_t rv = 0;
  uint32_t rv_pos = 0;  // offset of the RV digits inside json
  uint32_t rv_len = 0;
  std::string ns;
  std::string name;
  std::string uid;
  Labels labels;
  std::vector<std::string> fields;  // values for ResourceType::allFieldLabels()
  bool deleting = false;            // deletionTimestamp set
  bool has_finalizers = false;

  // Store key: "ns/name" or "name".
  std::string key() const { return ns.empty() ? name : ns + "/" + name; }
  // A copy of json with another resourceVersion (DELETED events carry the deletion RV).
  std::string jsonWithRv(uint64_t rv) const;
};
using ObjectPtr = std::shared_ptr<const StoredObject>;

struct PreparedObject {
  std::string json;  // serialised with kRvMarker as metadata.resourceVersion's value
  size_t marker_pos = 0;
  std::string ns;
  std::string name;
  std::string uid;
  Labels labels;
  std::vector<std::string> fields;
  bool deleting = false;
  bool has_finalizers = false;

  // True when committing this would not change stored (same bytes apart from the RV).
  bool sameContentAs(const StoredObject& stored) const;
  // The committed object for rv.
  ObjectPtr finish(uint64_t rv) const&;
  // The same, taking this object's strings instead of copying them (the RV replaces the
  // marker in place): for the one commit of a prepared object.
  ObjectPtr finish(uint64_t rv) &&;
};

inline constexpr std::string_view kRvMarker = "@@kubesim-resource-version@@";

// Serialises doc (whose metadata must be an object) for type: sets metadata.resourceVersion
// to the marker and extracts the index. doc is modified (resourceVersion member).
PreparedObject prepareObject(const ResourceType& type, JsonValue& doc, JsonAllocator& alloc);

// Builds an ObjectPtr directly from a complete JSON document whose RV is already set
// (state-file loading, tests).
ObjectPtr storedFromJson(const ResourceType& type, std::string json);

// The value of a selectable field label on an object (used for indexing).
std::string fieldValue(const JsonValue& obj, std::string_view label);

// Key helper for (namespace, name).
inline std::string storeKey(std::string_view ns, std::string_view name) {
  if (ns.empty()) {
    return std::string(name);
  }
  std::string k;
  k.reserve(ns.size() + name.size() + 1);
  k.append(ns).append("/").append(name);
  return k;
}

}  // namespace ccm::kubesim
