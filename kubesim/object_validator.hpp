// ObjectValidator: the validation a real API server applies before storing an object — object
// metadata (names per kind, labels, annotations, finalizers, immutable fields on update) and
// the kind-specific rules that matter to a cloud controller manager (node taints and
// providerID/podCIDR immutability, service ports and types, lease durations, event namespace
// rules, RBAC roleRef, ...). Errors come back as FieldErrors with the server's field paths and
// texts, for a 422 Invalid.
//
// THREAD: stateless; safe from any thread.
#pragma once

#include "kubesim/api_error.hpp"
#include "kubesim/json_util.hpp"
#include "kubesim/resource_registry.hpp"

namespace ccm::kubesim {

class ObjectValidator {
 public:
  // obj is in the stored (core) representation; for events.k8s.io Events pass the
  // events.k8s.io/v1 view as well (nullptr otherwise) for its create rules.
  static FieldErrors validateCreate(const ResourceType& type, const JsonValue& obj,
                                    const JsonValue* events_v1_view = nullptr);
  static FieldErrors validateUpdate(const ResourceType& type, const JsonValue& obj,
                                    const JsonValue& old);

 private:
  static void validateMeta(const ResourceType& type, const JsonValue& obj, FieldErrors& errs);
  static void validateKind(const ResourceType& type, const JsonValue& obj, FieldErrors& errs);
};

}  // namespace ccm::kubesim
