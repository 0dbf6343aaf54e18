// Label selector parsing/matching and the apimachinery name/label syntax checks.
#include "kubesim/label_selector.hpp"

#include <algorithm>
#include <cstdlib>

namespace ccm::kubesim {
namespace {

bool isAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool isLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

std::string regexError(std::string msg, std::string_view fmt,
                       std::initializer_list<std::string_view> examples) {
  if (examples.size() == 0) {
    return msg + " (regex used for validation is '" + std::string(fmt) + "')";
  }
  msg += " (e.g. ";
  size_t i = 0;
  for (auto e : examples) {
    if (i++ > 0) {
      msg += " or ";
    }
    msg += "'" + std::string(e) + "', ";
  }
  msg += "regex used for validation is '" + std::string(fmt) + "')";
  return msg;
}

constexpr std::string_view kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kQualifiedNameErr =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErr =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kDns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1123LabelErr =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";
constexpr std::string_view kDns1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDns1123SubdomainErr =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kDns1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1035LabelErr =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character";

bool matchesQualifiedName(std::string_view s) {
  if (s.empty() || !isAlnum(s.front()) || !isAlnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return isAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool matchesDns1123Label(std::string_view s) {
  if (s.empty() || !isLowerAlnum(s.front()) || !isLowerAlnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) { return isLowerAlnum(c) || c == '-'; });
}

bool matchesDns1123Subdomain(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view part = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (!matchesDns1123Label(part)) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

// --- selector lexer ---
enum class Tok { End, Ident, LParen, RParen, Comma, Not, Eq, DoubleEq, NotEq, Gt, Lt, In, NotIn };

struct Token {
  Tok type;
  std::string text;
};

bool isSpecial(char c) {
  return c == '!' || c == '=' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>';
}
bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (isSpace(c)) {
      ++i;
      continue;
    }
    switch (c) {
      case '(':
        out.push_back({Tok::LParen, "("});
        ++i;
        continue;
      case ')':
        out.push_back({Tok::RParen, ")"});
        ++i;
        continue;
      case ',':
        out.push_back({Tok::Comma, ","});
        ++i;
        continue;
      case '>':
        out.push_back({Tok::Gt, ">"});
        ++i;
        continue;
      case '<':
        out.push_back({Tok::Lt, "<"});
        ++i;
        continue;
      case '!':
        if (i + 1 < s.size() && s[i + 1] == '=') {
          out.push_back({Tok::NotEq, "!="});
          i += 2;
        } else {
          out.push_back({Tok::Not, "!"});
          ++i;
        }
        continue;
      case '=':
        if (i + 1 < s.size() && s[i + 1] == '=') {
          out.push_back({Tok::DoubleEq, "=="});
          i += 2;
        } else {
          out.push_back({Tok::Eq, "="});
          ++i;
        }
        continue;
      default:
        break;
    }
    size_t j = i;
    while (j < s.size() && !isSpace(s[j]) && !isSpecial(s[j])) {
      ++j;
    }
    std::string word(s.substr(i, j - i));
    Tok t = word == "in" ? Tok::In : word == "notin" ? Tok::NotIn : Tok::Ident;
    out.push_back({t, word});
    i = j;
  }
  out.push_back({Tok::End, ""});
  return out;
}

std::string tokText(const Token& t) {
  return t.type == Tok::End ? "EOF" : t.text;
}

}  // namespace

const std::string* findLabel(const Labels& labels, std::string_view key) {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const auto& p, std::string_view k) { return p.first < k; });
  if (it != labels.end() && it->first == key) {
    return &it->second;
  }
  return nullptr;
}

std::optional<LabelSelector> LabelSelector::parse(std::string_view text, std::string* error) {
  LabelSelector sel;
  auto toks = lex(text);
  size_t p = 0;
  auto fail = [&](const std::string& msg) -> std::optional<LabelSelector> {
    *error = "unable to parse requirement: " + msg;
    return std::nullopt;
  };
  if (toks[0].type == Tok::End) {
    return sel;
  }
  while (true) {
    Requirement req;
    bool negated = false;
    if (toks[p].type == Tok::Not) {
      negated = true;
      ++p;
    }
    if (toks[p].type != Tok::Ident) {
      return fail("found '" + tokText(toks[p]) + "', expected: identifier");
    }
    req.key = toks[p].text;
    if (auto errs = validateQualifiedName(req.key); !errs.empty()) {
      return fail("<nil>: Invalid value: \"" + req.key + "\": " + errs[0]);
    }
    ++p;
    if (negated) {
      req.op = Op::DoesNotExist;
    } else {
      switch (toks[p].type) {
        case Tok::End:
        case Tok::Comma:
          req.op = Op::Exists;
          break;
        case Tok::Eq:
        case Tok::DoubleEq:
        case Tok::NotEq: {
          req.op = toks[p].type == Tok::NotEq ? Op::NotEquals : Op::Equals;
          ++p;
          if (toks[p].type == Tok::Ident) {
            req.values.push_back(toks[p].text);
            ++p;
          } else if (toks[p].type == Tok::End || toks[p].type == Tok::Comma) {
            req.values.emplace_back();
          } else {
            return fail("found '" + tokText(toks[p]) + "', expected: identifier");
          }
          break;
        }
        case Tok::In:
        case Tok::NotIn: {
          req.op = toks[p].type == Tok::In ? Op::In : Op::NotIn;
          ++p;
          if (toks[p].type != Tok::LParen) {
            return fail("found '" + tokText(toks[p]) + "', expected: '('");
          }
          ++p;
          while (true) {
            if (toks[p].type == Tok::Ident) {
              req.values.push_back(toks[p].text);
              ++p;
            } else if (toks[p].type == Tok::Comma || toks[p].type == Tok::RParen) {
              req.values.emplace_back();  // empty value in a set
            } else {
              return fail("found '" + tokText(toks[p]) + "', expected: ',', ')' or identifier");
            }
            if (toks[p].type == Tok::Comma) {
              ++p;
              continue;
            }
            if (toks[p].type == Tok::RParen) {
              ++p;
              break;
            }
            return fail("found '" + tokText(toks[p]) + "', expected: ',' or ')'");
          }
          if (req.values.size() == 1 && req.values[0].empty() && req.op == Op::In) {
            // "k in ()" is accepted by the server and matches k="".
          }
          break;
        }
        case Tok::Gt:
        case Tok::Lt: {
          req.op = toks[p].type == Tok::Gt ? Op::GreaterThan : Op::LessThan;
          ++p;
          if (toks[p].type != Tok::Ident) {
            return fail("found '" + tokText(toks[p]) + "', expected: identifier");
          }
          char* end = nullptr;
          std::strtoll(toks[p].text.c_str(), &end, 10);
          if (end == nullptr || *end != '\0') {
            return fail("for 'Gt', 'Lt' operators, the value must be an integer");
          }
          req.values.push_back(toks[p].text);
          ++p;
          break;
        }
        default:
          return fail("found '" + tokText(toks[p]) + "', expected: in, notin, =, ==, !=, gt, lt");
      }
    }
    if (req.op != Op::GreaterThan && req.op != Op::LessThan) {
      for (const auto& v : req.values) {
        if (auto errs = validateLabelValue(v); !errs.empty()) {
          return fail("values[0][" + req.key + "]: Invalid value: \"" + v + "\": " + errs[0]);
        }
      }
    }
    sel.requirements_.push_back(std::move(req));
    if (toks[p].type == Tok::End) {
      break;
    }
    if (toks[p].type != Tok::Comma) {
      return fail("found '" + tokText(toks[p]) + "', expected: ',' or 'end of string'");
    }
    ++p;
  }
  std::sort(sel.requirements_.begin(), sel.requirements_.end(),
            [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
  return sel;
}

bool LabelSelector::matches(const Labels& labels) const {
  for (const auto& r : requirements_) {
    const std::string* v = findLabel(labels, r.key);
    switch (r.op) {
      case Op::Equals:
        if (v == nullptr || *v != r.values[0]) {
          return false;
        }
        break;
      case Op::NotEquals:
        if (v != nullptr && *v == r.values[0]) {
          return false;
        }
        break;
      case Op::In:
        if (v == nullptr || std::find(r.values.begin(), r.values.end(), *v) == r.values.end()) {
          return false;
        }
        break;
      case Op::NotIn:
        if (v != nullptr && std::find(r.values.begin(), r.values.end(), *v) != r.values.end()) {
          return false;
        }
        break;
      case Op::Exists:
        if (v == nullptr) {
          return false;
        }
        break;
      case Op::DoesNotExist:
        if (v != nullptr) {
          return false;
        }
        break;
      case Op::GreaterThan:
      case Op::LessThan: {
        if (v == nullptr) {
          return false;
        }
        char* end = nullptr;
        long long have = std::strtoll(v->c_str(), &end, 10);
        if (end == v->c_str() || *end != '\0') {
          return false;
        }
        long long want = std::strtoll(r.values[0].c_str(), nullptr, 10);
        if (r.op == Op::GreaterThan ? !(have > want) : !(have < want)) {
          return false;
        }
        break;
      }
    }
  }
  return true;
}

std::vector<std::string> validateQualifiedName(std::string_view value) {
  std::vector<std::string> errs;
  std::string_view name = value;
  size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back("a qualified name " +
                     regexError(std::string(kQualifiedNameErr), kQualifiedNameFmt,
                                {"MyName", "my.name", "123-abc"}) +
                     " with an optional DNS subdomain prefix and '/' (e.g. "
                     "'example.com/MyName')");
      return errs;
    }
    std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (auto& m : validateDns1123Subdomain(prefix)) {
        errs.push_back("prefix part " + m);
      }
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errs.push_back("name part must be no more than 63 characters");
  }
  if (!matchesQualifiedName(name)) {
    errs.push_back("name part " + regexError(std::string(kQualifiedNameErr), kQualifiedNameFmt,
                                             {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> validateLabelValue(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > 63) {
    errs.push_back("must be no more than 63 characters");
  }
  if (!value.empty() && !matchesQualifiedName(value)) {
    errs.push_back(
        regexError(std::string(kLabelValueErr), kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

std::vector<std::string> validateDns1123Subdomain(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > 253) {
    errs.push_back("must be no more than 253 characters");
  }
  if (!matchesDns1123Subdomain(value)) {
    errs.push_back(
        regexError(std::string(kDns1123SubdomainErr), kDns1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

std::vector<std::string> validateDns1123Label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > 63) {
    errs.push_back("must be no more than 63 characters");
  }
  if (!matchesDns1123Label(value)) {
    errs.push_back(
        regexError(std::string(kDns1123LabelErr), kDns1123LabelFmt, {"my-name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> validateDns1035Label(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > 63) {
    errs.push_back("must be no more than 63 characters");
  }
  bool ok =
      !value.empty() && value.front() >= 'a' && value.front() <= 'z' &&
      isLowerAlnum(value.back()) &&
      std::all_of(value.begin(), value.end(), [](char c) { return isLowerAlnum(c) || c == '-'; });
  if (!ok) {
    errs.push_back(
        regexError(std::string(kDns1035LabelErr), kDns1035LabelFmt, {"my-name", "abc-123"}));
  }
  return errs;
}

}  // namespace ccm::kubesim
