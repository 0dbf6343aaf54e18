// Conversion between the two representations of Events: core/v1 (the stored form) and
// events.k8s.io/v1 (same storage, renamed fields: regarding, note, reportingController,
// deprecatedSource/FirstTimestamp/LastTimestamp/Count).
//
// THREAD: pure functions.
#pragma once

#include <string>

#include "kubesim/json_util.hpp"

namespace ccm::kubesim {

// core/v1 Event -> events.k8s.io/v1 Event (new document).
void coreEventToV1(const JsonValue& core, JsonValue& out, JsonAllocator& alloc);
// events.k8s.io/v1 Event -> core/v1 Event (new document).
void v1EventToCore(const JsonValue& v1, JsonValue& out, JsonAllocator& alloc);
// Convenience: stored core JSON -> events.k8s.io/v1 JSON.
std::string coreEventJsonToV1(const std::string& core_json);

}  // namespace ccm::kubesim
