// ReconcileMetrics: OCCM's reconcile metric names, label and buckets under the provider's
// metric namespace, for the load-balancer calls only; nothing without a namespace.
#include <doctest/doctest.h>

#include "host/plugin/reconcile_metrics.hpp"

using namespace ccm;
using namespace ccm::plugin;

TEST_CASE("reconcile metrics: OCCM's names, operation label and buckets") {
  metrics::Registry reg;
  ReconcileMetrics m(&reg, "openstack");
  m.record("ensure_load_balancer", Status(), 0.2);
  m.record("ensure_load_balancer", Status(Code::Unavailable, "Octavia is down"), 3.0);
  m.record("update_load_balancer", Status(), 0.01);
  m.record("ensure_load_balancer_deleted", Status(), 1.0);
  m.record("get_load_balancer", Status(), 1.0);  // not a reconcile
  m.record("instance_metadata", Status(), 1.0);  // not a reconcile

  CHECK(reg.valueForTest("cloudprovider_openstack_reconcile_total", {"loadbalancer_ensure"}) == 2);
  CHECK(reg.valueForTest("cloudprovider_openstack_reconcile_errors_total",
                         {"loadbalancer_ensure"}) == 1);
  CHECK(reg.valueForTest("cloudprovider_openstack_reconcile_total", {"loadbalancer_update"}) == 1);
  CHECK(reg.valueForTest("cloudprovider_openstack_reconcile_errors_total",
                         {"loadbalancer_update"}) == -1);  // no error, no child
  CHECK(reg.valueForTest("cloudprovider_openstack_reconcile_total", {"loadbalancer_delete"}) == 1);
  CHECK(reg.valueForTest("cloudprovider_openstack_reconcile_duration_seconds",
                         {"loadbalancer_ensure"}) == 2);

  std::string text = reg.exposition();
  CHECK(text.find("# TYPE cloudprovider_openstack_reconcile_duration_seconds histogram") !=
        std::string::npos);
  // OCCM's buckets: the 0.2 s call lands in le=0.5, the 3 s one in le=5.
  CHECK(text.find("cloudprovider_openstack_reconcile_duration_seconds_bucket{operation="
                  "\"loadbalancer_ensure\",le=\"0.1\"} 0") != std::string::npos);
  CHECK(text.find("cloudprovider_openstack_reconcile_duration_seconds_bucket{operation="
                  "\"loadbalancer_ensure\",le=\"0.5\"} 1") != std::string::npos);
  CHECK(text.find("cloudprovider_openstack_reconcile_duration_seconds_bucket{operation="
                  "\"loadbalancer_ensure\",le=\"5\"} 2") != std::string::npos);
  CHECK(text.find("le=\"1000\"") != std::string::npos);
  CHECK(text.find("get_load_balancer") == std::string::npos);
}

TEST_CASE("reconcile metrics: nothing without a metric namespace or a registry") {
  metrics::Registry reg;
  ReconcileMetrics none(&reg, "");
  none.record("ensure_load_balancer", Status(), 0.2);
  CHECK(reg.exposition().find("reconcile") == std::string::npos);
  ReconcileMetrics no_registry(nullptr, "openstack");
  no_registry.record("ensure_load_balancer", Status(), 0.2);  // must not crash
  CHECK(ReconcileMetrics::operationOf("ensure_load_balancer") == "loadbalancer_ensure");
  CHECK(ReconcileMetrics::operationOf("create_route").empty());
}
