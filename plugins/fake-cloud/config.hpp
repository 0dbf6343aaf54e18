// fake-cloud configuration: the provider's settings and the description of its in-memory
// cloud (instances, injected latency, errors and throttling), parsed from YAML or JSON.
// docs/providers/fake-cloud.md documents every key.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/types.hpp"

namespace ccm::fakecloud {

using sdk::Labels;
using sdk::NodeAddress;

enum class InstanceState { Running, Shutdown, Absent, Unknown };

// One virtual machine of the fake cloud.
struct InstanceSpec {
  std::string name;         // matches the Node name
  std::string provider_id;  // default: <providerIdPrefix><name>
  std::string type;
  std::string zone;
  std::string region;
  std::vector<NodeAddress> addresses;
  Labels labels;  // additional labels offered to the node
  InstanceState state = InstanceState::Running;

  bool operator==(const InstanceSpec&) const = default;
};

// Instances that exist for every node not listed explicitly (for large clusters and the demo).
struct AutoInstances {
  bool enabled = false;
  std::vector<std::string> zones;  // node i (trailing number, else a hash) goes to zones[i % n]
  std::string type = "fake.medium";
  std::string region;                        // default: the cloud's region
  std::string internal_cidr = "10.0.0.0/8";  // derived InternalIP when the node brings none
  std::string external_cidr;                 // derived ExternalIP when set
  bool hostname_address = true;              // publish a Hostname address equal to the node name
  Labels labels;

  bool operator==(const AutoInstances&) const = default;
};

// An injected failure: calls of `op` (or every op for "*") fail with `code`.
struct Fault {
  std::string op;
  ccm_status code = CCM_STATUS_UNAVAILABLE;
  std::string message = "injected fault";
  double probability = 1.0;        // chance that a matching call fails
  int64_t count = -1;              // fail only the first N matching calls (-1: no limit)
  std::vector<std::string> nodes;  // only for these node names (instance ops); empty = all
  std::chrono::milliseconds retry_after{0};

  bool operator==(const Fault&) const = default;
};

struct Throttle {
  double qps = 0;  // 0 disables throttling
  double burst = 1;
  std::chrono::milliseconds retry_after{1000};

  bool operator==(const Throttle&) const = default;
};

struct Capabilities {
  bool instances = true;
  bool batch = true;
  bool load_balancer = true;
  bool routes = true;
};

// What is re-read from cloudFile while the provider runs.
struct World {
  std::string region = "fake-region-1";
  std::string provider_id_prefix = "fake://";
  std::vector<InstanceSpec> instances;
  AutoInstances auto_instances;
  // What a node that matches no instance is: NOT_FOUND (default) or UNKNOWN.
  bool unknown_when_unlisted = false;
  std::map<std::string, std::chrono::milliseconds, std::less<>> latency;  // op or "*"
  bool latency_ignores_deadline = false;  // simulate a cloud call that hangs past its deadline
  std::vector<Fault> faults;
  Throttle throttle;
  // Extra annotations every load balancer status carries (set, and keys to remove), beside
  // fake-cloud.ccm.io/load-balancer-id. Not checked here: the host refuses keys outside
  // kAnnotationDomain, which is what tests use them for.
  Labels lb_annotations;
  std::vector<std::string> lb_removed_annotations;

  bool operator==(const World&) const = default;
};

// What fake-cloud declares to the host (ABI 1.1).
inline constexpr const char* kProviderIdScheme = "fake://";
inline constexpr const char* kAnnotationDomain = "fake-cloud.ccm.io";
inline constexpr const char* kMetricNamespace = "fakecloud";

struct Config {
  World world;
  std::string cloud_file;  // re-read on change; its keys override world's
  std::string state_file;  // load balancers and routes, persisted (the cloud's "disk")
  std::string lb_ip_pool = "203.0.113.0/24";
  std::string lb_hostname_suffix;  // when set, ingress also gets <name>.<suffix>
  Capabilities capabilities;
  uint32_t max_concurrency = 0;
  uint32_t max_batch_size = 500;
};

// Every operation name the fake cloud knows (for latency and faults).
const std::vector<std::string_view>& knownOperations();

// Parses the provider config (the bytes of --cloud-config). Throws ConfigError naming the key
// and line on bad input. An empty text yields the defaults.
Config parseConfig(std::string_view text);

// Parses a cloud file (the World part only) on top of base.
World parseWorld(std::string_view text, const World& base, std::string_view source);

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ccm::fakecloud
