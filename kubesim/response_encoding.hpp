// Response compression as the API server does it (APIResponseCompression): a non-streamed
// answer larger than 128 KiB goes out gzip-compressed (level 1, `Content-Encoding: gzip`,
// `Vary: Accept-Encoding`) when the request's Accept-Encoding lists gzip. Smaller answers and
// watch streams are never compressed.
//
// THREAD: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "kubesim/http_types.hpp"

namespace ccm::kubesim {

inline constexpr size_t kGzipThresholdBytes = size_t{128} * 1024;

// Accept-Encoding lists gzip (with a q-value other than 0).
bool acceptsGzip(std::string_view accept_encoding);
// gzip member of data (level 1); nullopt if zlib fails.
std::optional<std::string> gzipCompress(std::string_view data);
// Compresses response in place when the rules above say so; true if it did.
bool compressResponse(HttpResponse& response, std::string_view accept_encoding);

}  // namespace ccm::kubesim
