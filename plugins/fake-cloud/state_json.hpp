// The state file's JSON form of CloudState (docs/providers/fake-cloud.md shows it): one line,
// keys in a fixed order, so tests can look for fragments such as "hostUpdates":1.
#pragma once

#include <optional>
#include <string>

#include "plugins/fake-cloud/cloud_state.hpp"

namespace ccm::fakecloud {

// The state as compact JSON (no trailing newline).
std::string encodeState(const CloudState& state);

// The state a JSON text describes; nothing when the text is not a JSON object. Missing or
// mistyped fields read as empty or 0.
std::optional<CloudState> decodeState(const std::string& text);

}  // namespace ccm::fakecloud
