// JSON merge patch (see merge_patch.hpp): objects merge recursively, null removes a key, any
// other value (arrays included) replaces. Values put in place have their null object fields
// pruned, as the json-patch library does before the apiserver decodes the result.
#include "kubesim/patch/merge_patch.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace ccm::kubesim::patch_internal {
namespace {

// Iterative walks: patches nest up to 10000 levels.
void pruneNulls(Value& value) {
  std::vector<Value*> pending{&value};
  while (!pending.empty()) {
    Value& current = *pending.back();
    pending.pop_back();
    if (current.IsObject()) {
      for (auto it = current.MemberBegin(); it != current.MemberEnd();) {
        if (it->value.IsNull()) {
          it = current.EraseMember(it);
        } else {
          ++it;
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

void mergeObject(Value& target, Value& patch, Allocator& alloc) {
  struct Pair {
    Value* target;
    Value* patch;
  };
  std::vector<Pair> pending{{&target, &patch}};
  std::vector<const Value*> nested;
  while (!pending.empty()) {
    Pair pair = pending.back();
    pending.pop_back();
    Value& into = *pair.target;
    if (!into.IsObject()) {
      into.SetObject();
    }
    nested.clear();
    for (Value::Member& member : pair.patch->GetObject()) {
      auto found = into.FindMember(member.name);
      if (member.value.IsNull()) {
        if (found != into.MemberEnd()) {
          into.EraseMember(found);
        }
      } else if (found == into.MemberEnd()) {
        pruneNulls(member.value);
        into.AddMember(Value(member.name, alloc), std::move(member.value), alloc);
      } else if (member.value.IsObject() && found->value.IsObject()) {
        nested.push_back(&member.name);
      } else {
        pruneNulls(member.value);
        found->value = std::move(member.value);
      }
    }
    // Nested objects once this object's members stop moving; a subtree is finished before the
    // next pair is taken, so the pointers stay valid.
    for (const Value* name : nested) {
      auto found = into.FindMember(*name);
      auto from = pair.patch->FindMember(*name);
      if (found != into.MemberEnd() && found->value.IsObject() && from->value.IsObject()) {
        pending.push_back({&found->value, &from->value});
      }
    }
  }
}

}  // namespace

std::optional<Failure> decodeMergePatch(const Value& patch) {
  if (patch.IsNull()) {
    return badRequest("Invalid JSON Patch");
  }
  if (!patch.IsObject()) {
    return badRequest(
        fmt::format("error decoding patch: json: cannot unmarshal {} into Go value of type "
                    "map[string]interface {{}}",
                    jsonKindWord(patch)));
  }
  return std::nullopt;
}

void applyMergePatch(Value& target, Value& patch, Allocator& alloc) {
  mergeObject(target, patch, alloc);
}

}  // namespace ccm::kubesim::patch_internal
