// LabelSelector: the labelSelector query grammar of the API server (k=v, k==v, k!=v,
// k in (a,b), k notin (a,b), k, !k, k>n, k<n; comma = AND) and matching against a label set.
// Also the label syntax validators (qualified names, label values) shared with validation.
//
// THREAD: immutable after parse; safe to share.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ccm::kubesim {

// Labels of an object, sorted by key.
using Labels = std::vector<std::pair<std::string, std::string>>;

// Returns the value for key, or nullptr.
const std::string* findLabel(const Labels& labels, std::string_view key);

class LabelSelector {
 public:
  enum class Op { Equals, NotEquals, In, NotIn, Exists, DoesNotExist, GreaterThan, LessThan };
  struct Requirement {
    std::string key;
    Op op = Op::Exists;
    std::vector<std::string> values;
  };

  LabelSelector() = default;  // matches everything

  // Parses text; on failure returns nullopt and sets *error to the API server's message.
  static std::optional<LabelSelector> parse(std::string_view text, std::string* error);

  bool empty() const { return requirements_.empty(); }
  bool matches(const Labels& labels) const;
  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
};

// Label key syntax (prefix "/" name); returns the error details (empty when valid).
std::vector<std::string> validateQualifiedName(std::string_view value);
// Label value syntax; returns the error details (empty when valid).
std::vector<std::string> validateLabelValue(std::string_view value);
// DNS-1123 subdomain (≤253); DNS-1123 label (≤63); DNS-1035 label (≤63).
std::vector<std::string> validateDns1123Subdomain(std::string_view value);
std::vector<std::string> validateDns1123Label(std::string_view value);
std::vector<std::string> validateDns1035Label(std::string_view value);

}  // namespace ccm::kubesim
