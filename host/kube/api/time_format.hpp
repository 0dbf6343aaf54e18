// RFC 3339 timestamps as Kubernetes writes them: metav1.Time ("2026-07-24T10:00:00Z", second
// precision) and metav1.MicroTime ("2026-07-24T10:00:00.123456Z").
//
// THREAD: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ccm::kube {

// Parses an RFC 3339 timestamp (any fraction, "Z" or a numeric offset) into Unix seconds
// (the fraction is dropped). nullopt when malformed.
std::optional<int64_t> parseRfc3339(std::string_view text);

// Parses an RFC 3339 timestamp into a system_clock time point, keeping microseconds.
std::optional<std::chrono::system_clock::time_point> parseRfc3339Time(std::string_view text);

// "2026-07-24T10:00:00Z"
std::string formatRfc3339(int64_t unix_seconds);
std::string formatRfc3339(std::chrono::system_clock::time_point t);

// "2026-07-24T10:00:00.123456Z"
std::string formatMicroTime(std::chrono::system_clock::time_point t);

}  // namespace ccm::kube
