// JSON merge patch (RFC 7386) on a RapidJSON DOM, as kube-apiserver applies it for
// application/merge-patch+json.
#pragma once

#include <optional>

#include "kubesim/patch/patch_support.hpp"

namespace ccm::kubesim::patch_internal {

// The decoding step: the patch must be a JSON object (400 otherwise).
std::optional<Failure> decodeMergePatch(const Value& patch);

// Merges a decoded patch object into target, consuming its values (which must be allocated in
// alloc). Cannot fail once decodeMergePatch accepted the patch.
void applyMergePatch(Value& target, Value& patch, Allocator& alloc);

}  // namespace ccm::kubesim::patch_internal
