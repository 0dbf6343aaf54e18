// The cloud.conf INI parser (gcfg dialect).
#include "plugins/openstack/ini_file.hpp"

#include <cctype>

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

sdk::Status syntaxError(int line, const std::string& what) {
  return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "cloud config line " + std::to_string(line) + ": " + what);
}

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// Reads a value from s (after '='): quoted parts, escapes, comments, trailing-space trimming.
sdk::Result<std::string> parseValue(std::string_view s, int line) {
  std::string out;
  bool quoted = false;
  size_t committed = 0;  // length of out that must survive trailing-space trimming
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) {
    ++i;
  }
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      quoted = !quoted;
      committed = out.size();
      continue;
    }
    if (!quoted && (c == '#' || c == ';')) {
      break;
    }
    if (c == '\\') {
      if (i + 1 >= s.size()) {
        return syntaxError(line, "value ends with a lone backslash");
      }
      char n = s[++i];
      switch (n) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'b':
          if (!out.empty()) {
            out.pop_back();
          }
          break;
        default:
          return syntaxError(line, std::string("unknown escape sequence \\") + n);
      }
      committed = out.size();
      continue;
    }
    out.push_back(c);
    if (quoted || (c != ' ' && c != '\t')) {
      committed = out.size();
    }
  }
  if (quoted) {
    return syntaxError(line, "unterminated quoted value");
  }
  out.resize(committed);
  return out;
}

}  // namespace

sdk::Result<IniFile> IniFile::parse(std::string_view text) {
  IniFile file;
  // Join continuation lines first, remembering where each logical line started.
  std::vector<std::pair<int, std::string>> lines;
  {
    std::string current;
    int start_line = 1;
    int line_no = 0;
    size_t pos = 0;
    bool continuing = false;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view raw =
          text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      ++line_no;
      if (!raw.empty() && raw.back() == '\r') {
        raw.remove_suffix(1);
      }
      if (!continuing) {
        start_line = line_no;
      }
      // A trailing backslash (not itself escaped) continues the logical line.
      size_t backslashes = 0;
      while (backslashes < raw.size() && raw[raw.size() - 1 - backslashes] == '\\') {
        ++backslashes;
      }
      if (backslashes % 2 == 1) {
        current.append(raw.substr(0, raw.size() - 1));
        continuing = true;
      } else {
        current.append(raw);
        lines.emplace_back(start_line, std::move(current));
        current.clear();
        continuing = false;
      }
      if (nl == std::string_view::npos) {
        break;
      }
      pos = nl + 1;
    }
    if (continuing) {
      lines.emplace_back(start_line, std::move(current));
    }
  }

  IniSection* section = nullptr;
  for (auto& [line, content] : lines) {
    std::string_view s = trim(content);
    if (s.empty() || s.front() == '#' || s.front() == ';') {
      continue;
    }
    if (s.front() == '[') {
      size_t i = 1;
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) {
        ++i;
      }
      size_t name_start = i;
      while (i < s.size() && isNameChar(s[i])) {
        ++i;
      }
      if (i == name_start) {
        return syntaxError(line, "missing section name");
      }
      IniSection sec;
      sec.name = toLower(s.substr(name_start, i - name_start));
      sec.line = line;
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) {
        ++i;
      }
      if (i < s.size() && s[i] == '"') {
        ++i;
        std::string sub;
        bool closed = false;
        for (; i < s.size(); ++i) {
          if (s[i] == '\\' && i + 1 < s.size()) {
            sub.push_back(s[++i]);
          } else if (s[i] == '"') {
            closed = true;
            ++i;
            break;
          } else {
            sub.push_back(s[i]);
          }
        }
        if (!closed) {
          return syntaxError(line, "unterminated subsection name");
        }
        sec.subsection = std::move(sub);
        sec.has_subsection = true;
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) {
          ++i;
        }
      }
      if (i >= s.size() || s[i] != ']') {
        return syntaxError(line, "malformed section header");
      }
      ++i;
      std::string_view rest = trim(s.substr(i));
      if (!rest.empty() && rest.front() != '#' && rest.front() != ';') {
        return syntaxError(line, "unexpected text after section header");
      }
      file.sections_.push_back(std::move(sec));
      section = &file.sections_.back();
      continue;
    }
    if (section == nullptr) {
      return syntaxError(line, "key outside of any [section]");
    }
    size_t i = 0;
    if (!std::isalpha(static_cast<unsigned char>(s[0]))) {
      return syntaxError(line, "invalid key name");
    }
    while (i < s.size() && isNameChar(s[i])) {
      ++i;
    }
    IniEntry entry;
    entry.key = toLower(s.substr(0, i));
    entry.line = line;
    std::string_view rest = trim(s.substr(i));
    if (rest.empty() || rest.front() == '#' || rest.front() == ';') {
      entry.has_value = false;
    } else if (rest.front() == '=') {
      auto value = parseValue(rest.substr(1), line);
      if (!value.ok()) {
        return value.status();
      }
      entry.value = std::move(value).value();
      entry.has_value = true;
    } else {
      return syntaxError(line, "expected '=' after key \"" + entry.key + "\"");
    }
    section->entries.push_back(std::move(entry));
  }
  return file;
}

}  // namespace ccm::openstack
