// The checks the host applies to what a plugin passes to the metric and log_fields host
// services, shared with the fake host (ccm/testing/fake_host.hpp) so that both accept and
// refuse the same names. Header-only; C++20.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ccm/provider_abi.h"

namespace ccm::sdk {
inline namespace v1 {

inline constexpr size_t kMaxMetricLabels = 16;

// A metric or label name: [a-z_][a-z0-9_]*, at most 200 bytes.
inline bool isValidMetricName(std::string_view name) {
  if (name.empty() || name.size() > 200) {
    return false;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) {
      return false;
    }
  }
  return true;
}

// A log_fields key: [A-Za-z][A-Za-z0-9_.-]*, at most 64 bytes, and not a member the host
// writes itself (JSON's ts/caller/msg/v/level, and provider). Other keys are dropped.
inline bool isValidLogKey(std::string_view key) {
  if (key.empty() || key.size() > 64 ||
      !((key[0] >= 'a' && key[0] <= 'z') || (key[0] >= 'A' && key[0] <= 'Z'))) {
    return false;
  }
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) {
      return false;
    }
  }
  for (std::string_view reserved : {"ts", "caller", "msg", "v", "level", "provider"}) {
    if (key == reserved) {
      return false;
    }
  }
  return true;
}

// Empty when a metric call's name and labels are acceptable; else what is wrong (the host
// then ignores the call and counts a bad_metric contract violation). `shown_name` is the
// name made safe to print.
inline std::string checkMetricCall(std::string_view name, std::string_view shown_name,
                                   const ccm_kv* labels, size_t label_count) {
  if (!isValidMetricName(name) || label_count > kMaxMetricLabels ||
      (label_count > 0 && labels == nullptr)) {
    return "metric \"" + std::string(shown_name) + "\" has an invalid name or labels";
  }
  for (size_t i = 0; i < label_count; ++i) {
    std::string_view label(labels[i].key.data, labels[i].key.data == nullptr ? 0
                                                                            : labels[i].key.size);
    if (!isValidMetricName(label)) {
      return "metric \"" + std::string(name) + "\": invalid label name \"" +
             std::string(label.substr(0, 64)) + "\"";
    }
  }
  return {};
}

// True when metric `name` is the plugin's own (ABI 1.1): "<metric_namespace>_..." with a
// declared namespace. The host exposes those as they are and every other one under its
// ccm_provider_ prefix, with a "provider" label naming the provider.
inline bool isOwnMetric(std::string_view name, std::string_view metric_namespace) {
  return !metric_namespace.empty() && name.size() > metric_namespace.size() + 1 &&
         name.substr(0, metric_namespace.size()) == metric_namespace &&
         name[metric_namespace.size()] == '_';
}

// Empty when the labels of a metric call (already checked by checkMetricCall) leave the host
// its own: a metric under the host's ccm_provider_ prefix may not carry a "provider" label
// (the host adds it); else what is wrong (the host ignores the call and counts bad_metric).
inline std::string checkHostLabels(std::string_view name, std::string_view metric_namespace,
                                   const ccm_kv* labels, size_t label_count) {
  if (isOwnMetric(name, metric_namespace)) {
    return {};
  }
  for (size_t i = 0; i < label_count; ++i) {
    if (std::string_view(labels[i].key.data, labels[i].key.size) == "provider") {
      return "metric \"" + std::string(name) +
             "\": the label \"provider\" is the host's (it names the provider on every "
             "ccm_provider_* metric)";
    }
  }
  return {};
}

}  // namespace v1
}  // namespace ccm::sdk
