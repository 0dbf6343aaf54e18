// JSON merge patch (see merge_patch.hpp): objects merge recursively, null removes a key, any
// other value (arrays included) replaces. Values put in place have their null object fields
// pruned, as the json-patch library does before the apiserver decodes the result.
#include "test/kubesim/patch/merge_patch.hpp"

#include <utility>

#include <fmt/format.h>

namespace ccm::kubesim::patch_internal {
namespace {

void pruneNulls(Value& value) {
  if (value.IsObject()) {
    for (auto it = value.MemberBegin(); it != value.MemberEnd();) {
      if (it->value.IsNull()) {
        it = value.EraseMember(it);
      } else {
        pruneNulls(it->value);
        ++it;
      }
    }
  } else if (value.IsArray()) {
    for (Value& element : value.GetArray()) {
      pruneNulls(element);
    }
  }
}

void mergeObject(Value& target, Value& patch, Allocator& alloc) {
  if (!target.IsObject()) {
    target.SetObject();
  }
  for (Value::Member& member : patch.GetObject()) {
    auto found = target.FindMember(member.name);
    if (member.value.IsNull()) {
      if (found != target.MemberEnd()) {
        target.EraseMember(found);
      }
      continue;
    }
    if (found == target.MemberEnd()) {
      pruneNulls(member.value);
      target.AddMember(Value(member.name, alloc), std::move(member.value), alloc);
      continue;
    }
    if (member.value.IsObject() && found->value.IsObject()) {
      mergeObject(found->value, member.value, alloc);
      continue;
    }
    pruneNulls(member.value);
    found->value = std::move(member.value);
  }
}

}  // namespace

std::optional<Failure> decodeMergePatch(const Value& patch) {
  if (patch.IsNull()) {
    return badRequest("Invalid JSON Patch");
  }
  if (!patch.IsObject()) {
    return badRequest(fmt::format(
        "error decoding patch: json: cannot unmarshal {} into Go value of type "
        "map[string]interface {{}}",
        jsonKindWord(patch)));
  }
  return std::nullopt;
}

void applyMergePatch(Value& target, Value& patch, Allocator& alloc) {
  mergeObject(target, patch, alloc);
}

}  // namespace ccm::kubesim::patch_internal
