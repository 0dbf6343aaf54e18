// The entry points of the patch engine (see patch.hpp): body validation as the apiserver's PATCH
// handler does it, the per-type decoding step, and all-or-nothing application.
#include "kubesim/patch/patch.hpp"

#include <fmt/format.h>
#include <rapidjson/error/en.h>

#include <cstring>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kubesim/patch/json_patch.hpp"
#include "kubesim/patch/merge_patch.hpp"
#include "kubesim/patch/patch_schema.hpp"
#include "kubesim/patch/patch_support.hpp"
#include "kubesim/patch/strategic_merge.hpp"

namespace ccm::kubesim {
namespace {

using patch_internal::Allocator;
using patch_internal::Failure;
using patch_internal::Value;

// Not kParseFullPrecisionFlag: RapidJSON 1.1's full-precision path (Debian's rapidjson-dev)
// computes clz(0) for a zero written with many digits ("0.000000000000000000000000000") and
// returns garbage for it (-2.1e-196 at -O2; UBSan stops on it; found by fuzzing). The normal
// path is what the rest of kubesim parses bodies with; it may differ from Go by one ulp.
constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag;
// encoding/json's limit: input nested deeper is not valid JSON to the apiserver. It also bounds
// the recursion of the merge code.
constexpr size_t kMaxNestingDepth = 10000;
// The backup of the target lives here while a patch runs; objects bigger than this spill into
// heap chunks of the scratch allocator.
constexpr size_t kScratchBytes = size_t{32} * 1024;

// encoding/json keeps the last of duplicate object keys; RapidJSON keeps every one. Drops the
// earlier duplicates everywhere in value.
void keepLastOfDuplicateKeys(Value& value) {
  std::vector<Value*> pending{&value};
  std::unordered_set<std::string_view> seen;
  std::vector<bool> doomed;
  while (!pending.empty()) {
    Value& current = *pending.back();
    pending.pop_back();
    if (current.IsObject()) {
      rapidjson::SizeType count = current.MemberCount();
      if (count > 1 && count <= 16) {
        // Small objects (nearly all): compare pairwise, no allocation.
        for (auto it = current.MemberBegin(); it != current.MemberEnd();) {
          bool later = false;
          for (auto next = it + 1; next != current.MemberEnd(); ++next) {
            if (it->name == next->name) {
              later = true;
              break;
            }
          }
          it = later ? current.EraseMember(it) : it + 1;
        }
      } else if (count > 16) {
        // Walk backwards: a name already seen there belongs to an earlier duplicate.
        seen.clear();
        doomed.assign(count, false);
        bool any = false;
        auto members = current.MemberBegin();
        for (rapidjson::SizeType i = count; i-- > 0;) {
          if (!seen.insert(patch_internal::stringOf(members[i].name)).second) {
            doomed[i] = true;
            any = true;
          }
        }
        if (any) {
          rapidjson::SizeType index = 0;
          for (auto it = current.MemberBegin(); it != current.MemberEnd(); ++index) {
            it = doomed[index] ? current.EraseMember(it) : it + 1;
          }
        }
      }
      for (Value::Member& member : current.GetObject()) {
        if (member.value.IsObject() || member.value.IsArray()) {
          pending.push_back(&member.value);
        }
      }
    } else if (current.IsArray()) {
      for (Value& element : current.GetArray()) {
        if (element.IsObject() || element.IsArray()) {
          pending.push_back(&element);
        }
      }
    }
  }
}

// Whether body nests arrays and objects deeper than kMaxNestingDepth (a body that short cannot).
bool nestedTooDeep(std::string_view body) {
  if (body.size() <= kMaxNestingDepth) {
    return false;
  }
  size_t depth = 0;
  bool inString = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (inString) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNestingDepth) {
        return true;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

std::optional<PatchError> report(Failure failure, std::string* detail) {
  if (detail != nullptr) {
    *detail = std::move(failure.detail);
  }
  return std::move(failure.error);
}

std::optional<Failure> decodeStrategic(const Value& patch) {
  if (patch.IsNull() || patch.IsObject()) {
    return std::nullopt;
  }
  return patch_internal::badRequest(
      fmt::format("json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                  patch_internal::jsonKindWord(patch)));
}

// Runs a patch that may fail half-way on target, restoring target from a scratch copy if it
// does.
template <typename Apply>
std::optional<Failure> allOrNothing(Value& target, Allocator& alloc, Apply&& apply) {
  alignas(8) char scratch[kScratchBytes];
  Allocator scratchAlloc(scratch, sizeof scratch);
  Value backup(target, scratchAlloc);
  std::optional<Failure> failure = apply();
  if (failure) {
    target.CopyFrom(backup, alloc);
  }
  return failure;
}

// Whether a patch can have changed metadata (a whole-object replacement included).
bool touchesMetadata(PatchType type, const Value& patch) {
  if (type == PatchType::Json) {
    if (!patch.IsArray()) {
      return false;
    }
    for (const Value& operation : patch.GetArray()) {
      if (!operation.IsObject()) {
        continue;
      }
      for (const char* field : {"path", "from"}) {
        auto it = operation.FindMember(field);
        if (it != operation.MemberEnd() && it->value.IsString()) {
          std::string_view path = patch_internal::stringOf(it->value);
          if (path.empty() || path.find("metadata") != std::string_view::npos) {
            return true;
          }
        }
      }
    }
    return false;
  }
  return patch.IsObject() && (patch.HasMember("metadata") || patch.HasMember("$patch"));
}

// The ObjectMeta collections that a real server's typed round trip omits when they are empty
// (omitempty): without this, removing the last finalizer would leave "finalizers":[] behind.
void dropEmptyMetadataCollections(Value& target) {
  if (!target.IsObject()) {
    return;
  }
  auto metadata = target.FindMember("metadata");
  if (metadata == target.MemberEnd() || !metadata->value.IsObject()) {
    return;
  }
  Value& meta = metadata->value;
  for (auto it = meta.MemberBegin(); it != meta.MemberEnd();) {
    std::string_view name = patch_internal::stringOf(it->name);
    bool collection = name == "labels" || name == "annotations" || name == "finalizers" ||
                      name == "ownerReferences" || name == "managedFields";
    bool empty = it->value.IsNull() || (it->value.IsArray() && it->value.Empty()) ||
                 (it->value.IsObject() && it->value.ObjectEmpty());
    if (collection && empty) {
      it = meta.EraseMember(it);
    } else {
      ++it;
    }
  }
}

std::string_view stripParameters(std::string_view contentType) {
  size_t semicolon = contentType.find(';');
  if (semicolon != std::string_view::npos && semicolon > 0) {
    contentType = contentType.substr(0, semicolon);
  }
  return contentType;
}

}  // namespace

std::optional<PatchError> applyPatch(PatchType type, std::string_view kind,
                                     rapidjson::Value& target,
                                     rapidjson::Document::AllocatorType& alloc,
                                     std::string_view body) {
  return applyPatch(type, kind, target, alloc, body, nullptr);
}

std::optional<PatchError> applyPatch(PatchType type, std::string_view kind,
                                     rapidjson::Value& target,
                                     rapidjson::Document::AllocatorType& alloc,
                                     std::string_view body, std::string* detail) {
  // Any body that is not valid JSON is rejected before the patch type matters. A NUL byte can
  // only be invalid JSON, but RapidJSON would stop reading at it.
  rapidjson::Document patch(&alloc);
  if (!body.empty() && std::memchr(body.data(), '\0', body.size()) != nullptr) {
    return report(patch_internal::badRequest("invalid JSON patch"), detail);
  }
  if (nestedTooDeep(body)) {
    Failure failure = patch_internal::badRequest("invalid JSON patch");
    failure.detail = "invalid JSON patch: exceeded max depth";
    return report(std::move(failure), detail);
  }
  patch.Parse<kParseFlags>(body.data(), body.size());
  if (patch.HasParseError()) {
    Failure failure = patch_internal::badRequest("invalid JSON patch");
    failure.detail =
        fmt::format("invalid JSON patch: {} (offset {})",
                    rapidjson::GetParseError_En(patch.GetParseError()), patch.GetErrorOffset());
    return report(std::move(failure), detail);
  }

  keepLastOfDuplicateKeys(patch);

  // Checked before applying: applying moves values out of the patch.
  bool metadataTouched = touchesMetadata(type, patch);
  std::optional<Failure> failure;
  switch (type) {
    case PatchType::Json:
      failure = patch_internal::decodeJsonPatch(patch);
      if (!failure && patch.IsArray() && !patch.Empty()) {
        failure = allOrNothing(
            target, alloc, [&] { return patch_internal::applyJsonPatch(target, patch, alloc); });
      }
      break;
    case PatchType::Merge:
      failure = patch_internal::decodeMergePatch(patch);
      if (!failure) {
        patch_internal::applyMergePatch(target, patch, alloc);
      }
      break;
    case PatchType::Strategic:
      failure = decodeStrategic(patch);
      if (!failure && patch.IsObject() && !patch.ObjectEmpty()) {
        failure = allOrNothing(target, alloc, [&] {
          return patch_internal::applyStrategicMergePatch(target, patch,
                                                          strategicSchemaForKind(kind), alloc);
        });
      }
      break;
  }
  if (failure) {
    return report(std::move(*failure), detail);
  }
  if (metadataTouched) {
    dropEmptyMetadataCollections(target);
  }
  return std::nullopt;
}

std::optional<PatchType> patchTypeForContentType(std::string_view contentType) {
  contentType = stripParameters(contentType);
  if (contentType == "application/json-patch+json") {
    return PatchType::Json;
  }
  if (contentType == "application/merge-patch+json") {
    return PatchType::Merge;
  }
  if (contentType == "application/strategic-merge-patch+json") {
    return PatchType::Strategic;
  }
  return std::nullopt;
}

bool isApplyPatchContentType(std::string_view contentType) {
  return stripParameters(contentType) == "application/apply-patch+yaml";
}

PatchError unsupportedPatchMediaType() {
  return {415, "UnsupportedMediaType",
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json-patch+json, application/merge-patch+json, "
          "application/strategic-merge-patch+json, application/apply-patch+yaml"};
}

}  // namespace ccm::kubesim
