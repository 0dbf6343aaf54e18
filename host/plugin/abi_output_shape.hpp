// The shape of what a plugin emits, checked on the C structs before anything is read from
// them. The checks themselves are the SDK's (ccm/output_checks.hpp), shared with the fake host
// so that both refuse the same outputs with the same message; this header brings them into
// ccm::plugin for the host's call paths.
#pragma once

#include "ccm/output_checks.hpp"

namespace ccm::plugin {

using sdk::kMaxOutputAddresses;
using sdk::kMaxOutputAnnotations;
using sdk::kMaxOutputIngress;
using sdk::kMaxOutputLabels;
using sdk::kMaxOutputPorts;

using sdk::checkLbStatusShape;
using sdk::checkMetadataShape;
using sdk::checkRouteShape;
using sdk::checkStrShape;

}  // namespace ccm::plugin
