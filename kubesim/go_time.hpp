// GoTime: how the API server's Go code reads the two time formats of the Kubernetes API, with
// the error text Go's time.Parse gives for a value it refuses:
//
//  - metav1.Time:      layout "2006-01-02T15:04:05Z07:00" (RFC 3339; fractional seconds in the
//                      value are tolerated although the layout has none);
//  - metav1.MicroTime: layout "2006-01-02T15:04:05.000000Z07:00": exactly six fractional
//                      digits, so "…:05Z", "…:05.123Z" and "…:05.123456789Z" are all refused.
//
// The decoder puts that text after "<Kind> in version "v1" cannot be handled as a <Kind>: " in
// the 400 answer, as the real server does.
//
// THREAD: stateless.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ccm::kubesim {

enum class GoTimeLayout { Rfc3339, Rfc3339Micro };

// The Go layout string of a layout ("2006-01-02T15:04:05Z07:00", ...).
std::string_view goTimeLayoutText(GoTimeLayout layout);

// nullopt when Go's time.Parse(layout, value) accepts value; otherwise its error text, e.g.
// `parsing time "2026-01-02T03:04:05Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse
// "Z" as ".000000"`.
std::optional<std::string> goTimeParseError(GoTimeLayout layout, std::string_view value);

}  // namespace ccm::kubesim
