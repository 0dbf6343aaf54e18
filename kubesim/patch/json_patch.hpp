// JSON patch (RFC 6902) on a RapidJSON DOM, as kube-apiserver applies it: operations decoded
// strictly first (400 on a malformed body), at most 10000 operations (413), then applied in order
// with the semantics of the evanphx/json-patch v4 library the apiserver uses (422 on failure).
#pragma once

#include <optional>

#include "kubesim/patch/patch_support.hpp"

namespace ccm::kubesim::patch_internal {

// The decoding step: checks the shape of the operation list without touching any document.
std::optional<Failure> decodeJsonPatch(const Value& operations);

// Applies a decoded operation list to target, consuming the operations' values (which must be
// allocated in alloc). On failure target is left partly patched: the caller restores it.
std::optional<Failure> applyJsonPatch(Value& target, Value& operations, Allocator& alloc);

}  // namespace ccm::kubesim::patch_internal
