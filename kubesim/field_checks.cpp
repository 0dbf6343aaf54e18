// Field checks shared by kubesim's validators.
#include "kubesim/field_checks.hpp"

namespace ccm::kubesim::fieldcheck {

std::string str(const JsonValue& obj, std::string_view name) {
  return std::string(stringMember(obj, name));
}

std::string goStringSlice(const std::vector<std::string>& v) {
  std::string out = "[]string{";
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i ? ", " : "") + goQuote(v[i]);
  }
  return out + "}";
}

std::vector<std::string> stringArray(const JsonValue* arr) {
  std::vector<std::string> out;
  if (arr != nullptr && arr->IsArray()) {
    for (const auto& e : arr->GetArray()) {
      out.emplace_back(e.IsString() ? std::string(e.GetString(), e.GetStringLength()) : "");
    }
  }
  return out;
}

void addAll(FieldErrors& errs, const std::string& field, std::string_view value,
            const std::vector<std::string>& msgs) {
  for (const auto& m : msgs) {
    errs.push_back(FieldError::invalidString(field, value, m));
  }
}


}  // namespace ccm::kubesim::fieldcheck
