// Strategic merge patch (see strategic_merge.hpp). A patch map is applied in the order the
// apimachinery code uses: its $patch directive, $retainKeys, the $setElementOrder lists, then
// every other key. A list of maps goes through its special elements ($patch: delete | replace),
// then element-wise merging by merge key, then order normalisation (patch order for the items the
// patch names, live order for the rest, interleaved by live order).
//
// Where the Go code relies on decoding the merged map into the typed object afterwards, values
// added from the patch are cleaned the way that decoding would (no nulls, no directive keys), so
// that the stored JSON matches what a real server returns.
#include "kubesim/patch/strategic_merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ccm::kubesim::patch_internal {
namespace {

using Fields = std::span<const FieldSchema>;

constexpr std::string_view kDirective = "$patch";
constexpr std::string_view kRetainKeys = "$retainKeys";
constexpr std::string_view kSetOrderPrefix = "$setElementOrder/";
constexpr std::string_view kDeleteFromPrefix = "$deleteFromPrimitiveList/";
constexpr std::string_view kMapType = "map[string]interface {}";
constexpr std::string_view kSliceType = "[]interface {}";

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool isDirectiveKey(std::string_view key) {
  return !key.empty() && key[0] == '$' &&
         (key == kDirective || key == kRetainKeys || startsWith(key, kSetOrderPrefix) ||
          startsWith(key, kDeleteFromPrefix));
}

bool hasDirectiveMarker(const Value& value) {
  return value.IsObject() && findMember(value, kDirective) != value.MemberEnd();
}

// Error texts are built out of line: the merge functions recurse once per nesting level of the
// patch (up to 10000), so their frames are kept small.
[[gnu::noinline]] std::string noMergeKey(const Value& map, std::string_view mergeKey) {
  return fmt::format("map: {} does not contain declared merge key: {}", goValue(map), mergeKey);
}

[[gnu::noinline]] std::string badPatchType(const Value& directive, const Value& map) {
  return fmt::format("unknown patch type: {} in map: {}", goValueS(directive), goValue(map));
}

// What decoding into the typed object leaves of a value taken from the patch: fields set to null
// and directive keys disappear. Iterative: patch values nest up to 10000 levels.
void decodeClean(Value& value) {
  std::vector<Value*> pending{&value};
  while (!pending.empty()) {
    Value& current = *pending.back();
    pending.pop_back();
    if (current.IsObject()) {
      for (auto it = current.MemberBegin(); it != current.MemberEnd();) {
        if (it->value.IsNull() || isDirectiveKey(stringOf(it->name))) {
          it = current.EraseMember(it);
        } else {
          ++it;
        }
      }
      // Children are visited once this object's members stop moving.
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

// A value added where the original has none (or has one of another type): nulls are discarded
// and maps that carry $patch are dropped (removeDirectives), then it is cleaned as decoding would.
// Returns false when the value itself is such a map.
bool prepareNew(Value& value) {
  if (hasDirectiveMarker(value)) {
    return false;
  }
  std::vector<Value*> pending{&value};
  while (!pending.empty()) {
    Value& current = *pending.back();
    pending.pop_back();
    if (current.IsObject()) {
      for (auto it = current.MemberBegin(); it != current.MemberEnd();) {
        if (it->value.IsNull() || isDirectiveKey(stringOf(it->name)) ||
            hasDirectiveMarker(it->value)) {
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
      for (auto it = current.Begin(); it != current.End();) {
        if (hasDirectiveMarker(*it)) {
          it = current.Erase(it);
        } else {
          ++it;
        }
      }
      for (Value& element : current.GetArray()) {
        if (element.IsObject() || element.IsArray()) {
          pending.push_back(&element);
        }
      }
    }
  }
  return true;
}

// A merge-key value (or a scalar list element) captured by value, with Go's == semantics. Merging
// moves values out of patch elements, so the ordering steps work on these copies.
struct Key {
  bool present = false;  // map lists: the element has the merge key
  GoType type = GoType::Nil;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;
};

Key keyOfScalar(const Value& value) {
  Key key;
  key.present = true;
  key.type = goTypeOf(value);
  switch (key.type) {
    case GoType::Bool:
      key.boolean = value.GetBool();
      break;
    case GoType::Int64:
      key.integer = value.GetInt64();
      break;
    case GoType::Float64:
      key.real = value.GetDouble();
      break;
    case GoType::String:
      key.text.assign(value.GetString(), value.GetStringLength());
      break;
    case GoType::Nil:
    case GoType::Map:
    case GoType::Slice:
      break;
  }
  return key;
}

// Map lists: the element's merge-key value (absent: nil). Scalar lists (no merge key): the element.
Key keyOfElement(const Value& element, std::string_view mergeKey) {
  if (mergeKey.empty()) {
    return keyOfScalar(element);
  }
  if (!element.IsObject()) {
    return {};
  }
  auto it = findMember(element, mergeKey);
  if (it == element.MemberEnd()) {
    return {};
  }
  return keyOfScalar(it->value);
}

GoEquality compareKeys(const Key& a, const Key& b) {
  if (a.type != b.type) {
    return GoEquality::NotEqual;
  }
  bool equal = false;
  switch (a.type) {
    case GoType::Nil:
      equal = true;
      break;
    case GoType::Bool:
      equal = a.boolean == b.boolean;
      break;
    case GoType::Int64:
      equal = a.integer == b.integer;
      break;
    case GoType::Float64:
      equal = a.real == b.real;
      break;
    case GoType::String:
      equal = a.text == b.text;
      break;
    case GoType::Map:
    case GoType::Slice:
      return GoEquality::Uncomparable;
  }
  return equal ? GoEquality::Equal : GoEquality::NotEqual;
}

// A list element being placed: where it lives now (moved into the result at the end) and its key.
struct Item {
  Value* value;
  Key key;
};

// Maps nested in maps are not merged by recursion (a patch nests up to 10000 levels): mergeMap
// queues them, and drain() works the queue last-in first-out, so a queued map's whole subtree is
// done before anything that could move it. The only recursion left is through lists merged by
// key, which the schema bounds.
class Merger {
 public:
  explicit Merger(Allocator& alloc) : alloc_(alloc) {}

  bool run(Value& target, Value& patch, Fields fields) {
    return mergeMap(target, patch, fields) && drain(0);
  }
  Failure takeFailure() { return std::move(failure_); }

 private:
  struct PendingMap {
    Value* original;
    Value* patch;
    Fields fields;
  };
  struct NestedMap {
    std::string_view key;
    Value* patch;
    Fields fields;
  };

  bool mergeMap(Value& original, Value& patch, Fields fields);
  bool drain(size_t mark) {
    while (pending_.size() > mark) {
      PendingMap next = pending_.back();
      pending_.pop_back();
      if (!mergeMap(*next.original, *next.patch, next.fields)) {
        return false;
      }
    }
    return true;
  }

  [[gnu::noinline]] bool fail(Failure failure) {
    failure_ = std::move(failure);
    return false;
  }
  [[gnu::noinline]] bool comparePanic() {
    return fail(goPanic("runtime error: comparing uncomparable type " + std::string(kMapType)));
  }

  // The recursion: mergeMap -> mergeSliceHandler -> mergeSlice -> mergeMapList -> mergeMap.
  bool mergeSliceHandler(Value& original, Value& patch, const FieldSchema* field, bool deleteList);
  bool mergeSlice(Value& original, Value& patch, const FieldSchema* field, bool deleteList);
  [[gnu::noinline]] bool mergeMapList(Value& original, Value& patch, const FieldSchema& field);

  [[gnu::noinline]] bool applyMapDirective(Value& original, Value& patch,
                                           const Value::MemberIterator& directive);
  [[gnu::noinline]] bool applyRetainKeys(Value& original, Value& patch);
  [[gnu::noinline]] bool applyElementOrders(Value& original, Value& patch, Fields fields);
  [[gnu::noinline]] bool applyElementOrder(Value& original, Value& patch, std::string_view key,
                                           const Value& order, Fields fields);
  [[gnu::noinline]] bool validateOrderList(const Value* patchList, const Value& order,
                                           std::string_view mergeKey);
  [[gnu::noinline]] void deleteFromList(Value& original, const Value& doomed);
  [[gnu::noinline]] bool mergeScalarList(Value& original, Value& patch, std::string_view mergeKey);
  [[gnu::noinline]] bool elementType(const Value* original, const Value* patch, GoType& type);
  bool indexOf(const std::vector<Key>& order, const Key& key, long& index);
  [[gnu::noinline]] bool sortByOrder(std::vector<Item>& items, const std::vector<Key>& order);
  [[gnu::noinline]] bool normalize(std::vector<Item>& patchItems, std::vector<Item>& serverOnly,
                                   const std::vector<Key>& patchOrder,
                                   const std::vector<Key>& serverOrder, std::vector<Item>& out);
  [[gnu::noinline]] Value buildList(std::vector<Item>& items);

  Allocator& alloc_;
  Failure failure_{};
  std::vector<PendingMap> pending_;
  std::vector<NestedMap> nested_;  // scratch of mergeMap, used as a stack
};

bool Merger::mergeMap(Value& original, Value& patch, Fields fields) {
  if (auto directive = findMember(patch, kDirective); directive != patch.MemberEnd()) {
    return applyMapDirective(original, patch, directive);
  }
  if (!original.IsObject()) {
    original.SetObject();
  }

  bool hasDirectives = false;
  for (const Value::Member& member : patch.GetObject()) {
    if (member.name.GetStringLength() > 0 && member.name.GetString()[0] == '$') {
      hasDirectives = true;
      break;
    }
  }
  if (hasDirectives &&
      (!applyRetainKeys(original, patch) || !applyElementOrders(original, patch, fields))) {
    return false;
  }

  size_t nestedMark = nested_.size();
  for (Value::Member& member : patch.GetObject()) {
    std::string_view key = stringOf(member.name);
    bool deleteList = false;
    if (hasDirectives && startsWith(key, kDeleteFromPrefix)) {
      deleteList = true;
      key.remove_prefix(kDeleteFromPrefix.size());
    }
    Value& patchValue = member.value;
    auto found = findMember(original, key);
    if (patchValue.IsNull()) {
      // A null deletes the key (for a $deleteFromPrimitiveList key: the whole list).
      if (found != original.MemberEnd()) {
        original.EraseMember(found);
      }
      continue;
    }
    if (found == original.MemberEnd()) {
      if (!deleteList && prepareNew(patchValue)) {
        original.AddMember(Value(key.data(), static_cast<rapidjson::SizeType>(key.size()), alloc_),
                           std::move(patchValue), alloc_);
      }
      continue;
    }
    Value& originalValue = found->value;
    GoType type = goTypeOf(patchValue);
    if (goTypeOf(originalValue) != type) {
      if (!deleteList) {
        if (prepareNew(patchValue)) {
          originalValue = std::move(patchValue);
        } else {
          original.EraseMember(found);
        }
      }
      continue;
    }
    const FieldSchema* field = findField(fields, key);
    if (type == GoType::Map) {
      nested_.push_back({key, &patchValue, field != nullptr ? field->fields : Fields{}});
    } else if (type == GoType::Slice) {
      if (!mergeSliceHandler(originalValue, patchValue, field, deleteList)) {
        return false;
      }
    } else {
      originalValue = std::move(patchValue);
    }
  }
  // This map's members are final now: queue the nested maps (a key removed later in the loop,
  // e.g. by a duplicate, has nothing left to merge).
  for (size_t i = nestedMark; i < nested_.size(); ++i) {
    auto found = findMember(original, nested_[i].key);
    if (found != original.MemberEnd() && found->value.IsObject()) {
      pending_.push_back({&found->value, nested_[i].patch, nested_[i].fields});
    }
  }
  nested_.resize(nestedMark);
  return true;
}

// "$patch" in a map: replace takes the patch as it is, delete empties the map.
bool Merger::applyMapDirective(Value& original, Value& patch,
                               const Value::MemberIterator& directive) {
  if (isString(directive->value, "replace")) {
    patch.EraseMember(directive);
    decodeClean(patch);
    original = std::move(patch);
    return true;
  }
  if (isString(directive->value, "delete")) {
    original.SetObject();
    return true;
  }
  return fail(untypedError(badPatchType(directive->value, patch)));
}

// $retainKeys: the patch may only set listed keys; keys of the original not listed go away.
bool Merger::applyRetainKeys(Value& original, Value& patch) {
  auto directive = findMember(patch, kRetainKeys);
  if (directive == patch.MemberEnd()) {
    return true;
  }
  Value keys(std::move(directive->value));
  patch.EraseMember(directive);
  if (!keys.IsArray()) {
    return fail(badRequest("invalid patch format of retainKeys"));
  }
  auto retained = [&keys](std::string_view name) {
    for (const Value& key : keys.GetArray()) {
      if (isString(key, name)) {
        return true;
      }
    }
    return false;
  };
  for (const Value::Member& member : patch.GetObject()) {
    std::string_view name = stringOf(member.name);
    if (member.value.IsNull() || startsWith(name, kDeleteFromPrefix) ||
        startsWith(name, kSetOrderPrefix)) {
      continue;
    }
    if (!retained(name)) {
      return fail(badRequest("invalid patch format of retainKeys"));
    }
  }
  for (auto it = original.MemberBegin(); it != original.MemberEnd();) {
    if (retained(stringOf(it->name))) {
      ++it;
    } else {
      it = original.EraseMember(it);
    }
  }
  return true;
}

bool Merger::applyElementOrders(Value& original, Value& patch, Fields fields) {
  // Take the directives out first: applying one removes its list from the patch.
  std::vector<std::pair<std::string, Value>> orders;
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd();) {
    std::string_view name = stringOf(it->name);
    if (!startsWith(name, kSetOrderPrefix)) {
      ++it;
      continue;
    }
    orders.emplace_back(std::string(name.substr(kSetOrderPrefix.size())), std::move(it->value));
    it = patch.EraseMember(it);
  }
  for (auto& [key, order] : orders) {
    if (!applyElementOrder(original, patch, key, order, fields)) {
      return false;
    }
  }
  return true;
}

// One "$setElementOrder/<key>": merges the list (if the patch has it) and fixes the final order:
// listed items in the directive's order, the others in live order, interleaved by live order.
// Never adds or removes items.
bool Merger::applyElementOrder(Value& original, Value& patch, std::string_view key,
                               const Value& order, Fields fields) {
  if (!order.IsArray()) {
    return fail(untypedError(badArgType(kSliceType, &order)));
  }
  auto originalIt = findMember(original, key);
  auto patchIt = findMember(patch, key);
  Value* originalList = originalIt != original.MemberEnd() ? &originalIt->value : nullptr;
  Value* patchList = patchIt != patch.MemberEnd() ? &patchIt->value : nullptr;
  if (originalList != nullptr && !originalList->IsArray()) {
    return fail(untypedError(badArgType(kSliceType, originalList)));
  }
  if (patchList != nullptr && !patchList->IsArray()) {
    return fail(untypedError(badArgType(kSliceType, patchList)));
  }
  const FieldSchema* field = findField(fields, key);
  if (field == nullptr || field->list == ListStrategy::Atomic) {
    // Only merging lists get ordering directives from real clients; an atomic list is replaced
    // by the patch as it is.
    return true;
  }
  std::string_view mergeKey =
      field->list == ListStrategy::MergeByKey ? field->mergeKey : std::string_view{};
  if (!validateOrderList(patchList, order, mergeKey)) {
    return false;
  }
  if (originalList == nullptr && patchList == nullptr) {
    return true;
  }
  GoType type = GoType::Nil;
  if (!elementType(originalList, patchList, type)) {
    return false;
  }
  bool mapKind = type == GoType::Map;

  // The live order, and whether every live item has the merge key, before merging moves items.
  std::vector<Key> serverOrder;
  std::string liveWithoutKey;
  if (originalList != nullptr) {
    serverOrder.reserve(originalList->Size());
    for (const Value& element : originalList->GetArray()) {
      serverOrder.push_back(keyOfElement(element, mergeKey));
      if (mapKind && liveWithoutKey.empty()) {
        if (!element.IsObject()) {
          liveWithoutKey = badArgType(kMapType, &element);
        } else if (!serverOrder.back().present) {
          liveWithoutKey = noMergeKey(element, mergeKey);
        }
      }
    }
  }

  Value* merged = nullptr;
  if (patchList == nullptr) {
    merged = originalList;
  } else if (originalList == nullptr) {
    prepareNew(*patchList);
    merged = patchList;
  } else {
    if (!mergeSliceHandler(*originalList, *patchList, field, false)) {
      return false;
    }
    merged = originalList;
  }

  std::vector<Key> orderKeys;
  orderKeys.reserve(order.Size());
  for (const Value& element : order.GetArray()) {
    orderKeys.push_back(keyOfElement(element, mergeKey));
  }

  std::vector<Item> listed;
  std::vector<Item> unlisted;
  for (Value& element : merged->GetArray()) {
    Key elementKey = keyOfElement(element, mergeKey);
    bool inOrder = false;
    if (mergeKey.empty()) {
      // A Go map lookup: hashing a map or a slice panics.
      GoType elementGoType = goTypeOf(element);
      if (elementGoType == GoType::Map || elementGoType == GoType::Slice) {
        return fail(goPanic("runtime error: hash of unhashable type " +
                            std::string(goTypeName(elementGoType))));
      }
      for (size_t i = 0; i < orderKeys.size(); ++i) {
        if (orderKeys[i].type == GoType::Map || orderKeys[i].type == GoType::Slice) {
          return fail(goPanic("runtime error: hash of unhashable type " +
                              std::string(goTypeName(orderKeys[i].type))));
        }
        if (compareKeys(orderKeys[i], elementKey) == GoEquality::Equal) {
          inOrder = true;
          break;
        }
      }
    } else {
      if (!element.IsObject()) {
        return fail(untypedError(badArgType(kMapType, &element)));
      }
      if (!elementKey.present) {
        return fail(untypedError(noMergeKey(element, mergeKey)));
      }
      for (size_t i = 0; i < orderKeys.size(); ++i) {
        if (!order[static_cast<rapidjson::SizeType>(i)].IsObject()) {
          return fail(untypedError(fmt::format("value for key {} is not a map", i)));
        }
        if (!orderKeys[i].present) {
          continue;
        }
        GoEquality equality = compareKeys(orderKeys[i], elementKey);
        if (equality == GoEquality::Uncomparable) {
          return comparePanic();
        }
        if (equality == GoEquality::Equal) {
          inOrder = true;
          break;
        }
      }
    }
    (inOrder ? listed : unlisted).push_back({&element, std::move(elementKey)});
  }

  if (mapKind) {
    // Every entry of the directive and of the live list must carry the merge key.
    for (size_t i = 0; i < orderKeys.size(); ++i) {
      const Value& entry = order[static_cast<rapidjson::SizeType>(i)];
      if (!entry.IsObject()) {
        return fail(untypedError(badArgType(kMapType, &entry)));
      }
      if (!orderKeys[i].present) {
        return fail(untypedError(noMergeKey(entry, mergeKey)));
      }
    }
    if (!liveWithoutKey.empty()) {
      return fail(untypedError(liveWithoutKey));
    }
  }

  std::vector<Item> sorted;
  if (!normalize(listed, unlisted, orderKeys, serverOrder, sorted)) {
    return false;
  }
  Value result = buildList(sorted);
  if (originalList != nullptr) {
    *originalList = std::move(result);
  } else {
    original.AddMember(Value(key.data(), static_cast<rapidjson::SizeType>(key.size()), alloc_),
                       std::move(result), alloc_);
  }
  if (patchList != nullptr) {
    patch.EraseMember(findMember(patch, key));
  }
  return true;
}

// The items of the patch list (deletions and directive elements aside) must appear in the
// directive in the same relative order.
bool Merger::validateOrderList(const Value* patchList, const Value& order,
                               std::string_view mergeKey) {
  if (order.Empty() || patchList == nullptr || patchList->Empty()) {
    return true;
  }
  std::vector<const Value*> kept;
  kept.reserve(patchList->Size());
  for (const Value& element : patchList->GetArray()) {
    if (!mergeKey.empty()) {
      if (!element.IsObject()) {
        return fail(untypedError(badArgType(kMapType, &element)));
      }
      auto directive = findMember(element, kDirective);
      if (directive != element.MemberEnd() && isString(directive->value, "delete")) {
        continue;
      }
    }
    kept.push_back(&element);
  }
  size_t patchIndex = 0;
  rapidjson::SizeType orderIndex = 0;
  while (patchIndex < kept.size() && orderIndex < order.Size()) {
    const Value& element = *kept[patchIndex];
    if (hasDirectiveMarker(element)) {
      ++patchIndex;
      continue;
    }
    const Value& entry = order[orderIndex];
    GoEquality equality = GoEquality::NotEqual;
    if (mergeKey.empty()) {
      equality = goCompare(&element, &entry);
    } else {
      if (!entry.IsObject()) {
        return fail(untypedError(badArgType(kMapType, &entry)));
      }
      auto elementKey = findMember(element, mergeKey);
      if (elementKey == element.MemberEnd()) {
        return fail(untypedError(noMergeKey(element, mergeKey)));
      }
      auto entryKey = findMember(entry, mergeKey);
      if (entryKey == entry.MemberEnd()) {
        return fail(untypedError(noMergeKey(entry, mergeKey)));
      }
      equality = goCompare(&elementKey->value, &entryKey->value);
    }
    if (equality == GoEquality::Uncomparable) {
      return comparePanic();
    }
    if (equality == GoEquality::Equal) {
      ++patchIndex;
    }
    ++orderIndex;
  }
  if (patchIndex < kept.size() && orderIndex >= order.Size()) {
    return fail(untypedError(
        fmt::format("the order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}",
                    goValue(*patchList), goValue(order))));
  }
  return true;
}

bool Merger::mergeSliceHandler(Value& original, Value& patch, const FieldSchema* field,
                               bool deleteList) {
  bool merging = field != nullptr && field->list != ListStrategy::Atomic;
  if (!merging && !deleteList) {
    // Atomic: the patch's list replaces the live one.
    decodeClean(patch);
    original = std::move(patch);
    return true;
  }
  return mergeSlice(original, patch, field, deleteList);
}

bool Merger::mergeSlice(Value& original, Value& patch, const FieldSchema* field, bool deleteList) {
  if (original.Empty() && patch.Empty()) {
    return true;
  }
  GoType type = GoType::Nil;
  if (!elementType(&original, &patch, type)) {
    return false;
  }
  std::string_view mergeKey = field != nullptr && field->list == ListStrategy::MergeByKey
                                  ? field->mergeKey
                                  : std::string_view{};
  if (type != GoType::Map) {
    if (deleteList) {
      deleteFromList(original, patch);
      return true;
    }
    return mergeScalarList(original, patch, mergeKey);
  }
  if (mergeKey.empty()) {
    return fail(untypedError("cannot merge lists without merge key for " +
                             std::string(field != nullptr ? field->name : "unknown field")));
  }
  return mergeMapList(original, patch, *field);
}

// $deleteFromPrimitiveList: drop every live item equal to one listed.
void Merger::deleteFromList(Value& original, const Value& doomed) {
  for (auto it = original.Begin(); it != original.End();) {
    bool listed = false;
    for (const Value& value : doomed.GetArray()) {
      if (goCompare(&*it, &value) == GoEquality::Equal) {
        listed = true;
        break;
      }
    }
    it = listed ? original.Erase(it) : it + 1;
  }
}

// A list of scalars with merge strategy: the set union, ordered.
bool Merger::mergeScalarList(Value& original, Value& patch, std::string_view mergeKey) {
  std::vector<Item> merged;
  merged.reserve(original.Size() + patch.Size());
  auto addUnique = [&merged](Value& element) {
    Key key = keyOfScalar(element);
    for (const Item& item : merged) {
      if (compareKeys(item.key, key) == GoEquality::Equal) {
        return;
      }
    }
    merged.push_back({&element, std::move(key)});
  };
  for (Value& element : original.GetArray()) {
    addUnique(element);
  }
  for (Value& element : patch.GetArray()) {
    addUnique(element);
  }
  if (!mergeKey.empty()) {
    // Partitioning by merge key needs maps.
    return fail(untypedError(badArgType(kMapType, merged.front().value)));
  }
  std::vector<Key> patchOrder;
  patchOrder.reserve(patch.Size());
  for (const Value& element : patch.GetArray()) {
    patchOrder.push_back(keyOfScalar(element));
  }
  std::vector<Key> serverOrder;
  serverOrder.reserve(original.Size());
  for (const Value& element : original.GetArray()) {
    serverOrder.push_back(keyOfScalar(element));
  }
  std::vector<Item> patchItems;
  std::vector<Item> serverOnly;
  for (Item& item : merged) {
    bool inPatch = std::any_of(patchOrder.begin(), patchOrder.end(), [&item](const Key& key) {
      return compareKeys(key, item.key) == GoEquality::Equal;
    });
    (inPatch ? patchItems : serverOnly).push_back(std::move(item));
  }
  std::vector<Item> sorted;
  if (!normalize(patchItems, serverOnly, patchOrder, serverOrder, sorted)) {
    return false;
  }
  original = buildList(sorted);
  return true;
}

// A list of maps with a merge key.
bool Merger::mergeMapList(Value& original, Value& patch, const FieldSchema& field) {
  std::string_view mergeKey = field.mergeKey;
  std::vector<Value*> base;
  base.reserve(original.Size());
  for (Value& element : original.GetArray()) {
    base.push_back(&element);
  }

  // Special elements: {"<key>": v, "$patch": "delete"} removes, {"$patch": "replace"} replaces.
  std::vector<Value*> plain;
  plain.reserve(patch.Size());
  bool replace = false;
  for (Value& element : patch.GetArray()) {
    auto directive = findMember(element, kDirective);
    if (directive == element.MemberEnd()) {
      plain.push_back(&element);
      continue;
    }
    if (isString(directive->value, "delete")) {
      auto doomed = findMember(element, mergeKey);
      if (doomed == element.MemberEnd()) {
        return fail(untypedError(noMergeKey(element, mergeKey)));
      }
      for (auto it = base.begin(); it != base.end();) {
        auto key = findMember(**it, mergeKey);
        if (key != (*it)->MemberEnd()) {
          GoEquality equality = goCompare(&key->value, &doomed->value);
          if (equality == GoEquality::Uncomparable) {
            return comparePanic();
          }
          if (equality == GoEquality::Equal) {
            it = base.erase(it);
            continue;
          }
        }
        ++it;
      }
    } else if (isString(directive->value, "replace")) {
      replace = true;
    } else if (isString(directive->value, "merge")) {
      return fail(untypedError("merging lists cannot yet be specified in the patch"));
    } else {
      return fail(untypedError(badPatchType(directive->value, element)));
    }
  }
  if (replace) {
    base = std::move(plain);
    plain.clear();
  }

  // Keys before anything moves: merging consumes the patch elements.
  std::vector<Key> serverOrder;
  serverOrder.reserve(base.size());
  for (const Value* element : base) {
    serverOrder.push_back(keyOfElement(*element, mergeKey));
  }
  std::vector<Key> patchOrder;
  patchOrder.reserve(plain.size());
  for (const Value* element : plain) {
    patchOrder.push_back(keyOfElement(*element, mergeKey));
  }
  if (replace) {
    for (Value* element : base) {
      decodeClean(*element);
    }
  }

  std::vector<Item> merged;
  merged.reserve(base.size() + plain.size());
  for (size_t i = 0; i < base.size(); ++i) {
    merged.push_back({base[i], serverOrder[i]});
  }
  for (size_t i = 0; i < plain.size(); ++i) {
    Value& element = *plain[i];
    const Key& key = patchOrder[i];
    if (!key.present) {
      return fail(untypedError(noMergeKey(element, mergeKey)));
    }
    // The first item (live, or added by an earlier patch element) with the same key.
    Value* match = nullptr;
    for (const Item& item : merged) {
      if (!item.key.present) {
        continue;
      }
      GoEquality equality = compareKeys(item.key, key);
      if (equality == GoEquality::Uncomparable) {
        return comparePanic();
      }
      if (equality == GoEquality::Equal) {
        match = item.value;
        break;
      }
    }
    if (match != nullptr) {
      // Finish the item (its nested maps included) before another patch item can touch it.
      size_t mark = pending_.size();
      if (!mergeMap(*match, element, field.fields) || !drain(mark)) {
        return false;
      }
    } else {
      decodeClean(element);
      merged.push_back({&element, key});
    }
  }

  std::vector<Item> patchItems;
  std::vector<Item> serverOnly;
  for (Item& item : merged) {
    if (!item.key.present) {
      return fail(untypedError(noMergeKey(*item.value, mergeKey)));
    }
    bool inPatch = false;
    for (const Key& key : patchOrder) {
      GoEquality equality = compareKeys(key, item.key);
      if (equality == GoEquality::Uncomparable) {
        return comparePanic();
      }
      if (equality == GoEquality::Equal) {
        inPatch = true;
        break;
      }
    }
    (inPatch ? patchItems : serverOnly).push_back(std::move(item));
  }
  std::vector<Item> sorted;
  if (!normalize(patchItems, serverOnly, patchOrder, serverOrder, sorted)) {
    return false;
  }
  original = buildList(sorted);
  return true;
}

// sliceElementType: every element of both lists must have the same Go type, and not be a list.
bool Merger::elementType(const Value* original, const Value* patch, GoType& type) {
  bool found = false;
  for (const Value* list : {original, patch}) {
    if (list == nullptr) {
      continue;
    }
    for (const Value& element : list->GetArray()) {
      GoType elementGoType = goTypeOf(element);
      if (!found) {
        if (elementGoType == GoType::Nil) {
          return fail(goPanic("reflect: call of reflect.Type.Kind on nil Type"));
        }
        if (elementGoType == GoType::Slice) {
          return fail(unprocessable("lists of lists are not supported"));
        }
        found = true;
        type = elementGoType;
      } else if (elementGoType != type) {
        std::string lists = "[";
        lists += original != nullptr ? goValue(*original) : "[]";
        lists += ' ';
        lists += patch != nullptr ? goValue(*patch) : "[]";
        lists += ']';
        return fail(untypedError("list element types are not identical: " + lists));
      }
    }
  }
  if (!found) {
    return fail(untypedError("no elements in any of the given slices"));
  }
  return true;
}

bool Merger::indexOf(const std::vector<Key>& order, const Key& key, long& index) {
  for (size_t i = 0; i < order.size(); ++i) {
    GoEquality equality = compareKeys(order[i], key);
    if (equality == GoEquality::Uncomparable) {
      return comparePanic();
    }
    if (equality == GoEquality::Equal) {
      index = static_cast<long>(i);
      return true;
    }
  }
  index = -1;
  return true;
}

// Stable sort by the position of each item's key in order (items not found keep their relative
// order after the found ones; the apply paths never produce such items).
bool Merger::sortByOrder(std::vector<Item>& items, const std::vector<Key>& order) {
  if (items.size() < 2) {
    return true;
  }
  std::vector<long> rank(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!indexOf(order, items[i].key, rank[i])) {
      return false;
    }
    if (rank[i] < 0) {
      rank[i] = LONG_MAX;
    }
  }
  if (std::is_sorted(rank.begin(), rank.end())) {
    return true;
  }
  std::vector<size_t> permutation(items.size());
  std::iota(permutation.begin(), permutation.end(), 0);
  std::stable_sort(permutation.begin(), permutation.end(),
                   [&rank](size_t a, size_t b) { return rank[a] < rank[b]; });
  std::vector<Item> sorted;
  sorted.reserve(items.size());
  for (size_t i : permutation) {
    sorted.push_back(std::move(items[i]));
  }
  items = std::move(sorted);
  return true;
}

// normalizeElementOrder: patch items in patch order, server-only items in live order, then the
// server-only items are inserted among the patch items where the live order puts them.
bool Merger::normalize(std::vector<Item>& patchItems, std::vector<Item>& serverOnly,
                       const std::vector<Key>& patchOrder, const std::vector<Key>& serverOrder,
                       std::vector<Item>& out) {
  if (!sortByOrder(patchItems, patchOrder) || !sortByOrder(serverOnly, serverOrder)) {
    return false;
  }
  std::vector<long> left(serverOnly.size());
  for (size_t i = 0; i < serverOnly.size(); ++i) {
    if (!indexOf(serverOrder, serverOnly[i].key, left[i])) {
      return false;
    }
  }
  std::vector<long> right(patchItems.size());
  for (size_t i = 0; i < patchItems.size(); ++i) {
    if (!indexOf(serverOrder, patchItems[i].key, right[i])) {
      return false;
    }
  }
  out.clear();
  out.reserve(serverOnly.size() + patchItems.size());
  size_t i = 0;
  size_t j = 0;
  while (i < serverOnly.size() || j < patchItems.size()) {
    bool takeLeft = false;
    if (j >= patchItems.size()) {
      takeLeft = true;
    } else if (i < serverOnly.size()) {
      takeLeft = left[i] >= 0 && right[j] >= 0 && left[i] < right[j];
    }
    if (takeLeft) {
      out.push_back(std::move(serverOnly[i++]));
    } else {
      out.push_back(std::move(patchItems[j++]));
    }
  }
  return true;
}

Value Merger::buildList(std::vector<Item>& items) {
  Value list(rapidjson::kArrayType);
  list.Reserve(static_cast<rapidjson::SizeType>(items.size()), alloc_);
  for (Item& item : items) {
    list.PushBack(std::move(*item.value), alloc_);
  }
  return list;
}

}  // namespace

std::optional<Failure> applyStrategicMergePatch(Value& target, Value& patch,
                                                std::span<const FieldSchema> fields,
                                                Allocator& alloc) {
  Merger merger(alloc);
  if (!merger.run(target, patch, fields)) {
    return merger.takeFailure();
  }
  return std::nullopt;
}

}  // namespace ccm::kubesim::patch_internal
