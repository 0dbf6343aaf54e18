// Node label rules.
#include "host/controllers/node/node_labels.hpp"

#include <fmt/format.h>

#include "host/controllers/common/well_known.hpp"
#include "host/runtime/text.hpp"

namespace ccm::controllers::node {
namespace {

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63.
bool validName(std::string_view s) {
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

}  // namespace

bool isReservedLabelKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  std::string_view domain = key.substr(0, slash);
  for (std::string_view reserved : {std::string_view("kubernetes.io"), std::string_view("k8s.io")}) {
    if (domain == reserved) {
      return true;
    }
    if (domain.size() > reserved.size() &&
        domain.substr(domain.size() - reserved.size()) == reserved &&
        domain[domain.size() - reserved.size() - 1] == '.') {
      return true;
    }
  }
  return false;
}

bool isValidLabelKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) {
    return validName(key);
  }
  return text::isDns1123Subdomain(key.substr(0, slash)) && validName(key.substr(slash + 1));
}

bool isValidLabelValue(std::string_view value) { return value.empty() || validName(value); }

LabelList labelsFromMetadata(const kube::Node& node, const plugin::InstanceMetadata& md,
                             std::vector<std::string>* warnings) {
  LabelList out;
  auto standard = [&](std::string_view value, std::string_view stable, std::string_view beta) {
    if (value.empty()) {
      return;
    }
    if (!isValidLabelValue(value)) {
      if (warnings != nullptr) {
        warnings->push_back(fmt::format("not labelling {}: \"{}\" is not a valid label value",
                                        stable, value));
      }
      return;
    }
    out.emplace_back(std::string(stable), std::string(value));
    out.emplace_back(std::string(beta), std::string(value));
  };
  standard(md.instance_type, keys::kInstanceType, keys::kInstanceTypeBeta);
  standard(md.zone, keys::kZone, keys::kZoneBeta);
  standard(md.region, keys::kRegion, keys::kRegionBeta);
  for (const auto& [k, v] : md.additional_labels) {
    if (isReservedLabelKey(k)) {
      if (warnings != nullptr) {
        warnings->push_back(fmt::format("discarding additional label {}: the kubernetes.io and "
                                        "k8s.io domains are reserved",
                                        k));
      }
      continue;
    }
    if (!isValidLabelKey(k) || !isValidLabelValue(v)) {
      if (warnings != nullptr) {
        warnings->push_back(fmt::format("discarding additional label {}=\"{}\": not a valid "
                                        "label",
                                        k, v));
      }
      continue;
    }
    if (auto existing = node.label(k)) {
      if (*existing != v && warnings != nullptr) {
        warnings->push_back(fmt::format("keeping label {}=\"{}\" although the provider says "
                                        "\"{}\"",
                                        k, *existing, v));
      }
      continue;
    }
    out.emplace_back(k, v);
  }
  return out;
}

LabelList stableLabelFixes(const kube::Node& node) {
  LabelList out;
  for (auto [beta, stable] : {std::pair{keys::kZoneBeta, keys::kZone},
                              std::pair{keys::kRegionBeta, keys::kRegion},
                              std::pair{keys::kInstanceTypeBeta, keys::kInstanceType}}) {
    auto b = node.label(beta);
    if (!b) {
      continue;
    }
    auto s = node.label(stable);
    if (!s || *s != *b) {
      out.emplace_back(std::string(stable), std::string(*b));
    }
  }
  return out;
}

}  // namespace ccm::controllers::node
