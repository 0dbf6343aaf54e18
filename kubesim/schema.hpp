// Schema: the shapes of the API types kubesim serves (field names and value types), written
// as a compact table. It gives the decoding behaviour a real API server gets from Go structs:
// unknown fields are dropped (fieldValidation=Ignore/Warn) or rejected (Strict), JSON values
// of the wrong type fail with Go's "cannot unmarshal" message, and null struct fields read as
// absent. The same table feeds the OpenAPI v3 documents kubectl reads.
//
// Deep, rarely used corners (pod volumes, probes, ...) are typed `any`: accepted as given.
//
// THREAD: immutable after construction; builtin() is safe from any thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubesim/json_util.hpp"

namespace ccm::kubesim {

class Schema {
 public:
  enum class Kind {
    String,
    Int32,
    Int64,
    Bool,
    Number,
    Quantity,
    IntOrString,
    Time,
    MicroTime,
    Bytes,
    Any,
    Struct,
    Map,
    Array
  };
  struct TypeRef {
    Kind kind = Kind::Any;
    std::string struct_name;           // Struct
    std::shared_ptr<TypeRef> element;  // Map values, Array elements
  };
  struct StructDef {
    std::string name;
    std::vector<std::pair<std::string, TypeRef>> fields;  // declaration order
    const TypeRef* field(std::string_view name) const;
  };

  struct Issues {
    std::vector<std::string> unknown_fields;  // dotted paths: "spec.foo"
    std::optional<std::string> type_error;    // Go json.Unmarshal-style message
  };

  static const Schema& builtin();

  const StructDef* structDef(std::string_view name) const;
  // The root struct name for a Kind in a group ("Node", "EventsV1Event", ...).
  std::string rootFor(std::string_view group, std::string_view kind) const;

  // Checks v against the struct `root`. When prune is set, unknown fields and null-valued
  // struct fields are removed from v (what decoding into Go structs does).
  Issues check(std::string_view root, JsonValue& v, JsonAllocator& alloc, bool prune) const;

  // Go type name for messages ("string", "bool", "int32", "[]v1.Taint", ...).
  std::string goTypeName(const TypeRef& t) const;
  const std::map<std::string, StructDef, std::less<>>& structs() const { return structs_; }

 private:
  Schema();
  // path is extended while descending and restored before returning.
  void checkValue(const TypeRef& t, JsonValue& v, JsonAllocator& alloc, bool prune,
                  std::string& path, const std::string& parent, Issues& issues) const;
  void checkStruct(const StructDef& def, JsonValue& v, JsonAllocator& alloc, bool prune,
                   std::string& path, Issues& issues) const;
  TypeRef parseType(std::string_view text) const;

  std::map<std::string, StructDef, std::less<>> structs_;
};

}  // namespace ccm::kubesim
