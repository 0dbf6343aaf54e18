// Validation of what a provider hands back through the ABI, on the copies (after the shape
// checks of abi_output_shape.hpp). A provider is third-party code: its output is checked
// before any controller sees it, so a malformed answer becomes a clear INTERNAL error for that
// call instead of a corrupted Node or Service. The rules are the SDK's
// (ccm/output_checks.hpp), shared with the fake host; this header brings them into
// ccm::plugin for the host.
#pragma once

#include "ccm/output_checks.hpp"

namespace ccm::plugin {

using sdk::isIpAddress;
using sdk::validateLbAnnotations;
using sdk::validateLbStatus;
using sdk::validateMetadata;
using sdk::validateRoute;
using sdk::validateText;

}  // namespace ccm::plugin
