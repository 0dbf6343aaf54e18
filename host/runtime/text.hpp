// Small text helpers the host and kubesim both read requests with: trimming ASCII blanks and
// white space, and URL percent-decoding.
//
// THREAD: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ccm::text {

// Space or horizontal tab: what HTTP calls optional white space and what list flags allow
// around their commas.
constexpr bool isBlank(char c) { return c == ' ' || c == '\t'; }

// Any ASCII white space (space, tab, CR, LF, vertical tab, form feed), as Go's
// strings.TrimSpace sees it in ASCII text.
constexpr bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

template <typename Pred>
constexpr std::string_view trimIf(std::string_view s, Pred pred) {
  while (!s.empty() && pred(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && pred(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

// s without leading and trailing blanks (space, tab).
constexpr std::string_view trimBlanks(std::string_view s) { return trimIf(s, isBlank); }

// s without leading and trailing ASCII white space.
constexpr std::string_view trimSpace(std::string_view s) { return trimIf(s, isSpace); }

// True for a lowercase RFC 1123 subdomain of at most 253 characters: dot-separated labels of
// [a-z0-9-], each starting and ending alphanumeric (the API server's DNS-1123 subdomain rule,
// used for names, label-key prefixes and load-balancer hostnames).
bool isDns1123Subdomain(std::string_view s);

// True for a qualified name's name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63
// characters (label values, and label keys after their prefix).
bool isQualifiedNamePart(std::string_view s);

// True for the API server's qualified name (label keys, spec.loadBalancerClass): a name part,
// optionally after a DNS-1123 subdomain prefix and '/'.
bool isQualifiedName(std::string_view s);

// Decodes %XX escapes (either case); '+' becomes a space when plus_is_space (query strings).
// nullopt on a truncated or non-hex escape. A decoded NUL is kept: callers that cannot hold
// one refuse it themselves.
std::optional<std::string> percentDecode(std::string_view s, bool plus_is_space);

}  // namespace ccm::text
