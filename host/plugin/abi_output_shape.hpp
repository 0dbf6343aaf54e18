// The shape of what a plugin emits, checked on the C structs before anything is read from
// them: every pointer/length pair must be consistent ({data=NULL, size=12} and
// {addresses=NULL, address_count=3} are refused, never read as empty), an array of pointers
// may not hold NULL, and every count is bounded before its array is read, so a wild count
// cannot make the host read far past the plugin's memory. The content (UTF-8, address
// types, IPs, CIDRs, domains) is checked afterwards, on the copies (output_validation.hpp).
//
// Each returns an empty string when the shape is sound, else one sentence naming the field
// as the C header spells it ("addresses is NULL with address_count 3").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ccm/provider_abi.h"

namespace ccm::plugin {

// The most items of one array the host reads from a plugin's output.
inline constexpr size_t kMaxOutputAddresses = 256;
inline constexpr size_t kMaxOutputLabels = 256;
inline constexpr size_t kMaxOutputIngress = 64;
inline constexpr size_t kMaxOutputPorts = 1024;
inline constexpr size_t kMaxOutputAnnotations = 256;

std::string checkStrShape(std::string_view field, ccm_str s);
std::string checkMetadataShape(const ccm_instance_metadata* metadata);
// annotations: whether to read the 1.1 annotation fields (only from a plugin that chose minor
// 1 or later: an older one may leave them unset).
std::string checkLbStatusShape(const ccm_lb_status* status, bool annotations = true);
std::string checkRouteShape(const ccm_route* route);

}  // namespace ccm::plugin
