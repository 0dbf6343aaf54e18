// Field selector parsing and matching.
#include "kubesim/field_selector.hpp"

namespace ccm::kubesim {
namespace {

// Splits on unescaped sep; keeps escapes in the parts.
std::vector<std::string> splitTerms(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      cur.push_back(s[i]);
      cur.push_back(s[++i]);
    } else if (s[i] == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(s[i]);
    }
  }
  out.push_back(cur);
  return out;
}

std::string unescape(std::string_view s, bool* ok) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      if (i + 1 >= s.size()) {
        *ok = false;
        return {};
      }
      char n = s[++i];
      if (n != '\\' && n != ',' && n != '=' && n != '!') {
        *ok = false;
        return {};
      }
      out.push_back(n);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Position of the first unescaped occurrence of op.
size_t findOp(std::string_view s, std::string_view op) {
  for (size_t i = 0; i + op.size() <= s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s.substr(i, op.size()) == op) {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<FieldSelector> FieldSelector::parse(std::string_view text, const ResourceType& type,
                                                  std::string* error) {
  FieldSelector sel;
  if (text.empty()) {
    return sel;
  }
  auto labels = type.allFieldLabels();
  for (const auto& raw : splitTerms(text)) {
    if (raw.empty()) {
      continue;
    }
    Term term;
    std::string_view part = raw;
    size_t pos;
    std::string_view lhs;
    std::string_view rhs;
    if ((pos = findOp(part, "!=")) != std::string_view::npos) {
      term.negate = true;
      lhs = part.substr(0, pos);
      rhs = part.substr(pos + 2);
    } else if ((pos = findOp(part, "==")) != std::string_view::npos) {
      lhs = part.substr(0, pos);
      rhs = part.substr(pos + 2);
    } else if ((pos = findOp(part, "=")) != std::string_view::npos) {
      lhs = part.substr(0, pos);
      rhs = part.substr(pos + 1);
    } else {
      *error = "invalid selector: '" + std::string(text) + "'; can't understand '" + raw + "'";
      return std::nullopt;
    }
    bool ok = true;
    term.label = unescape(lhs, &ok);
    term.value = unescape(rhs, &ok);
    if (!ok) {
      *error = "invalid selector: '" + std::string(text) + "'; can't understand '" + raw + "'";
      return std::nullopt;
    }
    bool found = false;
    for (size_t i = 0; i < labels.size(); ++i) {
      if (labels[i] == term.label) {
        if (labels[i] == "metadata.namespace" && !type.allow_namespace_field) {
          break;
        }
        term.index = i;
        found = true;
        break;
      }
    }
    if (!found) {
      *error = "field label not supported: " + term.label;
      return std::nullopt;
    }
    sel.terms_.push_back(std::move(term));
  }
  return sel;
}

bool FieldSelector::matches(const std::vector<std::string>& field_values) const {
  for (const auto& t : terms_) {
    const std::string& have = t.index < field_values.size() ? field_values[t.index] : "";
    bool eq = have == t.value;
    if (eq == t.negate) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> FieldSelector::exactName() const {
  for (const auto& t : terms_) {
    if (t.index == 0 && !t.negate) {
      return t.value;
    }
  }
  return std::nullopt;
}

}  // namespace ccm::kubesim
