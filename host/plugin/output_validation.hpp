// Validation of what a provider hands back through the ABI. A provider is third-party code:
// its output is checked before any controller sees it, so a malformed answer becomes a clear
// INTERNAL error for that call instead of a corrupted Node or Service.
#pragma once

#include <string>
#include <string_view>

#include "ccm/types.hpp"

namespace ccm::plugin {

// Each returns an empty string when the value is acceptable, else what is wrong
// ("addresses[1].type \"Bogus\" is not one of ...").
std::string validateText(std::string_view field, std::string_view value, size_t max_bytes);
// provider_id_prefix: the plugin's declared prefix (ABI 1.1); a non-empty providerID must
// start with it. Empty: not declared.
std::string validateMetadata(const sdk::InstanceMetadata& m,
                             std::string_view provider_id_prefix = {});
std::string validateLbStatus(const sdk::LoadBalancerStatus& s);
// The annotations of a status (ABI 1.1) against the plugin's declared annotation domain
// (empty: none may be written); the message names the key.
std::string validateLbAnnotations(const sdk::LoadBalancerStatus& s,
                                  std::string_view annotation_domain);
std::string validateRoute(const sdk::Route& r);

// True for a syntactically valid IPv4 or IPv6 address.
bool isIpAddress(std::string_view s);

}  // namespace ccm::plugin
