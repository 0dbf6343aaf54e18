// JSON → YAML emitter.
#include "kubesim/json_yaml.hpp"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

namespace ccm::kubesim {
namespace {

using Value = rapidjson::Value;

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isLetter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// go-yaml's key order: digit runs compare by value, letters sort before other characters.
bool keyLess(std::string_view a, std::string_view b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (isDigit(a[i]) && isDigit(b[j])) {
      size_t ie = i;
      size_t je = j;
      while (ie < a.size() && isDigit(a[ie])) {
        ++ie;
      }
      while (je < b.size() && isDigit(b[je])) {
        ++je;
      }
      std::string_view na = a.substr(i, ie - i);
      std::string_view nb = b.substr(j, je - j);
      while (na.size() > 1 && na.front() == '0') {
        na.remove_prefix(1);
      }
      while (nb.size() > 1 && nb.front() == '0') {
        nb.remove_prefix(1);
      }
      if (na.size() != nb.size()) {
        return na.size() < nb.size();
      }
      if (na != nb) {
        return na < nb;
      }
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) {
      bool la = isLetter(a[i]);
      if (la != isLetter(b[j])) {
        return la;
      }
      return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    }
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

// Would a YAML 1.1 reader (go-yaml) take this plain scalar for something other than a string?
bool readsAsNonString(const std::string& s) {
  if (s.size() > 40) {
    return false;  // longer than any number, keyword or timestamp worth quoting
  }
  static const std::regex kSpecial(
      "~|null|Null|NULL|y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|"
      "ON|off|Off|OFF|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)|<<");
  static const std::regex kNumber(
      "[-+]?(0b[01_]+|0x[0-9a-fA-F_]+|0o?[0-7_]+|[0-9][0-9_]*(\\.[0-9_]*)?([eE][-+]?[0-9]+)?|"
      "\\.[0-9_]+([eE][-+]?[0-9]+)?|[1-9][0-9_]*(:[0-5]?[0-9])+(\\.[0-9_]*)?)");
  static const std::regex kTimestamp(
      "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ]+[0-9]{1,2}:[0-9]{2}:[0-9]{2}(\\.[0-9]*)?"
      "([ \\t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?)?");
  return std::regex_match(s, kSpecial) || std::regex_match(s, kNumber) ||
         std::regex_match(s, kTimestamp);
}

bool printable(const std::string& s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      return false;
    }
  }
  return true;
}

bool plainAllowed(const std::string& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.front() == '\t' ||
      s.back() == '\t') {
    return false;
  }
  static const std::string_view kIndicators = ",[]{}#&*!|>'\"%@`";
  if (kIndicators.find(s.front()) != std::string_view::npos) {
    return false;
  }
  if ((s.front() == '-' || s.front() == '?' || s.front() == ':') &&
      (s.size() == 1 || s[1] == ' ')) {
    return false;
  }
  if (s.back() == ':' || s.find(": ") != std::string::npos ||
      s.find(" #") != std::string::npos || s.find('\t') != std::string::npos) {
    return false;
  }
  return true;
}

std::string doubleQuoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02X}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string singleQuoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c;
    if (c == '\'') {
      out += '\'';
    }
  }
  return out + "'";
}

class Emitter {
 public:
  std::string out;

  // A scalar for a key or a value (not multi-line).
  static std::string scalar(const std::string& s) {
    if (s.empty() || readsAsNonString(s) || !printable(s)) {
      return doubleQuoted(s);
    }
    if (plainAllowed(s)) {
      return s;
    }
    return singleQuoted(s);
  }

  void indent(int n) { out.append(static_cast<size_t>(n), ' '); }

  // A string value after "key:" or "- " at nesting `level` (columns of its parent).
  void stringValue(const std::string& s, int level) {
    if (s.find('\n') != std::string::npos && printable(s) && s.front() != ' ') {
      out += s.back() == '\n' ? " |\n" : " |-\n";
      size_t start = 0;
      while (start < s.size()) {
        size_t nl = s.find('\n', start);
        std::string_view line(s.data() + start,
                              (nl == std::string::npos ? s.size() : nl) - start);
        if (!line.empty()) {
          indent(level + 2);
          out.append(line);
        }
        out += '\n';
        if (nl == std::string::npos) {
          break;
        }
        start = nl + 1;
      }
      return;
    }
    out += ' ';
    out += scalar(s);
    out += '\n';
  }

  static std::string number(const Value& v) {
    if (v.IsInt64()) {
      return std::to_string(v.GetInt64());
    }
    if (v.IsUint64()) {
      return std::to_string(v.GetUint64());
    }
    return fmt::format("{}", v.GetDouble());
  }

  // After "key:" (or "- " for items): the value and its newline. `level` = the key's column.
  void value(const Value& v, int level) {
    if (v.IsObject()) {
      if (v.MemberCount() == 0) {
        out += " {}\n";
        return;
      }
      out += '\n';
      mapping(v, level + 2);
    } else if (v.IsArray()) {
      if (v.Empty()) {
        out += " []\n";
        return;
      }
      out += '\n';
      sequence(v, level);
    } else if (v.IsString()) {
      stringValue(std::string(v.GetString(), v.GetStringLength()), level);
    } else if (v.IsBool()) {
      out += v.GetBool() ? " true\n" : " false\n";
    } else if (v.IsNull()) {
      out += " null\n";
    } else {
      out += ' ' + number(v) + '\n';
    }
  }

  void mapping(const Value& v, int level, bool first_inline = false) {
    std::vector<const Value::Member*> members;
    members.reserve(v.MemberCount());
    for (const auto& m : v.GetObject()) {
      members.push_back(&m);
    }
    std::stable_sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
      return keyLess(std::string_view(a->name.GetString(), a->name.GetStringLength()),
                     std::string_view(b->name.GetString(), b->name.GetStringLength()));
    });
    bool first = true;
    for (const auto* m : members) {
      if (!(first && first_inline)) {
        indent(level);
      }
      first = false;
      out += scalar(std::string(m->name.GetString(), m->name.GetStringLength()));
      out += ':';
      value(m->value, level);
    }
  }

  // Items at the same column as their key (go-yaml's style).
  void sequence(const Value& v, int level) {
    for (const auto& item : v.GetArray()) {
      indent(level);
      out += '-';
      if (item.IsObject() && item.MemberCount() > 0) {
        out += ' ';
        mapping(item, level + 2, true);
      } else if (item.IsArray() && !item.Empty()) {
        out += '\n';
        sequence(item, level + 2);
      } else {
        value(item, level);
      }
    }
  }
};

}  // namespace

std::optional<std::string> jsonToYaml(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    return std::nullopt;
  }
  Emitter e;
  if (doc.IsObject() && doc.MemberCount() > 0) {
    e.mapping(doc, 0);
  } else if (doc.IsArray() && !doc.Empty()) {
    e.sequence(doc, 0);
  } else {
    // A lone scalar or an empty collection: go-yaml writes the value on its own line.
    e.value(doc, 0);
    e.out.erase(0, 1);
  }
  return std::move(e.out);
}

}  // namespace ccm::kubesim
