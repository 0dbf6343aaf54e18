// Helpers of the patch engine's unit tests: apply a patch to a JSON literal and compare results
// in a canonical form (object keys sorted, arrays in order).
#pragma once

#include <doctest/doctest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubesim/patch/patch.hpp"

namespace ccm::kubesim::testing {

inline std::string toJson(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

inline void writeCanonical(const rapidjson::Value& value,
                           rapidjson::Writer<rapidjson::StringBuffer>& writer) {
  if (value.IsObject()) {
    std::vector<const rapidjson::Value::Member*> members;
    for (const auto& member : value.GetObject()) {
      members.push_back(&member);
    }
    std::sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
      return std::string_view(a->name.GetString(), a->name.GetStringLength()) <
             std::string_view(b->name.GetString(), b->name.GetStringLength());
    });
    writer.StartObject();
    for (const auto* member : members) {
      writer.Key(member->name.GetString(), member->name.GetStringLength());
      writeCanonical(member->value, writer);
    }
    writer.EndObject();
  } else if (value.IsArray()) {
    writer.StartArray();
    for (const auto& element : value.GetArray()) {
      writeCanonical(element, writer);
    }
    writer.EndArray();
  } else {
    value.Accept(writer);
  }
}

// The JSON text with object keys sorted; "<invalid JSON>" if it does not parse.
inline std::string canonical(std::string_view json) {
  rapidjson::Document document;
  document.Parse(json.data(), json.size());
  if (document.HasParseError()) {
    return "<invalid JSON>";
  }
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writeCanonical(document, writer);
  return {buffer.GetString(), buffer.GetSize()};
}

struct Outcome {
  std::optional<PatchError> error;
  std::string detail;
  std::string before;  // the target before the call, compact, in stored key order
  std::string after;   // the target after the call, compact, in stored key order
};

inline Outcome run(PatchType type, std::string_view kind, std::string_view target,
                   std::string_view body) {
  rapidjson::Document document;
  document.Parse(target.data(), target.size());
  REQUIRE_MESSAGE(!document.HasParseError(), "bad test target: ", std::string(target));
  Outcome outcome;
  outcome.before = toJson(document);
  outcome.error = applyPatch(type, kind, document, document.GetAllocator(), body, &outcome.detail);
  outcome.after = toJson(document);
  return outcome;
}

inline std::string describe(const Outcome& outcome) {
  if (!outcome.error) {
    return "success";
  }
  return std::to_string(outcome.error->code) + " " + outcome.error->reason + ": " +
         outcome.error->message + " [" + outcome.detail + "]";
}

// The patched object in canonical form; fails the test case if the patch fails.
inline std::string applied(PatchType type, std::string_view kind, std::string_view target,
                           std::string_view body) {
  Outcome outcome = run(type, kind, target, body);
  INFO("body: ", std::string(body));
  CHECK_MESSAGE(!outcome.error, describe(outcome));
  return canonical(outcome.after);
}

// The error of a patch that must fail; also checks that the target was left exactly as it was.
inline PatchError rejected(PatchType type, std::string_view kind, std::string_view target,
                           std::string_view body, std::string* detail = nullptr) {
  Outcome outcome = run(type, kind, target, body);
  INFO("body: ", std::string(body));
  REQUIRE_MESSAGE(outcome.error.has_value(), "patch unexpectedly succeeded: ", outcome.after);
  CHECK_EQ(outcome.after, outcome.before);
  if (detail != nullptr) {
    *detail = outcome.detail;
  }
  return *outcome.error;
}

inline std::string smp(std::string_view kind, std::string_view target, std::string_view body) {
  return applied(PatchType::Strategic, kind, target, body);
}

inline std::string merge(std::string_view target, std::string_view body) {
  return applied(PatchType::Merge, "Node", target, body);
}

inline std::string jsonPatch(std::string_view target, std::string_view body) {
  return applied(PatchType::Json, "Node", target, body);
}

}  // namespace ccm::kubesim::testing
