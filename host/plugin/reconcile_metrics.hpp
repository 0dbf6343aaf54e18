// ReconcileMetrics: the reconcile metrics openstack-cloud-controller-manager exports, for every
// provider that declares a metric namespace (ABI 1.1): the load-balancer calls the service
// controller drives are timed and counted as
//   cloudprovider_<namespace>_reconcile_duration_seconds{operation}  (histogram)
//   cloudprovider_<namespace>_reconcile_total{operation}             (counter)
//   cloudprovider_<namespace>_reconcile_errors_total{operation}      (counter)
// with operation loadbalancer_ensure, loadbalancer_update or loadbalancer_delete, and OCCM's
// buckets. The names are under the host's reserved "cloudprovider" prefix, so the host records
// them (a plugin cannot), measured around the whole provider call.
// THREAD: record may be called from any thread.
#pragma once

#include <string>
#include <string_view>

#include "host/runtime/metrics.hpp"
#include "host/runtime/status.hpp"

namespace ccm::plugin {

class ReconcileMetrics {
 public:
  // Registers nothing (and records nothing) when registry is null or metric_namespace empty.
  ReconcileMetrics(metrics::Registry* registry, const std::string& metric_namespace);

  // OCCM's operation label of a provider call ("ensure_load_balancer" -> "loadbalancer_ensure");
  // empty for calls that are not reconciles.
  static std::string_view operationOf(std::string_view call_name);

  // Records one call of `call_name` that ended with `status` after `seconds`.
  void record(std::string_view call_name, const Status& status, double seconds) const;

 private:
  metrics::Family<metrics::Histogram>* duration_ = nullptr;
  metrics::Family<metrics::Counter>* total_ = nullptr;
  metrics::Family<metrics::Counter>* errors_ = nullptr;
};

}  // namespace ccm::plugin
