// Parsing and checking of the hybrid-cluster routing flags and their label selectors.
#include "host/providers/routing_rules.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "host/runtime/text.hpp"

namespace ccm::providers {
namespace {

std::vector<std::string_view> splitComma(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    size_t comma = s.find(',');
    out.push_back(text::trimSpace(s.substr(0, comma)));
    if (comma == std::string_view::npos) {
      break;
    }
    s.remove_prefix(comma + 1);
  }
  return out;
}

bool listed(const std::vector<std::string>& providers, std::string_view name) {
  return std::find(providers.begin(), providers.end(), name) != providers.end();
}

Status unknownProvider(std::string_view flag, std::string_view name,
                       const std::vector<std::string>& providers) {
  return Status(Code::InvalidArgument,
                fmt::format("{} names provider \"{}\", which is not in --cloud-provider ({})", flag,
                            name, fmt::join(providers, ",")));
}

}  // namespace

StatusOr<LabelSelector> LabelSelector::parse(std::string_view text) {
  LabelSelector s;
  s.text_ = std::string(text);
  for (std::string_view item : splitComma(text)) {
    Requirement r;
    std::string_view key;
    if (size_t ne = item.find("!="); ne != std::string_view::npos) {
      r.op = Op::NotEquals;
      key = item.substr(0, ne);
      r.value = std::string(text::trimSpace(item.substr(ne + 2)));
    } else if (size_t eq = item.find('='); eq != std::string_view::npos) {
      r.op = Op::Equals;
      key = item.substr(0, eq);
      std::string_view value = item.substr(eq + 1);
      if (!value.empty() && value.front() == '=') {
        value.remove_prefix(1);
      }
      r.value = std::string(text::trimSpace(value));
    } else if (!item.empty() && item.front() == '!') {
      r.op = Op::Absent;
      key = item.substr(1);
    } else {
      r.op = Op::Exists;
      key = item;
    }
    key = text::trimSpace(key);
    if (!text::isQualifiedName(key)) {
      return Status(Code::InvalidArgument,
                    fmt::format("label selector \"{}\": \"{}\" is not a valid label key", text,
                                key));
    }
    r.key = std::string(key);
    s.requirements_.push_back(std::move(r));
  }
  return s;
}

bool LabelSelector::matches(std::span<const plugin::KeyValueRef> labels) const {
  auto find = [&](std::string_view key) -> const plugin::KeyValueRef* {
    for (const auto& l : labels) {
      if (l.key == key) {
        return &l;
      }
    }
    return nullptr;
  };
  return std::all_of(requirements_.begin(), requirements_.end(), [&](const Requirement& r) {
    const plugin::KeyValueRef* label = find(r.key);
    switch (r.op) {
      case Op::Equals:
        return label != nullptr && label->value == r.value;
      case Op::NotEquals:
        return label == nullptr || label->value != r.value;
      case Op::Exists:
        return label != nullptr;
      case Op::Absent:
        return label == nullptr;
    }
    return false;
  });
}

StatusOr<std::vector<std::pair<std::string, std::string>>> parseNamedValues(
    std::string_view flag, const std::vector<std::string>& items) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& item : items) {
    size_t eq = item.find('=');
    std::string_view name = text::trimSpace(std::string_view(item).substr(0, eq));
    if (eq == std::string::npos || name.empty()) {
      return Status(Code::InvalidArgument,
                    fmt::format("{} \"{}\": expected NAME=VALUE", flag, item));
    }
    out.emplace_back(std::string(name),
                     std::string(text::trimSpace(std::string_view(item).substr(eq + 1))));
  }
  return out;
}

StatusOr<std::vector<std::string>> parseProviderList(std::string_view flag_value) {
  std::vector<std::string> out;
  for (std::string_view name : splitComma(flag_value)) {
    if (name.empty()) {
      return Status(Code::InvalidArgument,
                    fmt::format("--cloud-provider \"{}\" has an empty provider name", flag_value));
    }
    if (listed(out, name)) {
      return Status(Code::InvalidArgument,
                    fmt::format("--cloud-provider lists \"{}\" twice", name));
    }
    out.emplace_back(name);
  }
  return out;
}

StatusOr<std::vector<std::string>> parseCloudConfigs(std::string_view flag_value,
                                                     const std::vector<std::string>& providers) {
  std::vector<std::string> out(providers.size());
  if (flag_value.empty()) {
    return out;
  }
  // A plain path (today's form) is the single provider's config. A path may itself contain
  // '=' or ','; with one provider, only "NAME=" with that provider's name reads as named.
  std::string prefix = providers.size() == 1 ? providers.front() + "=" : std::string();
  if (providers.size() == 1 && !flag_value.starts_with(prefix)) {
    out.front() = std::string(flag_value);
    return out;
  }
  for (std::string_view item : splitComma(flag_value)) {
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status(Code::InvalidArgument,
                    fmt::format("--cloud-config \"{}\": with several providers, give each its "
                                "config as NAME=PATH (comma-separated)",
                                flag_value));
    }
    std::string_view name = text::trimSpace(item.substr(0, eq));
    auto it = std::find(providers.begin(), providers.end(), name);
    if (it == providers.end()) {
      return unknownProvider("--cloud-config", name, providers);
    }
    std::string& slot = out[static_cast<size_t>(it - providers.begin())];
    if (!slot.empty()) {
      return Status(Code::InvalidArgument,
                    fmt::format("--cloud-config names provider \"{}\" twice", name));
    }
    slot = std::string(text::trimSpace(item.substr(eq + 1)));
  }
  return out;
}

StatusOr<RoutingRules> buildRules(const std::vector<std::string>& providers,
                                  const std::vector<std::string>& node_selectors,
                                  std::string_view discovery, const std::vector<std::string>& classes,
                                  std::string_view load_balancer_nodes) {
  RoutingRules rules;
  // The flag's values arrive split on commas, and a selector has commas between its
  // requirements: an item that does not start with a listed provider's "NAME=" continues the
  // previous one's selector.
  std::vector<std::string> joined;
  for (const auto& item : node_selectors) {
    std::string_view name = text::trimSpace(std::string_view(item).substr(0, item.find('=')));
    if (!joined.empty() && (item.find('=') == std::string::npos || !listed(providers, name))) {
      joined.back() += "," + item;
    } else {
      joined.push_back(item);
    }
  }
  auto selectors = parseNamedValues("--provider-node-selector", joined);
  if (!selectors.ok()) {
    return selectors.status();
  }
  for (auto& [name, text] : *selectors) {
    if (!listed(providers, name)) {
      return unknownProvider("--provider-node-selector", name, providers);
    }
    auto selector = LabelSelector::parse(text);
    if (!selector.ok()) {
      return selector.status().withPrefix(fmt::format("--provider-node-selector {}", name));
    }
    rules.node_selectors.push_back({name, std::move(selector).value()});
  }
  if (discovery == "exists") {
    rules.discover_by_existence = true;
  } else if (!discovery.empty() && discovery != "none") {
    return Status(Code::InvalidArgument,
                  fmt::format("--provider-discovery \"{}\": expected \"none\" or \"exists\"",
                              discovery));
  }
  auto class_pairs = parseNamedValues("--load-balancer-class-provider", classes);
  if (!class_pairs.ok()) {
    return class_pairs.status();
  }
  for (auto& [cls, name] : *class_pairs) {
    if (!listed(providers, name)) {
      return unknownProvider("--load-balancer-class-provider", name, providers);
    }
    if (!text::isQualifiedName(cls)) {
      return Status(Code::InvalidArgument,
                    fmt::format("--load-balancer-class-provider: \"{}\" is not a valid "
                                "loadBalancerClass",
                                cls));
    }
    for (const auto& existing : rules.classes) {
      if (existing.load_balancer_class == cls) {
        return Status(Code::InvalidArgument,
                      fmt::format("--load-balancer-class-provider maps class \"{}\" twice", cls));
      }
    }
    rules.classes.push_back({cls, name});
  }
  if (load_balancer_nodes == "all") {
    rules.load_balancer_all_nodes = true;
  } else if (!load_balancer_nodes.empty() && load_balancer_nodes != "own") {
    return Status(Code::InvalidArgument,
                  fmt::format("--load-balancer-nodes \"{}\": expected \"own\" or \"all\"",
                              load_balancer_nodes));
  }
  return rules;
}

Status checkPrefixes(std::span<const plugin::ProviderInfo* const> providers) {
  for (size_t i = 0; i < providers.size(); ++i) {
    const plugin::ProviderInfo& a = *providers[i];
    if (a.provider_id_prefix.empty()) {
      return Status(Code::FailedPrecondition,
                    fmt::format("provider {} declares no providerID prefix (ABI 1.1 "
                                "provider_id_prefix); it cannot share a cluster with other "
                                "providers",
                                a.name));
    }
    for (size_t j = 0; j < i; ++j) {
      const plugin::ProviderInfo& b = *providers[j];
      if (a.provider_id_prefix.starts_with(b.provider_id_prefix) ||
          b.provider_id_prefix.starts_with(a.provider_id_prefix)) {
        return Status(Code::FailedPrecondition,
                      fmt::format("providers {} (providerID prefix \"{}\") and {} (prefix \"{}\") "
                                  "overlap: a providerID could belong to both",
                                  b.name, b.provider_id_prefix, a.name, a.provider_id_prefix));
      }
    }
  }
  return okStatus();
}

}  // namespace ccm::providers
