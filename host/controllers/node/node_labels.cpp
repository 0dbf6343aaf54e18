// Node label rules.
#include "host/controllers/node/node_labels.hpp"

#include <fmt/format.h>

#include "host/controllers/common/well_known.hpp"
#include "host/runtime/text.hpp"

namespace ccm::controllers::node {
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

bool isValidLabelKey(std::string_view key) { return text::isQualifiedName(key); }

bool isValidLabelValue(std::string_view value) {
  return value.empty() || text::isQualifiedNamePart(value);
}

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
