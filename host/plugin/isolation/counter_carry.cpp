// CounterCarry implementation: a line-by-line pass over the child's exposition text.
#include "host/plugin/isolation/counter_carry.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace ccm::plugin::isolation {
namespace {

// The family a "# TYPE <name> <kind>" line declares, when it is cumulative (counter or
// histogram); empty otherwise.
std::string cumulativeFamily(std::string_view line) {
  constexpr std::string_view kPrefix = "# TYPE ";
  if (line.substr(0, kPrefix.size()) != kPrefix) {
    return {};
  }
  std::string_view rest = line.substr(kPrefix.size());
  size_t space = rest.find(' ');
  if (space == std::string_view::npos) {
    return {};
  }
  std::string_view kind = rest.substr(space + 1);
  if (kind != "counter" && kind != "histogram") {
    return {};
  }
  return std::string(rest.substr(0, space));
}

// The metric name of a sample line (up to its labels or its value).
std::string_view sampleName(std::string_view line) {
  size_t end = line.find_first_of("{ ");
  return line.substr(0, end == std::string_view::npos ? line.size() : end);
}

bool ofFamily(std::string_view name, const std::string& family) {
  if (name == family) {
    return true;
  }
  if (name.substr(0, family.size()) != family) {
    return false;
  }
  std::string_view suffix = name.substr(family.size());
  return suffix == "_bucket" || suffix == "_sum" || suffix == "_count" || suffix == "_total";
}

}  // namespace

std::string CounterCarry::adjust(std::string_view text, uint64_t generation) {
  std::lock_guard lock(mu_);
  if (generation != generation_) {
    // A new child: what the previous one last showed is carried from now on.
    for (const auto& [series, value] : last_) {
      carried_[series] += value;
    }
    last_.clear();
    generation_ = generation;
  }
  std::string out;
  out.reserve(text.size());
  std::string family;  // the cumulative family the lines belong to, if any
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.empty() || line.front() == '#') {
      if (line.substr(0, 7) == "# TYPE ") {
        family = cumulativeFamily(line);
      }
      out += line;
      out += '\n';
      continue;
    }
    size_t space = line.rfind(' ');
    if (family.empty() || space == std::string_view::npos || !ofFamily(sampleName(line), family)) {
      out += line;
      out += '\n';
      continue;
    }
    std::string series(line.substr(0, space));
    std::string value_text(line.substr(space + 1));
    char* end = nullptr;
    double value = std::strtod(value_text.c_str(), &end);
    if (end == value_text.c_str() || *end != '\0') {
      out += line;  // not a number this pass can add to: as the child wrote it
      out += '\n';
      continue;
    }
    last_[series] = value;
    auto carried = carried_.find(series);
    if (carried == carried_.end()) {
      out += line;
    } else {
      out += fmt::format("{} {}", series, value + carried->second);
    }
    out += '\n';
  }
  return out;
}

}  // namespace ccm::plugin::isolation
