// Continue tokens of paged lists, in the API server's format: base64 (URL-safe alphabet, no
// padding) of {"v":"meta.k8s.io/v1","rv":N,"start":KEY}, KEY relative to the listed prefix
// (the namespace for a namespaced list). Decoding is as strict as the API server's and fails
// with its wording ("continue key is not valid: ...").
//
// THREAD: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ccm::kubesim {

struct ContinueToken {
  int64_t rv = 0;  // -1: continue from the latest state (an inconsistent continuation)
  std::string start;  // store key to start from (absolute: namespace prefix included)
};

// ns: the listed namespace ("" for cluster-wide lists); start_key: an absolute store key.
std::string encodeContinue(int64_t rv, std::string_view ns, std::string_view start_key);

// nullopt with *error set to the API server's message (without the "invalid continue token: "
// prefix the handler adds).
std::optional<ContinueToken> decodeContinue(std::string_view token, std::string_view ns,
                                            std::string* error);

}  // namespace ccm::kubesim
