// Internals shared by the three patch algorithms: the failures they return, and how Go's
// encoding/json sees a RapidJSON value (dynamic type, == semantics, %v formatting), which the
// apimachinery code kube-apiserver runs depends on.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "kubesim/patch/patch.hpp"

namespace ccm::kubesim::patch_internal {

using Value = rapidjson::Value;
using Allocator = rapidjson::Document::AllocatorType;

// A failed patch: what the client sees, plus the engine's own explanation.
struct Failure {
  PatchError error;
  std::string detail;
};

// 400 BadRequest with message.
Failure badRequest(std::string message);
// 422 Invalid as NewGenericServerResponse builds it: a fixed message, the cause only in detail.
Failure unprocessable(std::string detail);
// 413 RequestEntityTooLarge ("Request entity too large: <message>").
Failure entityTooLarge(std::string_view message);
// 500 with no reason: an error apimachinery returns untyped (the apiserver passes its text on).
Failure untypedError(std::string message);
// 500 for the inputs that make the Go code panic (a real server answers with plain text).
Failure goPanic(std::string detail);

// The dynamic type encoding/json (with PreserveInts, as the apiserver decodes patches) gives a
// value: integers that fit int64 are int64, every other number float64.
enum class GoType : unsigned char { Nil, Bool, Int64, Float64, String, Map, Slice };
GoType goTypeOf(const Value& value);

// reflect.Type names as %s prints them ("map[string]interface {}", "[]interface {}", ...).
std::string_view goTypeName(GoType type);

// The JSON kind word of a json.UnmarshalTypeError ("object", "array", "string", "number", "bool").
std::string_view jsonKindWord(const Value& value);

// Result of Go's == on two interface{} values; comparing two maps or two slices panics.
enum class GoEquality : unsigned char { Equal, NotEqual, Uncomparable };
// nullptr stands for a missing value (nil).
GoEquality goCompare(const Value* a, const Value* b);

// fmt's %v of a decoded JSON value: map[k:v ...] with sorted keys, [a b], <nil>, ...
void appendGoValue(std::string& out, const Value& value);
std::string goValue(const Value& value);
// fmt's %s: strings as they are, everything else wrapped as %!s(type=value).
std::string goValueS(const Value& value);

// mergepatch.ErrBadArgType: "expected a <expected>, but received a <type of actual>".
std::string badArgType(std::string_view expected, const Value* actual);

inline std::string_view stringOf(const Value& value) {
  return {value.GetString(), value.GetStringLength()};
}

inline bool isString(const Value& value, std::string_view text) {
  return value.IsString() && stringOf(value) == text;
}

// Member lookup by a string that need not be NUL-terminated.
inline Value::MemberIterator findMember(Value& object, std::string_view name) {
  Value key(rapidjson::StringRef(name.data(), name.size()));
  return object.FindMember(key);
}
inline Value::ConstMemberIterator findMember(const Value& object, std::string_view name) {
  Value key(rapidjson::StringRef(name.data(), name.size()));
  return object.FindMember(key);
}

}  // namespace ccm::kubesim::patch_internal
