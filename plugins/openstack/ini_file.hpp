// IniFile: a parser for the INI dialect of cloud.conf (git-config style, as Go's gcfg reads it):
// case-insensitive section and key names, [Section "subsection"] headers, double-quoted values
// with \" \\ \n \t \b escapes, '#' and ';' comments, backslash line continuation, and keys
// written without '=' (which gcfg reads as boolean true).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ccm/types.hpp"

namespace ccm::openstack {

struct IniEntry {
  std::string key;         // lowercased
  std::string value;       // unquoted, unescaped
  bool has_value = false;  // false when the key was written without '='
  int line = 0;
};

struct IniSection {
  std::string name;        // lowercased
  std::string subsection;  // as written (case-sensitive), empty when absent
  bool has_subsection = false;
  int line = 0;
  std::vector<IniEntry> entries;
};

class IniFile {
 public:
  // Parses text; a syntax error is INVALID_ARGUMENT naming the line.
  static sdk::Result<IniFile> parse(std::string_view text);

  const std::vector<IniSection>& sections() const { return sections_; }

 private:
  std::vector<IniSection> sections_;
};

}  // namespace ccm::openstack
