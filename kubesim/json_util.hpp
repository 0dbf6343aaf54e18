// Small RapidJSON helpers shared by kubesim: member access by name, string setters that copy,
// serialisation, Kubernetes time formats, UIDs and generated-name suffixes.
//
// THREAD: free functions without shared state; randomness is per thread.
#pragma once

#include <rapidjson/document.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/kube/api/time_format.hpp"

namespace ccm::kubesim {

using JsonValue = rapidjson::Value;
using JsonDocument = rapidjson::Document;
using JsonAllocator = rapidjson::Document::AllocatorType;
using WallTime = std::chrono::system_clock::time_point;

// Serialises v compactly (no whitespace).
std::string toJson(const JsonValue& v);
void appendJson(std::string& out, const JsonValue& v);

// Appends s as a JSON string literal (with quotes).
void appendJsonString(std::string& out, std::string_view s);
std::string jsonString(std::string_view s);
// s with every byte that is not part of well-formed UTF-8 replaced by U+FFFD (what Go's
// encoding/json does when it writes a string); appendJsonString applies it.
std::string validUtf8(std::string_view s);
// One byte of input as Go's JSON decoder quotes it in a syntax error ('\x01', '\u0081', 'é').
std::string goQuoteByte(unsigned char c);

// Member lookup by name; nullptr when obj is not an object or lacks the member.
// The end of an object's members as a const iterator, to compare member iterators with:
// RapidJSON 1.1 compares a non-const iterator with another only through a conversion, and
// under C++20 `it != v.MemberEnd()` is then ambiguous with the reversed operator== (a clang
// warning, an error with -Werror). Comparing with a const iterator is not.
inline JsonValue::ConstMemberIterator memberEnd(const JsonValue& obj) {
  return obj.MemberEnd();
}

const JsonValue* member(const JsonValue& obj, std::string_view name);
JsonValue* member(JsonValue& obj, std::string_view name);

// The string member (empty when missing or not a string).
std::string_view stringMember(const JsonValue& obj, std::string_view name);

// Follows names from obj; nullptr when any step is missing.
const JsonValue* memberPath(const JsonValue& obj, std::initializer_list<std::string_view> names);
JsonValue* memberPath(JsonValue& obj, std::initializer_list<std::string_view> names);

// The object member `name`, created (or replaced when not an object) if needed.
JsonValue& ensureObject(JsonValue& obj, std::string_view name, JsonAllocator& alloc);

// Sets obj[name] (copying name and value), replacing any existing member.
void setMember(JsonValue& obj, std::string_view name, JsonValue&& value, JsonAllocator& alloc);
void setString(JsonValue& obj, std::string_view name, std::string_view value, JsonAllocator& alloc);
void setInt(JsonValue& obj, std::string_view name, int64_t value, JsonAllocator& alloc);
void setBool(JsonValue& obj, std::string_view name, bool value, JsonAllocator& alloc);
bool removeMember(JsonValue& obj, std::string_view name);
JsonValue makeString(std::string_view s, JsonAllocator& alloc);

// Removes duplicate keys recursively (the last occurrence wins, as Go's decoder does).
// Returns the dotted paths of the duplicates found (for strict-decoding messages).
void dedupeKeys(JsonValue& v, JsonAllocator& alloc, std::string_view path,
                std::vector<std::string>* duplicates);

// metav1.Time: RFC 3339 UTC, second precision ("2026-07-24T10:00:00Z"); the host's writer.
inline std::string formatTime(WallTime t) { return kube::formatRfc3339(t); }
// metav1.MicroTime: six fractional digits ("2026-07-24T10:00:00.123456Z"); the host's writer.
using kube::formatMicroTime;
// Parses RFC 3339 (with or without fractional seconds, Z or +hh:mm). Kept apart from the
// host's reader on purpose: this one decides what the server accepts, the host's is a client's.
std::optional<WallTime> parseTime(std::string_view text);

// A random RFC 4122 version-4 UUID.
std::string newUid();
// n random characters from the alphabet the API server uses for generateName.
std::string randomNameSuffix(size_t n = 5);
// Uniform random integer in [lo, hi].
int64_t randomInt(int64_t lo, int64_t hi);
double randomUnit();

// Human-readable JSON parse error in the style of Go's encoding/json.
std::string describeParseError(const JsonDocument& doc, std::string_view text);

// The text of a top-level member's value in compact or spaced JSON object text, found by a
// scan that decodes nothing (stored objects are served this way many times); empty when the
// member is missing or the text is not a well-formed object up to that value.
std::string_view rawTopLevelMember(std::string_view object_json, std::string_view name);

// An object's meta.k8s.io/v1 PartialObjectMetadata: kind, apiVersion and its metadata only
// (what the API server answers to "Accept: application/json;as=PartialObjectMetadata;...").
// managed_fields: keep metadata.managedFields (Table rows drop them).
std::string partialObjectMetadata(std::string_view object_json, bool managed_fields = true);

// Decimal text of v.
std::string decimal(uint64_t v);
// Parses a non-negative decimal integer; nullopt on anything else.
std::optional<uint64_t> parseDecimal(std::string_view s);

}  // namespace ccm::kubesim
