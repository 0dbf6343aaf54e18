// Flag registration and validation for cloud-controller-manager.
#include "host/options/options.hpp"

#include <fmt/format.h>

#include "host/runtime/text.hpp"

namespace ccm::options {
namespace {

using Support = FlagSet::Support;

FlagSet::Flag& accepted(FlagSet::Flag& f) {
  f.support = Support::Accepted;
  return f;
}

}  // namespace

std::unique_ptr<FlagSet> makeFlagSet(Options& o, const std::string& default_plugin_dir,
                                     std::string_view known_controllers) {
  auto fs = std::make_unique<FlagSet>("cloud-controller-manager");
  using std::chrono::milliseconds;

  fs->setGroup("Cloud provider flags");
  fs->addString("cloud-provider", &o.cloud_provider, "",
                "The provider for cloud services: the name of a provider plugin, loaded from "
                "<cloud-provider-plugin-dir>/<name>.so. Several comma-separated names load "
                "several providers into one host (a hybrid cluster).");
  fs->addString("cloud-config", &o.cloud_config, "",
                "The path to the cloud provider configuration file. Empty string for no "
                "configuration file. With several providers: NAME=PATH,NAME=PATH.");
  fs->addStrings("provider-node-selector", &o.provider_node_selectors, {},
                 "With several --cloud-provider: NAME=label-selector (repeatable); a node without "
                 "a providerID belongs to the provider whose selector matches its labels "
                 "(key=value, key!=value, key, !key; comma-separated requirements all hold).");
  fs->addString("provider-discovery", &o.provider_discovery, "none",
                "With several --cloud-provider: how a node without a providerID that no "
                "--provider-node-selector matches finds its provider: none (it is left alone) "
                "or exists (every provider is asked whether the instance exists; exactly one "
                "must say so).");
  fs->addStrings("load-balancer-class-provider", &o.load_balancer_class_providers, {},
                 "With several --cloud-provider: CLASS=NAME (repeatable); Services of that "
                 "spec.loadBalancerClass go to provider NAME (and the service controller handles "
                 "the class). Services without a class go to the first provider.");
  fs->addString("load-balancer-nodes", &o.load_balancer_nodes, "own",
                "With several --cloud-provider: the nodes passed to a provider's load balancers: "
                "own (only the nodes that provider owns) or all.");
  fs->addString("cloud-provider-plugin-dir", &o.cloud_provider_plugin_dir, default_plugin_dir,
                "Directory holding provider plugins (<name>.so). The directory and the plugin "
                "must not be writable by other users.");
  fs->addDuration("cloud-provider-call-timeout", &o.cloud_provider_call_timeout, milliseconds(0),
                  "Deadline of one call into the provider plugin. 0 uses per-capability "
                  "defaults: 30s for instances and routes, 60s for batch metadata, 2m for load "
                  "balancers.");
  fs->addDuration("provider-start-timeout", &o.provider_start_timeout, milliseconds(120000),
                  "Deadline of the provider's start-up calls (its entry point, then create with "
                  "--cloud-config). A provider that has not returned by then is given up on and "
                  "the process exits 1. Must be positive.");
  fs->addString("provider-isolation", &o.provider_isolation, "none",
                "Where the provider plugin runs: 'none' (in this process) or 'process' (in a "
                "child process; a crash or hang there answers calls UNAVAILABLE while the "
                "child is restarted with back-off, and the host keeps running).");
  fs->addDuration("cloud-config-reload-period", &o.cloud_config_reload_period, milliseconds(10000),
                  "How often the --cloud-config file is read to look for changes (e.g. a "
                  "rotated credential in a Secret); a change is handed to the provider without a "
                  "restart. 0 turns the watch off.");
  fs->addDuration("cloud-config-reload-timeout", &o.cloud_config_reload_timeout,
                  milliseconds(60000),
                  "Deadline of the provider's reconfigure after a --cloud-config change; past "
                  "it the provider keeps its old settings.");
  fs->addBool("check-config", &o.check_config, false,
              "Load the provider, validate the flags and --cloud-config, print what would run "
              "and exit (0 when everything is valid).");
  accepted(fs->addString("external-cloud-volume-plugin", &o.external_cloud_volume_plugin, "",
                         "The plugin to use when cloud provider is set to external. Used only by "
                         "kube-controller-manager."));
  accepted(fs->addBool("use-service-account-credentials", &o.use_service_account_credentials, false,
                       "If true, use individual service account credentials for each "
                       "controller."));
  accepted(fs->addBool("allow-untagged-cloud", &o.allow_untagged_cloud, false,
                       "Allow the cluster to run without the cluster-id on cloud instances "
                       "(deprecated)."));

  fs->setGroup("Generic flags");
  fs->addString("cluster-name", &o.cluster_name, "kubernetes",
                "The instance prefix for the cluster.");
  fs->addString("cluster-cidr", &o.cluster_cidr, "",
                "CIDR Range for Pods in cluster (one, or a comma-separated dual-stack pair).");
  fs->addBool("allocate-node-cidrs", &o.allocate_node_cidrs, false,
              "Should CIDRs for Pods be allocated and set on the cloud provider (the node-ipam "
              "controller).");
  fs->addString("cidr-allocator-type", &o.cidr_allocator_type, "RangeAllocator",
                "Type of CIDR allocator to use (RangeAllocator).");
  fs->addBool("configure-cloud-routes", &o.configure_cloud_routes, true,
              "Should CIDRs allocated by allocate-node-cidrs be configured on the cloud "
              "provider.");
  fs->addDuration("route-reconciliation-period", &o.route_reconciliation_period,
                  milliseconds(10000),
                  "The period for reconciling routes created for Nodes by cloud provider.");
  fs->addDuration("node-monitor-period", &o.node_monitor_period, milliseconds(5000),
                  "The period for syncing NodeStatus in the cloud-node-lifecycle controller.");
  accepted(fs->addDuration("node-sync-period", &o.node_sync_period, milliseconds(0),
                           "This flag is deprecated and will be removed in future releases."));
  accepted(fs->addDuration("min-resync-period", &o.min_resync_period,
                           milliseconds(12LL * 3600 * 1000),
                           "The resync period in reflectors will be random between "
                           "MinResyncPeriod and 2*MinResyncPeriod (ccm's controllers resync on "
                           "their own periods)."));
  accepted(fs->addString("kube-api-content-type", &o.kube_api_content_type,
                         "application/vnd.kubernetes.protobuf",
                         "Content type of requests sent to apiserver (ccm always speaks JSON)."));
  fs->addFloat("kube-api-qps", &o.kube_api_qps, 20,
               "QPS to use while talking with kubernetes apiserver.");
  fs->addInt32("kube-api-burst", &o.kube_api_burst, 30,
               "Burst to use while talking with kubernetes apiserver.");
  fs->addDuration("controller-start-interval", &o.controller_start_interval, milliseconds(0),
                  "Interval between starting controller managers.");
  fs->addStrings("controllers", &o.controllers, {"*"},
                 fmt::format("A list of controllers to enable. '*' enables all on-by-default "
                             "controllers, 'foo' enables the controller named 'foo', '-foo' "
                             "disables the controller named 'foo'. All controllers: {}.",
                             known_controllers));
  accepted(fs->addString("feature-gates", &o.feature_gates, "",
                         "A set of key=value pairs that describe feature gates for alpha/"
                         "experimental features."));

  fs->setGroup("Leader election flags");
  fs->addBool("leader-elect", &o.leader_elect, true,
              "Start a leader election client and gain leadership before executing the main "
              "loop.");
  fs->addDuration("leader-elect-lease-duration", &o.leader_elect_lease_duration,
                  milliseconds(15000),
                  "The duration that non-leader candidates will wait after observing a "
                  "leadership renewal until attempting to acquire leadership.");
  fs->addDuration("leader-elect-renew-deadline", &o.leader_elect_renew_deadline,
                  milliseconds(10000),
                  "The interval between attempts by the acting master to renew a leadership "
                  "slot before it stops leading.");
  fs->addDuration("leader-elect-retry-period", &o.leader_elect_retry_period, milliseconds(2000),
                  "The duration the clients should wait between attempting acquisition and "
                  "renewal of a leadership.");
  fs->addString("leader-elect-resource-lock", &o.leader_elect_resource_lock, "leases",
                "The type of resource object that is used for locking during leader election "
                "(only 'leases').");
  fs->addString("leader-elect-resource-name", &o.leader_elect_resource_name,
                "cloud-controller-manager",
                "The name of resource object that is used for locking during leader election.");
  fs->addString("leader-elect-resource-namespace", &o.leader_elect_resource_namespace,
                "kube-system",
                "The namespace of resource object that is used for locking during leader "
                "election.");
  accepted(fs->addBool("enable-leader-migration", &o.enable_leader_migration, false,
                       "Whether to enable controller leader migration."));
  accepted(fs->addString("leader-migration-config", &o.leader_migration_config, "",
                         "Path to the config file for controller leader migration."));

  fs->setGroup("Node controller flags");
  fs->addInt32("concurrent-node-syncs", &o.concurrent_node_syncs, 10,
               "Number of workers initialising nodes concurrently (upstream's default is 1; "
               "see docs/operations.md).");
  fs->addInt32("concurrent-node-status-updates", &o.concurrent_node_status_updates, 0,
               "Number of workers refreshing node addresses concurrently. 0 uses "
               "--concurrent-node-syncs.");
  fs->addDuration("node-status-update-frequency", &o.node_status_update_frequency,
                  milliseconds(300000),
                  "How often the cloud node controller refreshes node addresses.");
  fs->addFloat("node-eviction-rate", &o.node_eviction_rate, 0.1,
               "Nodes per second the lifecycle controller may delete in a healthy zone.");
  fs->addFloat("secondary-node-eviction-rate", &o.secondary_node_eviction_rate, 0.01,
               "Nodes per second the lifecycle controller may delete in an unhealthy zone (0 in "
               "zones smaller than --large-cluster-size-threshold).");
  fs->addFloat("unhealthy-zone-threshold", &o.unhealthy_zone_threshold, 0.55,
               "Fraction of NotReady nodes (at least 3) above which a zone is unhealthy.");
  fs->addInt32("large-cluster-size-threshold", &o.large_cluster_size_threshold, 50,
               "Zones with more nodes than this use --secondary-node-eviction-rate when "
               "unhealthy; smaller unhealthy zones stop deleting nodes.");

  fs->setGroup("Node IPAM controller flags");
  fs->addInt32("node-cidr-mask-size", &o.node_cidr_mask_size, 0,
               "Mask size for node cidr in cluster (single stack; 0 = 24 for IPv4, 64 for "
               "IPv6).");
  fs->addInt32("node-cidr-mask-size-ipv4", &o.node_cidr_mask_size_ipv4, 0,
               "Mask size for IPv4 node cidr in dual-stack cluster (0 = 24).");
  fs->addInt32("node-cidr-mask-size-ipv6", &o.node_cidr_mask_size_ipv6, 0,
               "Mask size for IPv6 node cidr in dual-stack cluster (0 = 64).");

  fs->setGroup("Service controller flags");
  fs->addInt32("concurrent-service-syncs", &o.concurrent_service_syncs, 10,
               "Number of services that are allowed to sync concurrently (upstream's default "
               "is 1).");
  fs->addStrings("load-balancer-class", &o.load_balancer_classes, {},
                 "A spec.loadBalancerClass the service controller handles (repeatable, or "
                 "comma-separated), as well as Services without a class. Services of other "
                 "classes are never touched. Default: only Services without a class.");
  fs->addBool("load-balancer-class-only", &o.load_balancer_class_only, false,
              "Handle only the Services of the --load-balancer-class classes, leaving those "
              "without a class to another load-balancer implementation.");

  fs->setGroup("Kubernetes API flags");
  fs->addString("master", &o.master, "",
                "The address of the Kubernetes API server (overrides any value in kubeconfig).");
  fs->addString("kubeconfig", &o.kubeconfig, "",
                "Path to kubeconfig file with authorization and master location information.");

  fs->setGroup("Debugging flags");
  accepted(fs->addBool("profiling", &o.profiling, true,
                       "Enable profiling via web interface host:port/debug/pprof/."));
  accepted(fs->addBool("contention-profiling", &o.contention_profiling, false,
                       "Enable block profiling, if profiling is enabled."));

  fs->setGroup("Secure serving flags");
  fs->addString("bind-address", &o.bind_address, "0.0.0.0",
                "The IP address on which to listen for the --secure-port port.");
  fs->addInt32("secure-port", &o.secure_port, 10258,
               "The port on which to serve HTTPS with authentication and authorization. If 0, "
               "don't serve HTTPS at all.");
  fs->addString("cert-dir", &o.cert_dir, "",
                "The directory where the TLS certs are located. Ignored if --tls-cert-file and "
                "--tls-private-key-file are provided.");
  fs->addString("tls-cert-file", &o.tls_cert_file, "",
                "File containing the default x509 Certificate for HTTPS.");
  fs->addString("tls-private-key-file", &o.tls_private_key_file, "",
                "File containing the default x509 private key matching --tls-cert-file.");
  accepted(fs->addStrings("tls-cipher-suites", &o.tls_cipher_suites, {},
                          "Comma-separated list of cipher suites for the server."));
  accepted(fs->addString("tls-min-version", &o.tls_min_version, "",
                         "Minimum TLS version supported (ccm always requires TLS 1.2)."));
  accepted(fs->addStrings("tls-sni-cert-key", &o.tls_sni_cert_key, {},
                          "A pair of x509 certificate and private key file paths for SNI."));
  accepted(fs->addInt32("http2-max-streams-per-connection", &o.http2_max_streams_per_connection, 0,
                        "The limit that the server gives to clients for the maximum number "
                        "of streams in an HTTP/2 connection."));
  accepted(fs->addBool("disable-http2-serving", &o.disable_http2_serving, false,
                       "If true, HTTP2 serving will be disabled (ccm serves HTTP/1.1)."));
  fs->addBool("permit-port-sharing", &o.permit_port_sharing, false,
              "If true, SO_REUSEPORT will be used when binding the port.");
  accepted(fs->addBool("permit-address-sharing", &o.permit_address_sharing, false,
                       "If true, SO_REUSEADDR will be used when binding the port (ccm always "
                       "sets it)."));

  fs->setGroup("Authentication flags");
  fs->addString("authentication-kubeconfig", &o.authentication_kubeconfig, "",
                "kubeconfig file pointing at the 'core' kubernetes server with enough rights to "
                "create tokenreviews.authentication.k8s.io (default: the main connection).");
  fs->addDuration("authentication-token-webhook-cache-ttl",
                  &o.authentication_token_webhook_cache_ttl, milliseconds(10000),
                  "The duration to cache responses from the webhook token authenticator.");
  fs->addString("client-ca-file", &o.client_ca_file, "",
                "If set, any request presenting a client certificate signed by one of the "
                "authorities in the client-ca-file is authenticated with an identity "
                "corresponding to the CommonName of the client certificate.");
  fs->addString("requestheader-client-ca-file", &o.requestheader_client_ca_file, "",
                "Root certificate bundle to use to verify client certificates on incoming "
                "requests before trusting usernames in headers specified by "
                "--requestheader-username-headers.");
  fs->addStrings("requestheader-username-headers", &o.requestheader_username_headers,
                 {"x-remote-user"}, "List of request headers to inspect for usernames.");
  fs->addStrings("requestheader-group-headers", &o.requestheader_group_headers,
                 {"x-remote-group"}, "List of request headers to inspect for groups.");
  fs->addStrings("requestheader-extra-headers-prefix", &o.requestheader_extra_headers_prefix,
                 {"x-remote-extra-"}, "List of request header prefixes to inspect.");
  fs->addStrings("requestheader-allowed-names", &o.requestheader_allowed_names, {},
                 "List of client certificate common names to allow to provide usernames in "
                 "headers specified by --requestheader-username-headers. If empty, any client "
                 "certificate validated by the authorities in --requestheader-client-ca-file "
                 "is allowed.");
  accepted(fs->addStrings("requestheader-uid-headers", &o.requestheader_uid_headers, {},
                          "List of request headers to inspect for UIDs (ccm reads no UID from "
                          "front-proxy headers)."));
  accepted(fs->addBool("authentication-skip-lookup", &o.authentication_skip_lookup, false,
                       "If false, the authentication-kubeconfig will be used to lookup missing "
                       "authentication configuration from the cluster."));
  accepted(fs->addBool("authentication-tolerate-lookup-failure",
                       &o.authentication_tolerate_lookup_failure, false,
                       "If true, failures to look up missing authentication configuration from "
                       "the cluster are not considered fatal."));

  fs->setGroup("Authorization flags");
  fs->addString("authorization-kubeconfig", &o.authorization_kubeconfig, "",
                "kubeconfig file pointing at the 'core' kubernetes server with enough rights to "
                "create subjectaccessreviews.authorization.k8s.io (default: the main "
                "connection).");
  fs->addDuration("authorization-webhook-cache-authorized-ttl",
                  &o.authorization_webhook_cache_authorized_ttl, milliseconds(10000),
                  "The duration to cache 'authorized' responses from the webhook authorizer.");
  fs->addDuration("authorization-webhook-cache-unauthorized-ttl",
                  &o.authorization_webhook_cache_unauthorized_ttl, milliseconds(10000),
                  "The duration to cache 'unauthorized' responses from the webhook authorizer.");
  fs->addStrings("authorization-always-allow-paths", &o.authorization_always_allow_paths,
                 {"/healthz", "/readyz", "/livez"},
                 "A list of HTTP paths to skip during authorization, i.e. these are authorized "
                 "without contacting the 'core' kubernetes server.");

  fs->setGroup("Webhook flags");
  accepted(fs->addStrings("webhooks", &o.webhooks, {},
                          "A list of webhooks to enable (no webhooks are implemented)."));
  accepted(fs->addString("webhook-bind-address", &o.webhook_bind_address, "0.0.0.0",
                         "The IP address on which to listen for the --webhook-secure-port."));
  accepted(fs->addInt32("webhook-secure-port", &o.webhook_secure_port, 10260,
                        "Secure port to serve cloud provider webhooks."));
  accepted(fs->addString("webhook-cert-dir", &o.webhook_cert_dir, "",
                         "The directory where the webhook server's TLS certs are located."));
  accepted(fs->addString("webhook-tls-cert-file", &o.webhook_tls_cert_file, "",
                         "File containing the x509 certificate of the webhook server."));
  accepted(fs->addString("webhook-tls-private-key-file", &o.webhook_tls_private_key_file, "",
                         "File containing the x509 private key of the webhook server."));

  fs->setGroup("Metrics flags");
  accepted(fs->addString("allow-metric-labels", &o.allow_metric_labels, "",
                         "The map from metric-label to value allow-list of this label "
                         "(ccm's labels are bounded sets already)."));
  accepted(fs->addString("allow-metric-labels-manifest", &o.allow_metric_labels_manifest, "",
                         "The path to the manifest file that contains the allow-list mapping."));
  accepted(fs->addStrings("disabled-metrics", &o.disabled_metrics, {},
                          "This flag provides an escape hatch for misbehaving metrics: the fully "
                          "qualified names of metrics to disable."));
  accepted(fs->addString("show-hidden-metrics-for-version", &o.show_hidden_metrics_for_version,
                         "",
                         "The previous version for which you want to show hidden metrics (ccm "
                         "hides none)."));

  fs->setGroup("Logging flags");
  auto& v = fs->addInt32("v", &o.verbosity, 0, "number for the log level verbosity");
  v.shorthand = "v";
  fs->addString("logging-format", &o.logging_format, "text",
                "Sets the log format. Permitted formats: \"json\", \"text\".");
  accepted(fs->addString("vmodule", &o.vmodule, "",
                         "comma-separated list of pattern=N settings for file-filtered "
                         "logging"));
  accepted(fs->addString("log-json-info-buffer-size", &o.log_json_info_buffer_size, "0",
                         "[Alpha] In JSON format with split output streams, the info messages "
                         "can be buffered for a while to increase performance."));
  accepted(fs->addBool("log-json-split-stream", &o.log_json_split_stream, false,
                       "[Alpha] In JSON format, write error messages to stderr and info "
                       "messages to stdout (ccm writes everything to stderr)."));
  accepted(fs->addString("log-text-info-buffer-size", &o.log_text_info_buffer_size, "0",
                         "[Alpha] In text format with split output streams, the info messages "
                         "can be buffered for a while to increase performance."));
  accepted(fs->addBool("log-text-split-stream", &o.log_text_split_stream, false,
                       "[Alpha] In text format, write error messages to stderr and info "
                       "messages to stdout (ccm writes everything to stderr)."));
  accepted(fs->addDuration("log-flush-frequency", &o.log_flush_frequency, milliseconds(5000),
                           "Maximum number of seconds between log flushes (ccm writes every "
                           "line at once)."));

  fs->setGroup("Global flags");
  auto& h = fs->addBool("help", &o.help, false, "help for cloud-controller-manager");
  h.shorthand = "h";
  fs->addBool("version", &o.version, false, "Print version information and quit");
  return fs;
}

Status validate(const Options& o) {
  auto bad = [](std::string msg) { return Status(Code::InvalidArgument, std::move(msg)); };
  if (o.cloud_provider.empty()) {
    return bad("--cloud-provider cannot be empty");
  }
  if (o.provider_isolation != "none" && o.provider_isolation != "process") {
    return Status(Code::InvalidArgument,
                  fmt::format("--provider-isolation={}: must be 'none' or 'process'",
                              o.provider_isolation));
  }
  if (o.cloud_config_reload_period.count() < 0) {
    return bad("--cloud-config-reload-period cannot be negative (0 turns the watch off)");
  }
  if (o.cloud_config_reload_timeout.count() <= 0) {
    return bad("--cloud-config-reload-timeout must be greater than 0");
  }
  if (o.leader_elect && o.leader_elect_resource_lock != "leases") {
    return bad("--leader-elect-resource-lock: resourceLock value must be \"leases\"");
  }
  if (o.leader_elect) {
    if (o.leader_elect_lease_duration <= o.leader_elect_renew_deadline) {
      return bad(
          "--leader-elect-lease-duration must be greater than "
          "--leader-elect-renew-deadline");
    }
    if (o.leader_elect_renew_deadline.count() <= o.leader_elect_retry_period.count() * 12 / 10) {
      return bad(
          "--leader-elect-renew-deadline must be greater than 1.2 x "
          "--leader-elect-retry-period");
    }
    if (o.leader_elect_retry_period.count() < 1) {
      return bad("--leader-elect-retry-period must be positive");
    }
  }
  if (o.concurrent_node_syncs <= 0) {
    return bad("--concurrent-node-syncs must be greater than 0");
  }
  if (o.concurrent_node_status_updates < 0) {
    return bad("--concurrent-node-status-updates must be 0 or greater");
  }
  if (o.concurrent_service_syncs <= 0) {
    return bad("--concurrent-service-syncs must be greater than 0");
  }
  if (o.kube_api_burst < 0) {
    return bad("--kube-api-burst must be 0 or greater");
  }
  if (o.secure_port < 0 || o.secure_port > 65535) {
    return bad(fmt::format("--secure-port {} must be between 0 and 65535", o.secure_port));
  }
  if (o.tls_cert_file.empty() != o.tls_private_key_file.empty()) {
    return bad("--tls-cert-file and --tls-private-key-file must be given together");
  }
  if (o.logging_format != "text" && o.logging_format != "json") {
    return bad(
        fmt::format("--logging-format: format \"{}\" is unsupported (permitted: json, "
                    "text)",
                    o.logging_format));
  }
  if (o.verbosity < 0) {
    return bad("--v must be 0 or greater");
  }
  if (o.node_eviction_rate < 0 || o.secondary_node_eviction_rate < 0) {
    return bad("--node-eviction-rate and --secondary-node-eviction-rate must be 0 or greater");
  }
  if (o.unhealthy_zone_threshold <= 0 || o.unhealthy_zone_threshold > 1) {
    return bad("--unhealthy-zone-threshold must be in (0, 1]");
  }
  for (auto [flag, d] :
       {std::pair{"--node-monitor-period", o.node_monitor_period},
        std::pair{"--route-reconciliation-period", o.route_reconciliation_period},
        std::pair{"--node-status-update-frequency", o.node_status_update_frequency},
        std::pair{"--provider-start-timeout", o.provider_start_timeout}}) {
    if (d.count() <= 0) {
      return bad(fmt::format("{} must be positive", flag));
    }
  }
  if (o.cidr_allocator_type != "RangeAllocator") {
    return bad(fmt::format("--cidr-allocator-type: \"{}\" is not supported (only RangeAllocator)",
                           o.cidr_allocator_type));
  }
  for (const auto& name : o.load_balancer_classes) {
    if (!text::isQualifiedName(name)) {
      return bad(fmt::format(
          "--load-balancer-class \"{}\" is not a valid loadBalancerClass: a qualified name "
          "such as example.com/internal-vip (an optional DNS subdomain and '/', then at most "
          "63 characters of [A-Za-z0-9-_.] starting and ending alphanumeric)",
          name));
    }
  }
  if (o.load_balancer_class_only && o.load_balancer_classes.empty()) {
    return bad(
        "--load-balancer-class-only needs at least one --load-balancer-class (otherwise the "
        "service controller would handle no Service)");
  }
  return okStatus();
}

}  // namespace ccm::options
