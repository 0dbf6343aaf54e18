// JSON → YAML, for `Accept: application/yaml` answers. The API server renders YAML by decoding
// its JSON into generic maps and marshalling them with go-yaml, so the output looks like
// `kubectl get -o yaml`: map keys sorted (digit runs compared as numbers), two-space indent,
// sequence items at their key's indent, strings that would read back as another type (numbers,
// booleans, null, timestamps) double-quoted, other awkward strings single-quoted, multi-line
// strings as literal blocks, `{}`/`[]` for empty collections.
//
// THREAD: pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ccm::kubesim {

// nullopt when json is not valid JSON.
std::optional<std::string> jsonToYaml(std::string_view json);

}  // namespace ccm::kubesim
