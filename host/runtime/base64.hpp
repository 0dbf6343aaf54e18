// Base64 (RFC 4648) for the host and kubesim: the standard alphabet with padding (kubeconfig
// *-data fields, Secret data, HTTP basic authentication) and the URL-safe alphabet without
// padding (JWTs, list continue tokens).
//
// THREAD: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ccm {

// Standard alphabet ('+', '/'), padded with '='.
std::string base64Encode(std::string_view data);

// URL-safe alphabet ('-', '_'), without padding.
std::string base64UrlEncode(std::string_view data);

// Decodes either alphabet, padded or not. White space (space, tab, CR, LF) is skipped.
// nullopt on any other character, on data after padding and on a dangling single character.
std::optional<std::string> base64Decode(std::string_view text);

// Decodes as Go's encoding/json reads a []byte field (what kube-apiserver accepts in a
// Secret's data): the standard alphabet only, '=' padding to a multiple of four required,
// CR and LF skipped, any other white space refused.
std::optional<std::string> base64DecodeStrict(std::string_view text);

// Decodes the unpadded URL-safe form as Go's base64.RawURLEncoding does (JWT segments, list
// continue tokens): '-' and '_' only, no '=', no '+' or '/', CR and LF skipped, no dangling
// single character. On failure, *bad_offset (when given) is the input byte Go reports.
std::optional<std::string> base64UrlDecodeStrict(std::string_view text,
                                                 size_t* bad_offset = nullptr);

}  // namespace ccm
