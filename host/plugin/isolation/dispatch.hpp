// The child's side of one call: decodes a Call frame, runs it on the in-process provider and
// encodes the Reply frame. The host's side (isolated_provider.cpp) writes the same layouts.
//
// Call:  kind, id (u64), method (u8), the method's arguments in Provider's order
//        (nodes, services, routes as in values.hpp; node lists as a count then the nodes).
// Reply: kind, id (u64), status; when OK, the method's value (existence/power as one byte,
//        optional values as a boolean then the value, lists as a count then the items).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "host/plugin/provider.hpp"

namespace ccm::plugin::isolation {

// The id of a Call payload, when it is one and the id can be read.
std::optional<uint64_t> callId(std::string_view payload);

// Runs the call and returns the reply payload. A call that cannot be decoded answers
// INVALID_ARGUMENT naming what is wrong (the provider is not called).
std::string serveCall(Provider& provider, std::string_view payload);

}  // namespace ccm::plugin::isolation
