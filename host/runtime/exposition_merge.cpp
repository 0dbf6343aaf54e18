// mergeExpositions: groups the lines of several exposition texts by metric family.
#include "host/runtime/exposition_merge.hpp"

#include <string_view>
#include <unordered_map>

namespace ccm::metrics {
namespace {

// The family a "# HELP name ..." or "# TYPE name ..." line describes; empty for other lines.
std::string_view describedFamily(std::string_view line) {
  for (std::string_view prefix : {"# HELP ", "# TYPE "}) {
    if (line.substr(0, prefix.size()) == prefix) {
      std::string_view rest = line.substr(prefix.size());
      return rest.substr(0, rest.find(' '));
    }
  }
  return {};
}

struct MergedFamily {
  size_t first_text = 0;  // the text whose HELP/TYPE lines are kept
  std::string header;
  std::string samples;
};

}  // namespace

std::string mergeExpositions(const std::vector<std::string>& texts) {
  std::string leading;  // lines before any family's description
  std::vector<std::string> order;
  std::unordered_map<std::string, MergedFamily> families;
  for (size_t t = 0; t < texts.size(); ++t) {
    std::string_view text = texts[t];
    MergedFamily* current = nullptr;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      std::string_view line = text.substr(pos, end == std::string_view::npos ? end : end - pos);
      pos = end == std::string_view::npos ? text.size() : end + 1;
      if (line.empty()) {
        continue;
      }
      std::string_view family = describedFamily(line);
      if (!family.empty()) {
        auto [it, created] = families.try_emplace(std::string(family));
        if (created) {
          it->second.first_text = t;
          order.push_back(it->first);
        }
        current = &it->second;
        if (current->first_text == t) {
          current->header.append(line).push_back('\n');
        }
        continue;
      }
      std::string& into = current != nullptr ? current->samples : leading;
      into.append(line).push_back('\n');
    }
  }
  std::string out = std::move(leading);
  for (const auto& name : order) {
    const MergedFamily& f = families.at(name);
    out += f.header;
    out += f.samples;
  }
  return out;
}

}  // namespace ccm::metrics
