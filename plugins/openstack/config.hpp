// Config: the provider's view of cloud.conf ([Global], [Networking], [LoadBalancer],
// [LoadBalancerClass "x"], [Route], [Metadata]) with OCCM's keys and defaults, and the parser
// that reads it, validates it and lists the keys it does not use.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/openstack/ip_address.hpp"
#include "ccm/types.hpp"

namespace ccm::openstack {

using Duration = std::chrono::nanoseconds;

struct GlobalConfig {
  std::string auth_url;
  std::string username;
  std::string user_id;
  std::string password;
  std::string tenant_id;
  std::string tenant_name;
  std::string domain_id;
  std::string domain_name;
  std::string user_domain_id;
  std::string user_domain_name;
  std::string tenant_domain_id;
  std::string tenant_domain_name;
  std::string region;
  std::string endpoint_type = "public";  // os-endpoint-type: public, internal or admin
  bool endpoint_type_set = false;        // written in cloud.conf (clouds.yaml does not override)
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  bool tls_insecure = false;
  std::string application_credential_id;
  std::string application_credential_name;
  std::string application_credential_secret;
  std::string trust_id;
  std::string trustee_id;
  std::string trustee_password;
  std::string token;
  bool use_clouds = false;
  std::string clouds_file;
  std::string cloud;
};

struct NetworkingConfig {
  bool ipv6_support_disabled = false;
  std::vector<std::string> public_network_names;
  std::vector<std::string> internal_network_names;
  std::string address_sort_order;
  std::vector<Cidr> address_sort_cidrs;  // parsed address_sort_order, in priority order

  bool operator==(const NetworkingConfig&) const = default;
};

// A "floating-subnet-tags" spec: which Neutron filter to use and the tags.
struct TagFilter {
  std::string param;  // "tags", "tags-any", "not-tags" or "not-tags-any"
  std::string tags;   // comma-separated, as Neutron wants it
};

// [LoadBalancerClass "name"]
struct LoadBalancerClass {
  std::string floating_network_id;
  std::string floating_subnet_id;
  std::string floating_subnet;
  std::string floating_subnet_tags;
  std::string network_id;
  std::string subnet_id;
  std::string member_subnet_id;

  bool operator==(const LoadBalancerClass&) const = default;
};

struct LoadBalancerConfig {
  bool enabled = true;
  std::string lb_version;
  std::string subnet_id;
  std::string member_subnet_id;
  std::string network_id;
  std::string floating_network_id;
  std::string floating_subnet_id;
  std::string floating_subnet;
  std::string floating_subnet_tags;
  std::string lb_method = "ROUND_ROBIN";
  bool lb_method_set = false;  // written in the file (ovn's default differs)
  std::string lb_provider = "amphora";
  bool create_monitor = false;
  Duration monitor_delay = std::chrono::seconds(5);
  Duration monitor_timeout = std::chrono::seconds(3);
  uint32_t monitor_max_retries = 1;
  uint32_t monitor_max_retries_down = 3;
  bool manage_security_groups = false;
  bool internal_lb = false;
  std::string node_selector;
  bool cascade_delete = true;
  std::string flavor_id;
  std::string availability_zone;
  bool enable_ingress_hostname = false;
  std::string ingress_hostname_suffix = "nip.io";
  std::string default_tls_container_ref;
  std::string container_store = "barbican";
  int64_t max_shared_lb = 2;
  bool provider_requires_serial_api_calls = false;
  // ccm extension: how long one call waits in line for Octavia to finish provisioning before
  // answering FAILED_PRECONDITION with a retry-after (the host re-queues the Service).
  Duration active_wait_timeout = std::chrono::seconds(30);
  std::map<std::string, LoadBalancerClass> classes;

  bool operator==(const LoadBalancerConfig&) const = default;
};

struct RouteConfig {
  std::string router_id;

  bool operator==(const RouteConfig&) const = default;
};

struct MetadataConfig {
  std::string search_order = "configDrive,metadataService";
  Duration request_timeout = std::chrono::seconds(60);

  bool operator==(const MetadataConfig&) const = default;
};

struct Config {
  GlobalConfig global;
  NetworkingConfig networking;
  LoadBalancerConfig load_balancer;
  RouteConfig route;
  MetadataConfig metadata;
  // Not from the file: OS_CCM_REGIONAL=true makes provider IDs carry the region.
  bool regional_provider_id = false;
};

struct ParsedConfig {
  Config config;
  std::vector<std::string> warnings;  // unknown sections/keys, ignored options
};

// Parses and validates cloud.conf text. Refusals are INVALID_ARGUMENT with a message that
// names the section and key ("[Global] auth-url: required").
sdk::Result<ParsedConfig> parseConfig(std::string_view text);

// Parses a node selector ("k=v, k2"): key -> value, an absent value meaning "key present".
sdk::Result<std::map<std::string, std::optional<std::string>>> parseNodeSelector(
    std::string_view text);

// Parses a floating-subnet-tags spec: '!' negates, '&' means all tags must match.
sdk::Result<TagFilter> parseTagFilter(std::string_view text);

// The first setting, as "[Section] key", that differs between running and next other than
// the credentials ([Global] user, password, application credential, trust and token keys),
// or "" when only credentials differ: what a reconfigure may not change.
std::string fixedSettingChanged(const Config& running, const Config& next);

// The names of the secret values in a config (to register with the host).
std::vector<std::string> configSecrets(const Config& config);

}  // namespace ccm::openstack
