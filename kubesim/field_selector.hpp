// FieldSelector: the fieldSelector query grammar (label=value, label==value, label!=value;
// comma = AND; backslash escapes) restricted to the field labels a resource type supports.
// Matching uses the per-object field values StoredObject precomputes (same label order as
// ResourceType::allFieldLabels()).
//
// THREAD: immutable after parse; safe to share.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubesim/resource_registry.hpp"

namespace ccm::kubesim {

class FieldSelector {
 public:
  struct Term {
    size_t index = 0;  // into ResourceType::allFieldLabels()
    std::string label;
    bool negate = false;
    std::string value;
  };

  FieldSelector() = default;  // matches everything

  // Parses text for type; on failure returns nullopt and sets *error to the server's message.
  static std::optional<FieldSelector> parse(std::string_view text, const ResourceType& type,
                                            std::string* error);

  bool empty() const { return terms_.empty(); }
  bool matches(const std::vector<std::string>& field_values) const;
  // The single "metadata.name=<x>" term, if the selector pins one name (watch fast path).
  std::optional<std::string> exactName() const;
  const std::vector<Term>& terms() const { return terms_; }

 private:
  std::vector<Term> terms_;
};

}  // namespace ccm::kubesim
