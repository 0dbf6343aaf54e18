// Kubernetes strategic merge patch on a RapidJSON DOM, with the rules kube-apiserver applies to
// built-in kinds (k8s.io/apimachinery strategicpatch, as StrategicMergeMapPatch runs it).
#pragma once

#include <optional>
#include <span>

#include "kubesim/patch/patch_schema.hpp"
#include "kubesim/patch/patch_support.hpp"

namespace ccm::kubesim::patch_internal {

// Merges patch (any parsed JSON value; its content is consumed) into target. fields are the
// top-level rules of the object's kind. Values of patch must be allocated in alloc. On failure
// target is left partly patched: the caller restores it.
std::optional<Failure> applyStrategicMergePatch(Value& target, Value& patch,
                                                std::span<const FieldSchema> fields,
                                                Allocator& alloc);

}  // namespace ccm::kubesim::patch_internal
