// Routing rules of a hybrid cluster (several providers in one host): the flags that say which
// loaded provider owns a node or a Service, parsed and checked, and the label selectors they use.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/plugin/provider.hpp"
#include "host/runtime/status.hpp"

namespace ccm::providers {

// An equality-based label selector: comma-separated requirements, all of which must hold:
// "key=value" (or "key==value"), "key!=value", "key" (present), "!key" (absent).
class LabelSelector {
 public:
  static StatusOr<LabelSelector> parse(std::string_view text);
  bool matches(std::span<const plugin::KeyValueRef> labels) const;
  const std::string& text() const { return text_; }

 private:
  enum class Op { Equals, NotEquals, Exists, Absent };
  struct Requirement {
    std::string key;
    Op op = Op::Exists;
    std::string value;
  };
  std::string text_;
  std::vector<Requirement> requirements_;
};

struct NodeSelectorRule {
  std::string provider;
  LabelSelector selector;
};

struct ClassRule {
  std::string load_balancer_class;
  std::string provider;
};

struct RoutingRules {
  // A node without a providerID goes to the provider whose selector matches its labels.
  std::vector<NodeSelectorRule> node_selectors;
  // When no selector matches: ask every provider whether the instance exists; exactly one
  // must answer EXISTS.
  bool discover_by_existence = false;
  // spec.loadBalancerClass -> provider. Services without a class (or of a class not listed
  // here) go to the first provider.
  std::vector<ClassRule> classes;
  // Pass every node to each provider's load balancers, not only that provider's own nodes.
  bool load_balancer_all_nodes = false;
};

// Splits "a=x,b=y" style flag values ("NAME=VALUE" items, repeatable flags already joined)
// into pairs; `flag` names the flag in errors.
StatusOr<std::vector<std::pair<std::string, std::string>>> parseNamedValues(
    std::string_view flag, const std::vector<std::string>& items);

// The provider names of --cloud-provider ("a,b"): non-empty, no duplicates.
StatusOr<std::vector<std::string>> parseProviderList(std::string_view flag_value);

// The config path of each provider from --cloud-config: "" or a plain path (allowed with one
// provider only) or "a=/x,b=/y" (every name must be a listed provider; unnamed ones get "").
StatusOr<std::vector<std::string>> parseCloudConfigs(std::string_view flag_value,
                                                     const std::vector<std::string>& providers);

// Builds the rules from the flag values, checking that every named provider is listed.
StatusOr<RoutingRules> buildRules(const std::vector<std::string>& providers,
                                  const std::vector<std::string>& node_selectors,
                                  std::string_view discovery, const std::vector<std::string>& classes,
                                  std::string_view load_balancer_nodes);

// Every provider of a hybrid cluster must declare a providerID prefix, and no prefix may be
// a prefix of another's (a providerID would then belong to both).
Status checkPrefixes(std::span<const plugin::ProviderInfo* const> providers);

}  // namespace ccm::providers
