// The /configz document.
#include "host/server/configz.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>

#include "host/options/flag_set.hpp"

namespace ccm::server {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void key(Writer& w, std::string_view k) {
  w.Key(k.data(), static_cast<unsigned>(k.size()));
}

void str(Writer& w, std::string_view k, const std::string& v) {
  key(w, k);
  w.String(v.data(), static_cast<unsigned>(v.size()));
}

void boolean(Writer& w, std::string_view k, bool v) {
  key(w, k);
  w.Bool(v);
}

void integer(Writer& w, std::string_view k, int v) {
  key(w, k);
  w.Int(v);
}

void duration(Writer& w, std::string_view k, std::chrono::milliseconds d) {
  str(w, k, options::formatGoDuration(d));
}

void strings(Writer& w, std::string_view k, const std::vector<std::string>& v) {
  key(w, k);
  if (v.empty()) {
    w.Null();  // a nil slice, as Go marshals it
    return;
  }
  w.StartArray();
  for (const auto& s : v) {
    w.String(s.data(), static_cast<unsigned>(s.size()));
  }
  w.EndArray();
}

}  // namespace

std::string configzJson(const options::Options& o) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  key(w, kConfigzName);
  w.StartObject();

  key(w, "Generic");
  w.StartObject();
  integer(w, "Port", 0);
  str(w, "Address", "0.0.0.0");
  duration(w, "MinResyncPeriod", o.min_resync_period);
  key(w, "ClientConnection");
  w.StartObject();
  str(w, "Kubeconfig", o.kubeconfig);
  str(w, "AcceptContentTypes", "");
  str(w, "ContentType", o.kube_api_content_type);
  key(w, "QPS");
  if (std::floor(o.kube_api_qps) == o.kube_api_qps && std::abs(o.kube_api_qps) < 1e15) {
    w.Int64(static_cast<int64_t>(o.kube_api_qps));
  } else {
    w.Double(o.kube_api_qps);
  }
  integer(w, "Burst", o.kube_api_burst);
  w.EndObject();
  duration(w, "ControllerStartInterval", o.controller_start_interval);
  key(w, "LeaderElection");
  w.StartObject();
  boolean(w, "LeaderElect", o.leader_elect);
  duration(w, "LeaseDuration", o.leader_elect_lease_duration);
  duration(w, "RenewDeadline", o.leader_elect_renew_deadline);
  duration(w, "RetryPeriod", o.leader_elect_retry_period);
  str(w, "ResourceLock", o.leader_elect_resource_lock);
  str(w, "ResourceName", o.leader_elect_resource_name);
  str(w, "ResourceNamespace", o.leader_elect_resource_namespace);
  w.EndObject();
  strings(w, "Controllers", o.controllers);
  key(w, "Debugging");
  w.StartObject();
  boolean(w, "EnableProfiling", o.profiling);
  boolean(w, "EnableContentionProfiling", o.contention_profiling);
  w.EndObject();
  boolean(w, "LeaderMigrationEnabled", o.enable_leader_migration);
  key(w, "LeaderMigration");
  w.StartObject();
  str(w, "LeaderName", "");
  str(w, "ResourceLock", "");
  key(w, "ControllerLeaders");
  w.Null();
  w.EndObject();
  w.EndObject();  // Generic

  key(w, "KubeCloudShared");
  w.StartObject();
  key(w, "CloudProvider");
  w.StartObject();
  str(w, "Name", o.cloud_provider);
  str(w, "CloudConfigFile", o.cloud_config);
  w.EndObject();
  str(w, "ExternalCloudVolumePlugin", o.external_cloud_volume_plugin);
  boolean(w, "UseServiceAccountCredentials", o.use_service_account_credentials);
  boolean(w, "AllowUntaggedCloud", o.allow_untagged_cloud);
  duration(w, "RouteReconciliationPeriod", o.route_reconciliation_period);
  duration(w, "NodeMonitorPeriod", o.node_monitor_period);
  str(w, "ClusterName", o.cluster_name);
  str(w, "ClusterCIDR", o.cluster_cidr);
  boolean(w, "AllocateNodeCIDRs", o.allocate_node_cidrs);
  str(w, "CIDRAllocatorType", o.cidr_allocator_type);
  boolean(w, "ConfigureCloudRoutes", o.configure_cloud_routes);
  duration(w, "NodeSyncPeriod", o.node_sync_period);
  w.EndObject();

  key(w, "NodeController");
  w.StartObject();
  integer(w, "ConcurrentNodeSyncs", o.concurrent_node_syncs);
  integer(w, "ConcurrentNodeStatusUpdates", o.concurrent_node_status_updates);
  w.EndObject();

  key(w, "ServiceController");
  w.StartObject();
  integer(w, "ConcurrentServiceSyncs", o.concurrent_service_syncs);
  w.EndObject();

  duration(w, "NodeStatusUpdateFrequency", o.node_status_update_frequency);

  key(w, "Webhook");
  w.StartObject();
  strings(w, "Webhooks", o.webhooks);
  w.EndObject();

  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

}  // namespace ccm::server
