// JSON for the OpenStack clients: Json, a small tree for building request bodies, and
// read helpers over RapidJSON values for parsing responses leniently (a missing or mistyped
// field reads as empty).
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/types.hpp"

namespace ccm::openstack {

// A JSON value under construction. Objects keep insertion order.
class Json {
 public:
  Json() = default;                                    // null
  Json(std::nullptr_t) {}                              // NOLINT(google-explicit-constructor)
  Json(bool b) : type_(Type::Bool), b_(b) {}           // NOLINT(google-explicit-constructor)
  Json(int v) : type_(Type::Int), i_(v) {}             // NOLINT(google-explicit-constructor)
  Json(int64_t v) : type_(Type::Int), i_(v) {}         // NOLINT(google-explicit-constructor)
  Json(uint32_t v) : type_(Type::Int), i_(v) {}        // NOLINT(google-explicit-constructor)
  Json(const char* s) : type_(Type::String), s_(s) {}  // NOLINT(google-explicit-constructor)
  Json(std::string s) : type_(Type::String), s_(std::move(s)) {}  // NOLINT
  Json(std::string_view s) : type_(Type::String), s_(s) {}        // NOLINT

  static Json object() {
    Json j;
    j.type_ = Type::Object;
    return j;
  }
  static Json array() {
    Json j;
    j.type_ = Type::Array;
    return j;
  }
  static Json stringArray(const std::vector<std::string>& items) {
    Json j = array();
    for (const auto& s : items) {
      j.push(s);
    }
    return j;
  }

  // Sets (or replaces) key in an object.
  Json& set(const std::string& key, Json value);
  // Appends to an array.
  Json& push(Json value);

  std::string dump() const;

 private:
  enum class Type { Null, Bool, Int, String, Array, Object };
  template <typename Writer>
  void write(Writer& w) const;

  Type type_ = Type::Null;
  bool b_ = false;
  int64_t i_ = 0;
  std::string s_;
  std::vector<std::string> keys_;
  std::vector<Json> items_;
};

using JsonValue = rapidjson::Value;

sdk::Result<rapidjson::Document> parseJson(std::string_view text);

// Lenient readers: a missing or differently typed member reads as empty / nullopt.
const JsonValue* jsonMember(const JsonValue& obj, const char* key);
std::string jsonString(const JsonValue& obj, const char* key);
std::optional<int64_t> jsonInt(const JsonValue& obj, const char* key);
std::optional<bool> jsonBool(const JsonValue& obj, const char* key);
bool jsonIsNull(const JsonValue& obj, const char* key);
// Strings of an array member (non-strings skipped).
std::vector<std::string> jsonStrings(const JsonValue& obj, const char* key);
// The "id" of every object in an array member ([{"id": ...}, ...]).
std::vector<std::string> jsonIds(const JsonValue& obj, const char* key);
// An array member, or nullptr.
const JsonValue* jsonArray(const JsonValue& obj, const char* key);
// An object member, or nullptr.
const JsonValue* jsonObject(const JsonValue& obj, const char* key);

}  // namespace ccm::openstack
