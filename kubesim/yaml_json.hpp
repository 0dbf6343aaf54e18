// YAML to JSON: converting yaml-cpp nodes into RapidJSON values with YAML 1.2 core-schema
// scalar typing for plain scalars (true/false, null/~, integers, floats; quoted scalars stay
// strings), and loading multi-document YAML files (manifests).
//
// THREAD: pure functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "host/runtime/status.hpp"
#include "kubesim/json_util.hpp"

namespace ccm::kubesim {

void yamlToJson(const YAML::Node& node, JsonValue& out, JsonAllocator& alloc);
// Parses one YAML (or JSON) document into doc; false with *error on bad input.
bool parseYamlDocument(std::string_view text, JsonDocument& doc, std::string* error);
// Every non-empty document of a multi-document YAML text, as compact JSON strings.
StatusOr<std::vector<std::string>> yamlDocumentsToJson(std::string_view text);

}  // namespace ccm::kubesim
