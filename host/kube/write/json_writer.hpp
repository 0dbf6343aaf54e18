// Writing API request bodies with RapidJSON (every string escaped by the writer): the few
// helpers the patch builders and the event sender share.
//
// THREAD: pure functions over the caller's writer.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string_view>

namespace ccm::kube::json {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

inline void str(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

inline void key(Writer& w, std::string_view s) {
  w.Key(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// "key": "value", or nothing when the value is empty (optional fields).
inline void optionalField(Writer& w, std::string_view k, std::string_view value) {
  if (!value.empty()) {
    key(w, k);
    str(w, value);
  }
}

}  // namespace ccm::kube::json
