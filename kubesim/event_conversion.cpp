// Event conversion core/v1 <-> events.k8s.io/v1.
#include "kubesim/event_conversion.hpp"

#include <utility>

namespace ccm::kubesim {
namespace {

// (core name, events.k8s.io/v1 name)
constexpr std::pair<std::string_view, std::string_view> kRenames[] = {
    {"metadata", "metadata"},
    {"eventTime", "eventTime"},
    {"series", "series"},
    {"reportingComponent", "reportingController"},
    {"reportingInstance", "reportingInstance"},
    {"action", "action"},
    {"reason", "reason"},
    {"involvedObject", "regarding"},
    {"related", "related"},
    {"message", "note"},
    {"type", "type"},
    {"source", "deprecatedSource"},
    {"firstTimestamp", "deprecatedFirstTimestamp"},
    {"lastTimestamp", "deprecatedLastTimestamp"},
    {"count", "deprecatedCount"},
};

void convert(const JsonValue& in, JsonValue& out, JsonAllocator& alloc, bool to_v1) {
  out.SetObject();
  setString(out, "kind", "Event", alloc);
  setString(out, "apiVersion", to_v1 ? "events.k8s.io/v1" : "v1", alloc);
  for (const auto& [core, v1] : kRenames) {
    std::string_view from = to_v1 ? core : v1;
    std::string_view to = to_v1 ? v1 : core;
    if (const JsonValue* v = member(in, from)) {
      JsonValue copy;
      copy.CopyFrom(*v, alloc);
      setMember(out, to, std::move(copy), alloc);
    }
  }
  if (to_v1 && member(out, "eventTime") == nullptr) {
    setMember(out, "eventTime", JsonValue(rapidjson::kNullType), alloc);
  }
}

}  // namespace

void coreEventToV1(const JsonValue& core, JsonValue& out, JsonAllocator& alloc) {
  convert(core, out, alloc, true);
}

void v1EventToCore(const JsonValue& v1, JsonValue& out, JsonAllocator& alloc) {
  convert(v1, out, alloc, false);
}

std::string coreEventJsonToV1(const std::string& core_json) {
  JsonDocument in;
  in.Parse(core_json.data(), core_json.size());
  JsonDocument out;
  coreEventToV1(in, out, out.GetAllocator());
  return toJson(out);
}

}  // namespace ccm::kubesim
