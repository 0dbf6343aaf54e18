// Options: every flag of cloud-controller-manager, with upstream's names, syntax and defaults
// (k8s.io/cloud-provider and its generic controller-manager, apiserver and logging flags),
// plus ccm's own (--cloud-provider-plugin-dir, --check-config, node deletion safety).
// docs/operations.md lists them all.
//
// THREAD: built and validated on the main thread, then read-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host/options/flag_set.hpp"
#include "host/runtime/status.hpp"

namespace ccm::options {

using std::chrono::milliseconds;

struct Options {
  // Generic.
  std::string cloud_provider;
  std::string cloud_config;
  std::string cloud_provider_plugin_dir;
  // Several providers in one host (--cloud-provider=a,b; see host/providers/routing_rules.hpp).
  std::vector<std::string> provider_node_selectors;        // NAME=label-selector
  std::string provider_discovery;                           // "none" or "exists"
  std::vector<std::string> load_balancer_class_providers;  // CLASS=NAME
  std::string load_balancer_nodes;                          // "own" or "all"
  bool check_config = false;
  std::string external_cloud_volume_plugin;
  bool use_service_account_credentials = false;
  bool allow_untagged_cloud = false;
  milliseconds route_reconciliation_period{10000};
  milliseconds node_monitor_period{5000};
  std::string cluster_name;
  std::string cluster_cidr;
  bool allocate_node_cidrs = false;
  std::string cidr_allocator_type;
  bool configure_cloud_routes = true;
  milliseconds node_sync_period{0};
  milliseconds min_resync_period{12 * 3600 * 1000};
  std::string kube_api_content_type;
  double kube_api_qps = 20;
  int32_t kube_api_burst = 30;
  milliseconds controller_start_interval{0};
  std::vector<std::string> controllers;
  std::string feature_gates;

  // Leader election.
  bool leader_elect = true;
  milliseconds leader_elect_lease_duration{15000};
  milliseconds leader_elect_renew_deadline{10000};
  milliseconds leader_elect_retry_period{2000};
  std::string leader_elect_resource_lock;
  std::string leader_elect_resource_name;
  std::string leader_elect_resource_namespace;

  // Controllers.
  int32_t concurrent_node_syncs = 0;
  int32_t concurrent_node_status_updates = 0;
  int32_t concurrent_service_syncs = 0;
  // --load-balancer-class (repeatable): classes the service controller handles besides
  // Services without one; --load-balancer-class-only: only those classes.
  std::vector<std::string> load_balancer_classes;
  bool load_balancer_class_only = false;
  milliseconds node_status_update_frequency{300000};
  int32_t node_cidr_mask_size = 0;
  int32_t node_cidr_mask_size_ipv4 = 0;
  int32_t node_cidr_mask_size_ipv6 = 0;
  double node_eviction_rate = 0.1;
  double secondary_node_eviction_rate = 0.01;
  double unhealthy_zone_threshold = 0.55;
  int32_t large_cluster_size_threshold = 50;
  milliseconds cloud_provider_call_timeout{0};
  milliseconds provider_start_timeout{120000};
  // --provider-isolation: "none" (the plugin runs in this process) or "process" (in a child
  // process the host supervises and restarts; host/plugin/isolation).
  std::string provider_isolation = "none";
  milliseconds cloud_config_reload_period{10000};   // 0: the file is not watched
  milliseconds cloud_config_reload_timeout{60000};  // deadline of one reconfigure

  // Kubernetes API access.
  std::string master;
  std::string kubeconfig;

  // Debugging and leader migration.
  bool profiling = true;
  bool contention_profiling = false;
  bool enable_leader_migration = false;
  std::string leader_migration_config;

  // Secure serving.
  std::string bind_address;
  int32_t secure_port = 10258;
  std::string cert_dir;
  std::string tls_cert_file;
  std::string tls_private_key_file;
  std::vector<std::string> tls_cipher_suites;
  std::string tls_min_version;
  std::vector<std::string> tls_sni_cert_key;
  int32_t http2_max_streams_per_connection = 0;
  bool disable_http2_serving = false;
  bool permit_port_sharing = false;
  bool permit_address_sharing = false;

  // Delegated authentication and authorization.
  std::string authentication_kubeconfig;
  milliseconds authentication_token_webhook_cache_ttl{10000};
  std::string client_ca_file;
  std::string requestheader_client_ca_file;
  std::vector<std::string> requestheader_username_headers;
  std::vector<std::string> requestheader_group_headers;
  std::vector<std::string> requestheader_extra_headers_prefix;
  std::vector<std::string> requestheader_allowed_names;
  std::vector<std::string> requestheader_uid_headers;
  bool authentication_skip_lookup = false;
  bool authentication_tolerate_lookup_failure = false;
  std::string authorization_kubeconfig;
  milliseconds authorization_webhook_cache_authorized_ttl{10000};
  milliseconds authorization_webhook_cache_unauthorized_ttl{10000};
  std::vector<std::string> authorization_always_allow_paths;

  // Webhooks (alpha upstream).
  std::vector<std::string> webhooks;
  std::string webhook_bind_address;
  int32_t webhook_secure_port = 10260;
  std::string webhook_cert_dir;
  std::string webhook_tls_cert_file;
  std::string webhook_tls_private_key_file;

  // Metrics (component-base).
  std::string allow_metric_labels;
  std::string allow_metric_labels_manifest;
  std::vector<std::string> disabled_metrics;
  std::string show_hidden_metrics_for_version;

  // Logging.
  int32_t verbosity = 0;
  std::string vmodule;
  milliseconds log_flush_frequency{5000};
  std::string logging_format;
  std::string log_json_info_buffer_size;
  bool log_json_split_stream = false;
  std::string log_text_info_buffer_size;
  bool log_text_split_stream = false;

  bool help = false;
  bool version = false;
};

// The flag set bound to an Options. Keep the FlagSet alive while parsing.
// known_controllers: the --help list of controller names (controllers::controllersForHelp();
// the controllers, and so their names, live above this library).
std::unique_ptr<FlagSet> makeFlagSet(Options& options, const std::string& default_plugin_dir,
                                     std::string_view known_controllers);

// Upstream's validation rules plus ccm's own; errors name the flag. --controllers is checked
// against the controller registry (controllers::validateControllersFlag).
Status validate(const Options& options);

}  // namespace ccm::options
