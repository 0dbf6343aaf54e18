// The patch engine of kubesim: applies the three PATCH content types of the Kubernetes API
// (JSON patch, JSON merge patch, strategic merge patch) to a stored object in a RapidJSON DOM,
// with the semantics, status codes and messages of kube-apiserver for built-in kinds.
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <string_view>

namespace ccm::kubesim {

enum class PatchType { Json, Merge, Strategic };

// code = HTTP status, reason = Kubernetes Status reason ("Invalid", "BadRequest",
// "RequestEntityTooLarge", ...). An empty reason is StatusReasonUnknown: a real server omits the
// field (it answers that way, with code 500, for strategic-merge-patch shapes the apimachinery
// code rejects without a typed error, e.g. a list element without its merge key).
struct PatchError {
  int code;
  std::string reason;
  std::string message;
};

// Applies body to target in place; on error target is left untouched. kind is the object's Kind
// ("Node", "Service", ...) and selects the strategic-merge list rules.
//
// Strings of the patch are allocated in alloc and moved into target; target itself is backed up
// in a scratch allocator (not alloc) while a JSON or strategic patch runs. Thread-compatible: no
// shared state, call concurrently on different targets.
std::optional<PatchError> applyPatch(PatchType type, std::string_view kind,
                                     rapidjson::Value& target,
                                     rapidjson::Document::AllocatorType& alloc,
                                     std::string_view body);

// Same, and on error stores the engine's explanation in *detail (if detail is not null). A real
// server hides that text for some errors: a failed JSON-patch operation answers 422 with the fixed
// message "the server rejected our request due to an error in our request".
std::optional<PatchError> applyPatch(PatchType type, std::string_view kind,
                                     rapidjson::Value& target,
                                     rapidjson::Document::AllocatorType& alloc,
                                     std::string_view body, std::string* detail);

// The patch type of a PATCH request's Content-Type header as kube-apiserver reads it (parameters
// after the first ';' are dropped, no other normalisation). nullopt for anything else, including
// server-side apply (see isApplyPatchContentType).
std::optional<PatchType> patchTypeForContentType(std::string_view contentType);

// True for application/apply-patch+yaml (server-side apply, not handled by this engine).
bool isApplyPatchContentType(std::string_view contentType);

// The 415 UnsupportedMediaType error of a PATCH with any other Content-Type.
PatchError unsupportedPatchMediaType();

}  // namespace ccm::kubesim
