// The reconcile metrics of providers with a metric namespace.
#include "host/plugin/reconcile_metrics.hpp"

#include <vector>

namespace ccm::plugin {
namespace {

// OCCM's buckets for reconcile durations, in seconds.
std::vector<double> reconcileBuckets() {
  return {0.01, 0.05, 0.1,  0.5,  1.0,  2.5,  5.0,  7.5,  10.0,  12.5,  15.0,
          17.5, 20.0, 22.5, 25.0, 27.5, 30.0, 50.0, 75.0, 100.0, 1000.0};
}

}  // namespace

ReconcileMetrics::ReconcileMetrics(metrics::Registry* registry,
                                   const std::string& metric_namespace) {
  if (registry == nullptr || metric_namespace.empty()) {
    return;
  }
  std::string prefix = "cloudprovider_" + metric_namespace + "_reconcile_";
  duration_ = registry->histogram(prefix + "duration_seconds",
                                  "Time taken by the provider's load-balancer reconciles",
                                  reconcileBuckets(), {"operation"}, metrics::Stability::Alpha);
  total_ = registry->counter(prefix + "total", "Load-balancer reconciles of the provider",
                             {"operation"}, metrics::Stability::Alpha);
  errors_ = registry->counter(prefix + "errors_total",
                              "Load-balancer reconciles of the provider that failed",
                              {"operation"}, metrics::Stability::Alpha);
}

std::string_view ReconcileMetrics::operationOf(std::string_view call_name) {
  if (call_name == "ensure_load_balancer") {
    return "loadbalancer_ensure";
  }
  if (call_name == "update_load_balancer") {
    return "loadbalancer_update";
  }
  if (call_name == "ensure_load_balancer_deleted") {
    return "loadbalancer_delete";
  }
  return {};
}

void ReconcileMetrics::record(std::string_view call_name, const Status& status,
                              double seconds) const {
  std::string_view op = operationOf(call_name);
  if (op.empty()) {
    return;
  }
  std::vector<std::string> labels{std::string(op)};
  if (duration_ != nullptr) {
    duration_->labels(labels).observe(seconds);
  }
  if (total_ != nullptr) {
    total_->labels(labels).inc();
  }
  if (errors_ != nullptr && !status.ok()) {
    errors_->labels(labels).inc();
  }
}

}  // namespace ccm::plugin
