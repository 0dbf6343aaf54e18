// Strategic-merge-patch metadata of the built-in kinds kubesim serves: which lists merge (and by
// which key), as the patchStrategy/patchMergeKey tags of k8s.io/api declare them. Lists that are
// not listed here are atomic.
#pragma once

#include <span>
#include <string_view>

namespace ccm::kubesim {

enum class ListStrategy : unsigned char {
  Atomic,        // the patch value replaces the list
  MergeScalars,  // set union, $deleteFromPrimitiveList removes (metadata.finalizers)
  MergeByKey,    // elements merge by mergeKey (status.conditions by "type")
};

struct FieldSchema {
  std::string_view name;
  ListStrategy list = ListStrategy::Atomic;
  std::string_view mergeKey;
  // The fields of the struct this field holds (or of each element of a list of structs).
  std::span<const FieldSchema> fields;
};

// The top-level fields of kind ("Node", "Service", ...). Every kind, known or not, gets the
// metadata rules (finalizers, ownerReferences); kinds without merging lists get nothing else.
std::span<const FieldSchema> strategicSchemaForKind(std::string_view kind);

// The entry for name among fields, or nullptr.
const FieldSchema* findField(std::span<const FieldSchema> fields, std::string_view name);

}  // namespace ccm::kubesim
