// Go-flavoured views of RapidJSON values and the failure constructors (see patch_support.hpp).
#include "kubesim/patch/patch_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

namespace ccm::kubesim::patch_internal {

Failure badRequest(std::string message) {
  std::string detail = message;
  return {{400, "BadRequest", std::move(message)}, std::move(detail)};
}

Failure unprocessable(std::string detail) {
  return {{422, "Invalid", "the server rejected our request due to an error in our request"},
          std::move(detail)};
}

Failure entityTooLarge(std::string_view message) {
  std::string text = fmt::format("Request entity too large: {}", message);
  std::string detail = text;
  return {{413, "RequestEntityTooLarge", std::move(text)}, std::move(detail)};
}

Failure untypedError(std::string message) {
  std::string detail = message;
  return {{500, "", std::move(message)}, std::move(detail)};
}

Failure goPanic(std::string detail) {
  return {{500, "InternalError",
           "This request caused apiserver to panic. Look in the logs for details."},
          std::move(detail)};
}

GoType goTypeOf(const Value& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      return GoType::Nil;
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return GoType::Bool;
    case rapidjson::kObjectType:
      return GoType::Map;
    case rapidjson::kArrayType:
      return GoType::Slice;
    case rapidjson::kStringType:
      return GoType::String;
    case rapidjson::kNumberType:
      return value.IsInt64() ? GoType::Int64 : GoType::Float64;
  }
  return GoType::Nil;
}

std::string_view goTypeName(GoType type) {
  switch (type) {
    case GoType::Nil:
      return "%!s(<nil>)";
    case GoType::Bool:
      return "bool";
    case GoType::Int64:
      return "int64";
    case GoType::Float64:
      return "float64";
    case GoType::String:
      return "string";
    case GoType::Map:
      return "map[string]interface {}";
    case GoType::Slice:
      return "[]interface {}";
  }
  return "";
}

std::string_view jsonKindWord(const Value& value) {
  switch (value.GetType()) {
    case rapidjson::kObjectType:
      return "object";
    case rapidjson::kArrayType:
      return "array";
    case rapidjson::kStringType:
      return "string";
    case rapidjson::kNumberType:
      return "number";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "bool";
    case rapidjson::kNullType:
      return "null";
  }
  return "";
}

GoEquality goCompare(const Value* a, const Value* b) {
  GoType ta = a == nullptr ? GoType::Nil : goTypeOf(*a);
  GoType tb = b == nullptr ? GoType::Nil : goTypeOf(*b);
  if (ta != tb) {
    return GoEquality::NotEqual;
  }
  bool equal = false;
  switch (ta) {
    case GoType::Nil:
      equal = true;
      break;
    case GoType::Bool:
      equal = a->GetBool() == b->GetBool();
      break;
    case GoType::Int64:
      equal = a->GetInt64() == b->GetInt64();
      break;
    case GoType::Float64:
      equal = a->GetDouble() == b->GetDouble();
      break;
    case GoType::String:
      equal = stringOf(*a) == stringOf(*b);
      break;
    case GoType::Map:
    case GoType::Slice:
      return GoEquality::Uncomparable;
  }
  return equal ? GoEquality::Equal : GoEquality::NotEqual;
}

namespace {

// strconv.FormatFloat(v, 'g', -1, 64), which fmt's %v uses for float64: the shortest digits,
// in exponent form when the decimal exponent is below -4 or at least 6.
void appendGoFloat(std::string& out, double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  if (ec != std::errc()) {
    out += "NaN";
    return;
  }
  std::string_view sci(buf, static_cast<size_t>(end - buf));
  size_t e = sci.find('e');
  std::string_view mantissa = sci.substr(0, e);
  int exponent = 0;
  const char* expBegin = sci.data() + e + 1;
  if (*expBegin == '+') {
    ++expBegin;
  }
  std::from_chars(expBegin, sci.data() + sci.size(), exponent);
  if (!mantissa.empty() && mantissa[0] == '-') {
    out += '-';
    mantissa.remove_prefix(1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') {
      digits += c;
    }
  }
  if (exponent < -4 || exponent >= 6) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    out += exponent < 0 ? "e-" : "e+";
    int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude < 10) {
      out += '0';
    }
    out += std::to_string(magnitude);
    return;
  }
  if (exponent < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out += digits;
    return;
  }
  size_t integerDigits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= integerDigits) {
    out += digits;
    out.append(integerDigits - digits.size(), '0');
  } else {
    out.append(digits, 0, integerDigits);
    out += '.';
    out.append(digits, integerDigits, std::string::npos);
  }
}

}  // namespace

namespace {

// Error messages show patch values; below this depth they are elided ("...") instead of
// recursing through up to 10000 levels.
constexpr int kMaxFormatDepth = 64;

void appendGoValueAt(std::string& out, const Value& value, int depth) {
  if (depth > kMaxFormatDepth) {
    out += "...";
    return;
  }
  switch (goTypeOf(value)) {
    case GoType::Nil:
      out += "<nil>";
      return;
    case GoType::Bool:
      out += value.GetBool() ? "true" : "false";
      return;
    case GoType::Int64:
      out += std::to_string(value.GetInt64());
      return;
    case GoType::Float64:
      appendGoFloat(out, value.GetDouble());
      return;
    case GoType::String:
      out += stringOf(value);
      return;
    case GoType::Slice: {
      out += '[';
      bool first = true;
      for (const Value& element : value.GetArray()) {
        if (!first) {
          out += ' ';
        }
        first = false;
        appendGoValueAt(out, element, depth + 1);
      }
      out += ']';
      return;
    }
    case GoType::Map: {
      std::vector<const Value::Member*> members;
      members.reserve(value.MemberCount());
      for (const Value::Member& member : value.GetObject()) {
        members.push_back(&member);
      }
      std::stable_sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
        return stringOf(a->name) < stringOf(b->name);
      });
      out += "map[";
      bool first = true;
      for (const Value::Member* member : members) {
        if (!first) {
          out += ' ';
        }
        first = false;
        out += stringOf(member->name);
        out += ':';
        appendGoValueAt(out, member->value, depth + 1);
      }
      out += ']';
      return;
    }
  }
}

}  // namespace

void appendGoValue(std::string& out, const Value& value) {
  appendGoValueAt(out, value, 0);
}

std::string goValue(const Value& value) {
  std::string out;
  appendGoValue(out, value);
  return out;
}

std::string goValueS(const Value& value) {
  GoType type = goTypeOf(value);
  if (type == GoType::String || type == GoType::Map || type == GoType::Slice) {
    return goValue(value);
  }
  if (type == GoType::Nil) {
    return "%!s(<nil>)";
  }
  return fmt::format("%!s({}={})", goTypeName(type), goValue(value));
}

std::string badArgType(std::string_view expected, const Value* actual) {
  GoType type = actual == nullptr ? GoType::Nil : goTypeOf(*actual);
  return fmt::format("expected a {}, but received a {}", expected, goTypeName(type));
}

}  // namespace ccm::kubesim::patch_internal
