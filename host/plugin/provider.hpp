// Provider: the cloud provider as the host's controllers see it. One implementation adapts a
// plugin loaded through the C ABI (AbiProvider); tests may implement it directly.
//
// Every call is deadline-bound and returns a typed result: a ccm::Status with the ABI's code
// set (retry-after included) or the value. Existence and power are tri-states; nothing here
// ever turns an error into "not found".
//
// THREAD: every call may be made from any thread; the adapter enforces the plugin's declared
// concurrency limits and the ABI's per-object rules are the callers' job (controllers never
// run two mutating calls for one object at once).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ccm/types.hpp"
#include "host/runtime/status.hpp"

namespace ccm::plugin {

using sdk::Existence;
using sdk::InstanceMetadata;
using sdk::LoadBalancerStatus;
using sdk::NodeAddress;
using sdk::Power;
using sdk::Route;

struct KeyValueRef {
  std::string_view key;
  std::string_view value;
};

struct AddressRef {
  std::string_view type;
  std::string_view address;
};

struct NodeInfoRef {
  std::string_view machine_id;
  std::string_view system_uuid;
  std::string_view boot_id;
  std::string_view kernel_version;
  std::string_view os_image;
  std::string_view container_runtime_version;
  std::string_view kubelet_version;
  std::string_view operating_system;
  std::string_view architecture;
};

// A Node as passed to the provider; views into the caller's objects, valid for the call.
struct NodeRef {
  std::string_view name;
  std::string_view uid;
  std::string_view provider_id;
  std::span<const KeyValueRef> labels;
  std::span<const KeyValueRef> annotations;
  std::span<const AddressRef> addresses;
  NodeInfoRef node_info;
  std::string_view object_json;  // passed only when the capability asked for it
};

struct ServicePortRef {
  std::string_view name;
  std::string_view protocol;
  int32_t port = 0;
  int32_t node_port = 0;
  std::string_view target_port;
  std::string_view app_protocol;
};

// A Service as passed to the provider; views, valid for the call.
struct ServiceRef {
  std::string_view namespace_name;
  std::string_view name;
  std::string_view uid;
  std::span<const KeyValueRef> labels;
  std::span<const KeyValueRef> annotations;
  std::string_view type;
  std::span<const ServicePortRef> ports;
  std::string_view load_balancer_ip;
  std::span<const std::string_view> source_ranges;
  std::string_view external_traffic_policy;
  int32_t health_check_node_port = 0;
  std::span<const std::string_view> ip_families;
  std::string_view load_balancer_class;
  std::string_view session_affinity;
  std::string_view cluster_ip;
  const LoadBalancerStatus* current_status = nullptr;  // may be null (= empty)
  std::string_view object_json;
};

// Which optional interfaces the provider has, and what it declared about them.
struct CapabilityInfo {
  bool present = false;
  uint32_t max_concurrency = 0;  // 0 = no limit declared
  bool wants_object_json = false;
};

struct ProviderInfo {
  std::string name;
  std::string version;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  std::string path;  // the .so it came from
  // Declared since ABI 1.1; empty when not declared (always for a 1.0 plugin).
  std::string provider_id_prefix;
  std::string annotation_domain;
  std::string metric_namespace;
  CapabilityInfo instances;
  CapabilityInfo instances_batch;
  uint32_t max_batch_size = 0;  // 0 = no limit
  CapabilityInfo load_balancer;
  CapabilityInfo routes;

  // "ccm.instances/1, ccm.instances.batch/1 (max batch 500), ..."
  std::string capabilityList() const;
};

// The result of one node of a batch metadata call.
using MetadataResult = StatusOr<InstanceMetadata>;

// Where providers keep their own converted forms of one host set (a node-set snapshot handed
// to every load balancer's call), so that a form is built once per set and shared by every
// call made with it instead of once per call. Owned by whoever owns the set.
//
// THREAD: every method may be called from any thread; the first caller for a key builds the
// form while later ones wait for it.
class HostForms {
 public:
  HostForms() = default;
  HostForms(const HostForms&) = delete;
  HostForms& operator=(const HostForms&) = delete;

  // The form built under `key` (an address the provider owns), built now by `build` if there
  // is none yet. A form stays alive as long as someone holds it, also after clear().
  std::shared_ptr<const void> get(const void* key,
                                  const std::function<std::shared_ptr<const void>()>& build) const;
  // Drops every form (the set is not going to be used for a while).
  void clear() const;

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::pair<const void*, std::shared_ptr<const void>>> forms_;  // guarded
};

// Hosts shared by many load-balancer calls: the refs, and the set's forms (may be null: then
// every call converts the refs itself).
struct SharedHosts {
  std::span<const NodeRef> refs;
  const HostForms* forms = nullptr;
};

class Provider {
 public:
  virtual ~Provider() = default;

  virtual const ProviderInfo& info() const = 0;

  // ccm.instances/1. Unimplemented when the capability is absent.
  virtual StatusOr<Existence> instanceExists(const NodeRef& node) = 0;
  virtual StatusOr<Power> instanceShutdown(const NodeRef& node) = 0;
  // std::nullopt = the provider has no metadata yet (upstream's nil metadata).
  virtual StatusOr<std::optional<InstanceMetadata>> instanceMetadata(const NodeRef& node) = 0;

  // ccm.instances.batch/1: one result per node, in order. Unimplemented when absent.
  virtual StatusOr<std::vector<MetadataResult>> instanceMetadataBatch(
      std::span<const NodeRef> nodes) = 0;

  // ccm.loadbalancer/1. std::nullopt from get = no load balancer exists.
  virtual StatusOr<std::optional<LoadBalancerStatus>> getLoadBalancer(
      std::string_view cluster_name, const ServiceRef& service) = 0;
  virtual StatusOr<std::string> getLoadBalancerName(std::string_view cluster_name,
                                                    const ServiceRef& service) = 0;
  virtual StatusOr<LoadBalancerStatus> ensureLoadBalancer(std::string_view cluster_name,
                                                          const ServiceRef& service,
                                                          std::span<const NodeRef> nodes) = 0;
  virtual Status updateLoadBalancer(std::string_view cluster_name, const ServiceRef& service,
                                    std::span<const NodeRef> nodes) = 0;
  virtual Status ensureLoadBalancerDeleted(std::string_view cluster_name,
                                           const ServiceRef& service) = 0;
  // Ensure and update with a host set many calls share: a provider may convert the hosts once
  // per set (AbiProvider does: one copy of 5,000 hosts for 500 load balancers, not 500). By
  // default the refs are passed to the calls above.
  virtual StatusOr<LoadBalancerStatus> ensureLoadBalancerShared(std::string_view cluster_name,
                                                                const ServiceRef& service,
                                                                const SharedHosts& hosts) {
    return ensureLoadBalancer(cluster_name, service, hosts.refs);
  }
  virtual Status updateLoadBalancerShared(std::string_view cluster_name,
                                          const ServiceRef& service, const SharedHosts& hosts) {
    return updateLoadBalancer(cluster_name, service, hosts.refs);
  }

  // ccm.routes/1.
  virtual StatusOr<std::vector<Route>> listRoutes(std::string_view cluster_name) = 0;
  virtual Status createRoute(std::string_view cluster_name, std::string_view name_hint,
                             const Route& route) = 0;
  virtual Status deleteRoute(std::string_view cluster_name, const Route& route) = 0;

  // The annotation domain of the provider serving load balancers of that class ("" = no
  // class): the only domain whose Service annotations the host writes for it. One provider
  // serves every class; a set of providers (host/providers) answers per class.
  virtual std::string_view annotationDomainFor(std::string_view load_balancer_class) const {
    (void)load_balancer_class;
    return info().annotation_domain;
  }

  // Cancels every call in flight (is_cancelled turns true) and refuses new ones. Used on
  // shutdown and on lost leadership. THREAD: any.
  virtual void cancelAll() = 0;

  // The name of the provider that owns the node, decided without a call into any provider
  // ("" when that cannot tell). One provider owns every node; a set of providers answers by
  // its routing rules (host/providers). THREAD: any; quick.
  virtual std::string ownerNameOf(const NodeRef& node) const {
    (void)node;
    return info().name;
  }

  // The provider's health check (`provider-<name>`): OK while it can take calls, else why
  // not. THREAD: any; quick, never waits for a call.
  virtual Status health() const { return okStatus(); }

  // Applies new --cloud-config bytes without a restart (ABI 1.1 reconfigure). OK: calls that
  // start from now on use them. Unimplemented: the provider cannot (the change takes effect at
  // the next restart). Any other error: the provider kept its old settings; the message says
  // why. THREAD: any, but never two at once (the adapter serialises them).
  virtual Status reconfigure(std::string_view config) {
    (void)config;
    return Status(Code::Unimplemented, "the provider cannot apply a new configuration");
  }
};

}  // namespace ccm::plugin
