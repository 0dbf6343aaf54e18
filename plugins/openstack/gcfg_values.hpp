// Value parsers with gcfg's rules (the Go library OCCM reads cloud.conf with): booleans,
// integers (decimal, 0x hex, 0 octal) and Go durations ("1m30s"; a bare number other than 0
// is refused, as upstream refuses it).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ccm::openstack {

// true/yes/on/1 and false/no/off/0 in any case.
std::optional<bool> parseGcfgBool(std::string_view s);

// Decimal, 0x/0X hexadecimal or 0-prefixed octal, optionally signed.
std::optional<int64_t> parseGcfgInt(std::string_view s);

// Go's time.ParseDuration: [-+]?(<number>[.<fraction>]<unit>)+ with units ns us µs ms s m h,
// or the bare "0".
std::optional<std::chrono::nanoseconds> parseGoDuration(std::string_view s);

}  // namespace ccm::openstack
