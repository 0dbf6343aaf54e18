// JSON patch (see json_patch.hpp). Paths resolve like the v4 library's findObject: the text
// before the first '/' is ignored, every segment but the last must name an existing non-null
// object or array, "~1" and "~0" are unescaped, array indexes are Go integers (negative ones count
// from the end) and "-" appends.
#include "kubesim/patch/json_patch.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ccm::kubesim::patch_internal {
namespace {

constexpr size_t kMaxOperations = 10000;

// strconv.Atoi: optional sign, decimal digits, int64 range.
bool parseGoInt(std::string_view text, int64_t& out) {
  if (!text.empty() && text[0] == '+') {
    text.remove_prefix(1);
    if (!text.empty() && text[0] == '-') {
      return false;
    }
  }
  if (text.empty()) {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string decodeSegment(std::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '~' && i + 1 < segment.size() && segment[i + 1] == '1') {
      out += '/';
      ++i;
    } else {
      out += segment[i];
    }
  }
  std::string result;
  result.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '~' && i + 1 < out.size() && out[i + 1] == '0') {
      result += '~';
      ++i;
    } else {
      result += out[i];
    }
  }
  return result;
}

// A resolved path: the object or array that holds the last segment, and that segment.
struct Location {
  Value* container = nullptr;
  std::string key;
};

enum class Lookup { Found, Missing, Error };

// An array index as the v4 library reads it for get/replace/remove: in range, or negative and
// counted from the end.
bool arrayIndex(const Value& array, const std::string& key, rapidjson::SizeType& index,
                std::string& error) {
  int64_t value = 0;
  if (!parseGoInt(key, value)) {
    error = fmt::format("strconv.Atoi: parsing \"{}\": invalid syntax", key);
    return false;
  }
  int64_t size = array.Size();
  if (value >= size || value < -size) {
    error = fmt::format("Unable to access invalid index: {}: invalid index referenced", value);
    return false;
  }
  index = static_cast<rapidjson::SizeType>(value < 0 ? value + size : value);
  return true;
}

Lookup getAt(const Location& at, Value*& out, std::string& error) {
  Value& container = *at.container;
  if (container.IsObject()) {
    auto it = findMember(container, at.key);
    if (it == container.MemberEnd()) {
      error = fmt::format("unable to get nonexistent key: {}: missing value", at.key);
      return Lookup::Missing;
    }
    out = &it->value;
    return Lookup::Found;
  }
  rapidjson::SizeType index = 0;
  if (!arrayIndex(container, at.key, index, error)) {
    return Lookup::Error;
  }
  out = &container[index];
  return Lookup::Found;
}

Location findObject(Value& document, std::string_view path) {
  size_t first = path.find('/');
  if (first == std::string_view::npos) {
    return {};
  }
  size_t last = path.rfind('/');
  Value* current = &document;
  for (size_t pos = first + 1; pos <= last;) {
    size_t next = path.find('/', pos);
    Location step{current, decodeSegment(path.substr(pos, next - pos))};
    Value* child = nullptr;
    std::string ignored;
    if (getAt(step, child, ignored) != Lookup::Found || !(child->IsObject() || child->IsArray())) {
      return {};
    }
    current = child;
    pos = next + 1;
  }
  return {current, decodeSegment(path.substr(last + 1))};
}

std::optional<std::string> addAt(const Location& at, Value value, Allocator& alloc) {
  Value& container = *at.container;
  if (container.IsObject()) {
    auto it = findMember(container, at.key);
    if (it != container.MemberEnd()) {
      it->value = std::move(value);
    } else {
      container.AddMember(
          Value(at.key.data(), static_cast<rapidjson::SizeType>(at.key.size()), alloc),
          std::move(value), alloc);
    }
    return std::nullopt;
  }
  if (at.key == "-") {
    container.PushBack(std::move(value), alloc);
    return std::nullopt;
  }
  int64_t index = 0;
  if (!parseGoInt(at.key, index)) {
    return fmt::format(
        "value was not a proper array index: '{}': strconv.Atoi: parsing \"{}\": "
        "invalid syntax",
        at.key, at.key);
  }
  int64_t size = static_cast<int64_t>(container.Size()) + 1;
  if (index >= size || index < -size) {
    return fmt::format("Unable to access invalid index: {}: invalid index referenced", index);
  }
  if (index < 0) {
    index += size;
  }
  container.PushBack(Value(), alloc);
  for (auto i = static_cast<rapidjson::SizeType>(size - 1);
       i > static_cast<rapidjson::SizeType>(index); --i) {
    container[i].Swap(container[i - 1]);
  }
  container[static_cast<rapidjson::SizeType>(index)] = std::move(value);
  return std::nullopt;
}

std::optional<std::string> removeAt(const Location& at) {
  Value& container = *at.container;
  if (container.IsObject()) {
    auto it = findMember(container, at.key);
    if (it == container.MemberEnd()) {
      return fmt::format("Unable to remove nonexistent key: {}: missing value", at.key);
    }
    container.EraseMember(it);
    return std::nullopt;
  }
  rapidjson::SizeType index = 0;
  std::string error;
  if (!arrayIndex(container, at.key, index, error)) {
    return error;
  }
  container.Erase(container.Begin() + index);
  return std::nullopt;
}

bool sameNumber(const Value& a, const Value& b) {
  // The library compares the JSON text of scalars: 1 and 1.0 differ.
  if (a.IsDouble() != b.IsDouble()) {
    return false;
  }
  if (a.IsDouble()) {
    return a.GetDouble() == b.GetDouble();
  }
  if (a.IsInt64() && b.IsInt64()) {
    return a.GetInt64() == b.GetInt64();
  }
  if (a.IsUint64() && b.IsUint64()) {
    return a.GetUint64() == b.GetUint64();
  }
  return false;
}

// Structural equality (object member order does not matter). Iterative: values nest up to
// 10000 levels.
bool jsonEqual(const Value& left, const Value& right) {
  std::vector<std::pair<const Value*, const Value*>> pending{{&left, &right}};
  while (!pending.empty()) {
    auto [a, b] = pending.back();
    pending.pop_back();
    if (a->GetType() != b->GetType()) {
      return false;
    }
    switch (a->GetType()) {
      case rapidjson::kNullType:
      case rapidjson::kFalseType:
      case rapidjson::kTrueType:
        break;
      case rapidjson::kNumberType:
        if (!sameNumber(*a, *b)) {
          return false;
        }
        break;
      case rapidjson::kStringType:
        if (stringOf(*a) != stringOf(*b)) {
          return false;
        }
        break;
      case rapidjson::kArrayType:
        if (a->Size() != b->Size()) {
          return false;
        }
        for (rapidjson::SizeType i = 0; i < a->Size(); ++i) {
          pending.emplace_back(&(*a)[i], &(*b)[i]);
        }
        break;
      case rapidjson::kObjectType:
        if (a->MemberCount() != b->MemberCount()) {
          return false;
        }
        for (const Value::Member& member : a->GetObject()) {
          auto other = findMember(*b, stringOf(member.name));
          if (other == b->MemberEnd()) {
            return false;
          }
          pending.emplace_back(&member.value, &other->value);
        }
        break;
    }
  }
  return true;
}

// One operation's fields. Absent and null "path"/"from" are both "missing"; an absent "value"
// (nullptr) and a null one both add null.
struct Operation {
  std::string_view op = "unknown";
  const Value* path = nullptr;
  const Value* from = nullptr;
  Value* value = nullptr;

  Value takeValue() { return value != nullptr ? Value(std::move(*value)) : Value(); }
};

Operation readOperation(Value& element) {
  Operation operation;
  if (!element.IsObject()) {
    return operation;
  }
  for (Value::Member& member : element.GetObject()) {
    std::string_view name = stringOf(member.name);
    if (name == "op" && member.value.IsString()) {
      operation.op = stringOf(member.value);
    } else if (name == "path" && member.value.IsString()) {
      operation.path = &member.value;
    } else if (name == "from" && member.value.IsString()) {
      operation.from = &member.value;
    } else if (name == "value") {
      operation.value = &member.value;
    }
  }
  return operation;
}

class Patcher {
 public:
  Patcher(Value& document, Allocator& alloc) : document_(document), alloc_(alloc) {}

  std::optional<Failure> apply(Operation& operation) {
    std::string_view op = operation.op;
    if (op == "add") {
      return add(operation);
    }
    if (op == "remove") {
      return remove(operation);
    }
    if (op == "replace") {
      return replace(operation);
    }
    if (op == "move") {
      return move(operation);
    }
    if (op == "test") {
      return test(operation);
    }
    if (op == "copy") {
      return copy(operation);
    }
    return unprocessable(fmt::format("Unexpected kind: {}", op));
  }

 private:
  static std::string_view text(const Value* value) { return stringOf(*value); }

  std::optional<Failure> add(Operation& operation) {
    if (operation.path == nullptr) {
      return unprocessable("add operation failed to decode path: missing value");
    }
    std::string_view path = text(operation.path);
    Location at = findObject(document_, path);
    if (at.container == nullptr) {
      return unprocessable(fmt::format(
          "add operation does not apply: doc is missing path: \"{}\": missing value", path));
    }
    if (auto error = addAt(at, operation.takeValue(), alloc_)) {
      return unprocessable(fmt::format("error in add for path: '{}': {}", path, *error));
    }
    return std::nullopt;
  }

  std::optional<Failure> remove(Operation& operation) {
    if (operation.path == nullptr) {
      return unprocessable("remove operation failed to decode path: missing value");
    }
    std::string_view path = text(operation.path);
    Location at = findObject(document_, path);
    if (at.container == nullptr) {
      return unprocessable(fmt::format(
          "remove operation does not apply: doc is missing path: \"{}\": missing value", path));
    }
    if (auto error = removeAt(at)) {
      return unprocessable(fmt::format("error in remove for path: '{}': {}", path, *error));
    }
    return std::nullopt;
  }

  std::optional<Failure> replace(Operation& operation) {
    if (operation.path == nullptr) {
      return unprocessable(
          "replace operation failed to decode path: operation missing path field: missing value");
    }
    std::string_view path = text(operation.path);
    if (path.empty()) {
      // The whole document: an object replaces it, an array cannot be decoded into the object,
      // anything else is ignored by the library.
      if (operation.value == nullptr) {
        return goPanic("replace of the whole document without a value");
      }
      if (operation.value->IsObject()) {
        document_ = operation.takeValue();
      } else if (operation.value->IsArray()) {
        return unprocessable("json: cannot unmarshal array into the object");
      }
      return std::nullopt;
    }
    Location at = findObject(document_, path);
    if (at.container == nullptr) {
      return unprocessable(fmt::format(
          "replace operation does not apply: doc is missing path: {}: missing value", path));
    }
    Value* current = nullptr;
    std::string error;
    Lookup found = getAt(at, current, error);
    if (found == Lookup::Missing && at.container->IsObject()) {
      // The v4 library's object lookup never fails: replacing a missing member sets it.
      Value name(at.key.data(), static_cast<rapidjson::SizeType>(at.key.size()), alloc_);
      at.container->AddMember(name, operation.takeValue(), alloc_);
      return std::nullopt;
    }
    if (found != Lookup::Found) {
      return unprocessable(fmt::format(
          "replace operation does not apply: doc is missing key: {}: missing value", path));
    }
    *current = operation.takeValue();
    return std::nullopt;
  }

  std::optional<Failure> move(Operation& operation) {
    if (operation.from == nullptr) {
      return unprocessable(
          "move operation failed to decode from: operation, missing from field: missing value");
    }
    std::string_view from = text(operation.from);
    Location source = findObject(document_, from);
    if (source.container == nullptr) {
      return unprocessable(fmt::format(
          "move operation does not apply: doc is missing from path: {}: missing value", from));
    }
    Value* current = nullptr;
    std::string error;
    if (getAt(source, current, error) != Lookup::Found) {
      return unprocessable(fmt::format("error in move for path: '{}': {}", source.key, error));
    }
    Value moved(std::move(*current));
    if (auto removeError = removeAt(source)) {
      return unprocessable(
          fmt::format("error in move for path: '{}': {}", source.key, *removeError));
    }
    if (operation.path == nullptr) {
      return unprocessable(
          "move operation failed to decode path: operation missing path field: missing value");
    }
    std::string_view path = text(operation.path);
    Location target = findObject(document_, path);
    if (target.container == nullptr) {
      return unprocessable(fmt::format(
          "move operation does not apply: doc is missing destination path: {}: missing value",
          path));
    }
    if (auto addError = addAt(target, std::move(moved), alloc_)) {
      return unprocessable(fmt::format("error in move for path: '{}': {}", path, *addError));
    }
    return std::nullopt;
  }

  std::optional<Failure> test(Operation& operation) {
    if (operation.path == nullptr) {
      return unprocessable(
          "test operation failed to decode path: operation missing path field: missing value");
    }
    std::string_view path = text(operation.path);
    auto failed = [path] {
      return unprocessable(fmt::format("testing value {} failed: test failed", path));
    };
    if (path.empty()) {
      if (operation.value == nullptr || !jsonEqual(document_, *operation.value)) {
        return failed();
      }
      return std::nullopt;
    }
    Location at = findObject(document_, path);
    if (at.container == nullptr) {
      return unprocessable(
          fmt::format("test operation does not apply: is missing path: {}: missing value", path));
    }
    Value* current = nullptr;
    std::string error;
    Lookup lookup = getAt(at, current, error);
    if (lookup == Lookup::Error) {
      return unprocessable(fmt::format("error in test for path: '{}': {}", path, error));
    }
    bool expectNull = operation.value == nullptr || operation.value->IsNull();
    if (lookup == Lookup::Missing || current->IsNull()) {
      return expectNull ? std::nullopt : std::optional<Failure>(failed());
    }
    if (operation.value == nullptr || !jsonEqual(*current, *operation.value)) {
      return failed();
    }
    return std::nullopt;
  }

  std::optional<Failure> copy(Operation& operation) {
    if (operation.from == nullptr) {
      return unprocessable(
          "copy operation failed to decode from: operation, missing from field: missing value");
    }
    std::string_view from = text(operation.from);
    Location source = findObject(document_, from);
    if (source.container == nullptr) {
      return unprocessable(fmt::format(
          "copy operation does not apply: doc is missing from path: {}: missing value", from));
    }
    Value* current = nullptr;
    std::string error;
    if (getAt(source, current, error) != Lookup::Found) {
      return unprocessable(fmt::format("error in copy for from: '{}': {}", from, error));
    }
    if (operation.path == nullptr) {
      return unprocessable("copy operation failed to decode path: missing value");
    }
    std::string_view path = text(operation.path);
    Location target = findObject(document_, path);
    if (target.container == nullptr) {
      return unprocessable(fmt::format(
          "copy operation does not apply: doc is missing destination path: {}: missing value",
          path));
    }
    Value duplicate(*current, alloc_);
    if (auto addError = addAt(target, std::move(duplicate), alloc_)) {
      return unprocessable(fmt::format("error while adding value during copy: {}", *addError));
    }
    return std::nullopt;
  }

  Value& document_;
  Allocator& alloc_;
};

}  // namespace

std::optional<Failure> decodeJsonPatch(const Value& operations) {
  if (operations.IsNull()) {
    return std::nullopt;
  }
  if (!operations.IsArray()) {
    return badRequest(
        fmt::format("error decoding patch: json: cannot unmarshal {} into Go value of type "
                    "[]handlers.jsonPatchOp",
                    jsonKindWord(operations)));
  }
  for (const Value& operation : operations.GetArray()) {
    if (operation.IsNull()) {
      continue;
    }
    if (!operation.IsObject()) {
      return badRequest(
          fmt::format("error decoding patch: json: cannot unmarshal {} into Go value of type "
                      "handlers.jsonPatchOp",
                      jsonKindWord(operation)));
    }
    for (const Value::Member& member : operation.GetObject()) {
      std::string_view name = stringOf(member.name);
      if ((name == "op" || name == "path" || name == "from") && !member.value.IsString() &&
          !member.value.IsNull()) {
        return badRequest(
            fmt::format("error decoding patch: json: cannot unmarshal {} into Go struct field "
                        "jsonPatchOp.{} of type string",
                        jsonKindWord(member.value), name));
      }
    }
  }
  if (operations.Size() > kMaxOperations) {
    return entityTooLarge(
        fmt::format("The allowed maximum operations in a JSON patch is {}, got {}", kMaxOperations,
                    operations.Size()));
  }
  return std::nullopt;
}

std::optional<Failure> applyJsonPatch(Value& target, Value& operations, Allocator& alloc) {
  if (!operations.IsArray()) {
    return std::nullopt;
  }
  Patcher patcher(target, alloc);
  for (Value& element : operations.GetArray()) {
    Operation operation = readOperation(element);
    if (auto failure = patcher.apply(operation)) {
      return failure;
    }
  }
  return std::nullopt;
}

}  // namespace ccm::kubesim::patch_internal
