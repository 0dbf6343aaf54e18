// YAML to JSON conversion.
#include "kubesim/yaml_json.hpp"

#include <cerrno>
#include <cstdlib>

namespace ccm::kubesim {
namespace {

void scalarToJson(const YAML::Node& node, JsonValue& out, JsonAllocator& alloc) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "?") {  // plain scalar: infer the type
    if (s == "true" || s == "True" || s == "TRUE") {
      out.SetBool(true);
      return;
    }
    if (s == "false" || s == "False" || s == "FALSE") {
      out.SetBool(false);
      return;
    }
    if (s.empty() || s == "null" || s == "Null" || s == "NULL" || s == "~") {
      out.SetNull();
      return;
    }
    char* end = nullptr;
    errno = 0;
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (end != nullptr && *end == '\0' && errno == 0 &&
        (std::isdigit(s[0]) || s[0] == '-' || s[0] == '+')) {
      out.SetInt64(i);
      return;
    }
    errno = 0;
    double d = std::strtod(s.c_str(), &end);
    if (end != nullptr && *end == '\0' && errno == 0 &&
        (std::isdigit(s[0]) || s[0] == '-' || s[0] == '+' || s[0] == '.') &&
        s.find_first_of("0123456789") != std::string::npos) {
      out.SetDouble(d);
      return;
    }
  }
  out.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}

}  // namespace

void yamlToJson(const YAML::Node& node, JsonValue& out, JsonAllocator& alloc) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      out.SetNull();
      return;
    case YAML::NodeType::Scalar:
      scalarToJson(node, out, alloc);
      return;
    case YAML::NodeType::Sequence:
      out.SetArray();
      for (const auto& item : node) {
        JsonValue v;
        yamlToJson(item, v, alloc);
        out.PushBack(v, alloc);
      }
      return;
    case YAML::NodeType::Map:
      out.SetObject();
      for (const auto& kv : node) {
        JsonValue v;
        yamlToJson(kv.second, v, alloc);
        const std::string& k = kv.first.Scalar();
        out.AddMember(JsonValue(k.data(), static_cast<rapidjson::SizeType>(k.size()), alloc), v,
                      alloc);
      }
      return;
  }
}

bool parseYamlDocument(std::string_view text, JsonDocument& doc, std::string* error) {
  try {
    YAML::Node node = YAML::Load(std::string(text));
    yamlToJson(node, doc, doc.GetAllocator());
    return true;
  } catch (const YAML::Exception& e) {
    *error = e.what();
    return false;
  }
}

StatusOr<std::vector<std::string>> yamlDocumentsToJson(std::string_view text) {
  std::vector<std::string> out;
  try {
    for (const auto& node : YAML::LoadAll(std::string(text))) {
      if (!node.IsDefined() || node.IsNull()) {
        continue;
      }
      JsonDocument doc;
      yamlToJson(node, doc, doc.GetAllocator());
      out.push_back(toJson(doc));
    }
  } catch (const YAML::Exception& e) {
    return Status(Code::InvalidArgument, e.what());
  }
  return out;
}

}  // namespace ccm::kubesim
