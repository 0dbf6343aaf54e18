// Small string helpers used across the OpenStack plugin (case folding, trimming, splitting,
// URL encoding, log formatting, Kubernetes label-value checks).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ccm::openstack {

std::string toLower(std::string_view s);
std::string toUpper(std::string_view s);
std::string_view trim(std::string_view s);
bool startsWith(std::string_view s, std::string_view prefix);
bool endsWith(std::string_view s, std::string_view suffix);
bool iequals(std::string_view a, std::string_view b);
// Whether the list holds s.
bool contains(const std::vector<std::string>& list, std::string_view s);

// Splits on any of the separator characters, trimming pieces and dropping empty ones.
std::vector<std::string> splitAny(std::string_view s, std::string_view separators);

// Percent-encodes everything but unreserved characters (RFC 3986), for query values and
// path segments.
std::string urlEncode(std::string_view s);

// A valid Kubernetes label value: empty, or <= 63 characters of [A-Za-z0-9._-] starting and
// ending with an alphanumeric.
bool isValidLabelValue(std::string_view s);

// OCCM's clean-up of an availability zone name for the zone label: every run of characters
// outside [-a-zA-Z0-9_.] becomes '-', leading and trailing '-', '_' and '.' are trimmed, and
// the result is cut to 63 characters.
std::string sanitizeZone(std::string_view zone);

// Cuts s to at most n bytes without splitting a UTF-8 sequence.
std::string truncateUtf8(std::string_view s, size_t n);

// 32-bit FNV-1a as 8 lowercase hex digits (stable across builds and platforms).
std::string fnv1aHex(std::string_view s);

// Quotes every regular-expression metacharacter (Go's regexp.QuoteMeta).
std::string quoteRegex(std::string_view s);

}  // namespace ccm::openstack
