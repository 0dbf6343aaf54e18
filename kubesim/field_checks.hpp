// Field checks shared by kubesim's validators: string members, Go's %#v of a []string, and
// adding one Invalid error per message of an apimachinery validation function.
//
// THREAD: stateless.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kubesim/api_error.hpp"
#include "kubesim/json_util.hpp"

namespace ccm::kubesim::fieldcheck {

// The string member (empty when missing or not a string), as a std::string.
std::string str(const JsonValue& obj, std::string_view name);
// Go's %#v of a []string: []string{"a", "b"}.
std::string goStringSlice(const std::vector<std::string>& v);
// The strings of a JSON array ("" for non-strings); empty when arr is null or not an array.
std::vector<std::string> stringArray(const JsonValue* arr);
// One Invalid error on field per message.
void addAll(FieldErrors& errs, const std::string& field, std::string_view value,
            const std::vector<std::string>& msgs);

}  // namespace ccm::kubesim::fieldcheck
