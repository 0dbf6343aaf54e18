// Base64 (standard, padded) and base64url (no padding) encoding/decoding, as used by
// kubeconfig *-data fields, continue tokens and JWTs.
//
// THREAD: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ccm::kubesim {

std::string base64Encode(std::string_view data);
std::string base64UrlEncode(std::string_view data);
// Accepts both alphabets, with or without padding; nullopt on invalid input.
std::optional<std::string> base64Decode(std::string_view text);

}  // namespace ccm::kubesim
