/*
 * ccm/provider_abi.h — the ccm cloud-provider plugin ABI, major version 1.
 *
 * This header is the whole contract between the ccm host (cloud-controller-manager) and a
 * provider plugin: a shared library that exports exactly one symbol, ccm_provider_entry_v1.
 * It is pure C11, depends only on <stdint.h>, <stddef.h> and <stdbool.h>, and compiles with
 * -std=c11 -Wall -Wextra -pedantic -Werror as C and as C++.
 *
 * Lifecycle (docs/writing-a-provider.md has the long version):
 *
 *   load ──> ccm_provider_entry_v1 (negotiate) ──> create(config) ──> calls ... ──> destroy
 *
 *   1. The host dlopens <plugin-dir>/<name>.so (local binding, all symbols resolved at load)
 *      and calls ccm_provider_entry_v1 once, before anything else.
 *   2. The plugin answers with a pointer to its static ccm_plugin table, choosing an ABI minor
 *      no higher than the host's, or refuses (non-OK status plus a message).
 *   3. The host calls create() with the bytes of --cloud-config; the plugin parses them and
 *      returns an opaque provider handle, or refuses with a message naming what is wrong.
 *   4. The host fetches capabilities by versioned string ID ("ccm.instances/1", ...) and calls
 *      them from its controller workers.
 *   5. At shutdown the host calls destroy(). The library is never unloaded.
 *
 * Evolution rules for major 1:
 *   - Every struct that can grow starts with uint32_t struct_size. The receiver copies
 *     min(sender size, own size) bytes into a zeroed struct of its own size; a field beyond
 *     the sender's struct_size reads as zero/NULL, which always means "absent".
 *   - Fields and function slots are only ever appended, each marked with the minor that added
 *     it ("since 1.0"). Nothing is reordered, resized, retyped or removed within a major.
 *   - ccm_str, ccm_kv and ccm_node_address are frozen value types (pointer+length pairs used
 *     in arrays): they never grow, so they carry no struct_size.
 *   - An incompatible change to a capability gets a new ID ("ccm.instances/2"); a change to
 *     anything else bumps the major and renames the entry symbol (ccm_provider_entry_v2).
 *
 * Ownership, in one paragraph: everything the host passes in (strings, nodes, services, the
 * config bytes) is borrowed for the duration of the call only. Everything the plugin hands
 * back goes through a host service function keyed by the call's call_id (emit_*, set_error);
 * the host copies it before that function returns, so the plugin may free or reuse its
 * buffers immediately. Nothing is ever freed across the boundary. A call_id is only valid
 * while its call runs: the host ignores (and counts) emits for a finished call.
 *
 * Threads, in one paragraph: lifecycle functions (entry, create, destroy) are called one at a
 * time from a host thread (entry and create from one of their own, so the host can give up on
 * them at the start-up deadline) and never overlap any other call into the plugin; reconfigure (1.1) is
 * the one lifecycle call that runs while capability calls are in flight. Capability functions
 * are called from host worker threads, concurrently up to the limit the capability declares
 * (max_concurrency), never for the same object twice at the same time for mutating calls.
 * Host service functions may be called from any thread.
 *
 * Nothing may unwind across this boundary: no C++ exception, no longjmp.
 *
 * What minor 1.1 added (a 1.0 plugin on a 1.1 host and a 1.1 plugin on a 1.0 host both work:
 * every addition reads as zero/NULL, meaning "absent", on the side that does not know it):
 *   - ccm_plugin: reconfigure (new --cloud-config bytes without a restart), provider_id_prefix
 *     (the providerID scheme the provider owns), annotation_domain (where it may write Service
 *     annotations), metric_namespace (its metrics' own prefix, e.g. OCCM's "openstack").
 *   - ccm_lb_status: annotations to set and annotation keys to remove on the Service, inside
 *     the plugin's annotation_domain, written by the host together with the status.
 *   - ccm_host_services: log_fields, a log line with structured key/value fields.
 *   A plugin that speaks 1.1 must check the host's abi_minor (or the services struct_size)
 *   before calling log_fields: a 1.0 host has no such slot.
 */
#ifndef CCM_PROVIDER_ABI_H
#define CCM_PROVIDER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. This is the one place it is written: the host, the
 * SDK, the checker and the build all read it from here. */
#define CCM_ABI_MAJOR 1
#define CCM_ABI_MINOR 1

/* The minor a plugin answers with at negotiation: the lower of the host's (host->abi_minor)
 * and its own (CCM_ABI_MINOR of the header it was built with). Write
 *   plugin.abi_minor = ccm_abi_negotiated_minor(host->abi_minor, CCM_ABI_MINOR);
 * rather than comparing host->abi_minor with CCM_ABI_MINOR in place: while the header's minor
 * is 0 that comparison of an unsigned value is always false, which -Wextra (-Wtype-limits)
 * reports and -Werror turns into a build failure. Not part of the ABI (nothing crosses the
 * boundary); it compiles into the plugin. */
static inline uint32_t ccm_abi_negotiated_minor(uint32_t host_minor, uint32_t plugin_minor) {
  return host_minor < plugin_minor ? host_minor : plugin_minor;
}

/* The one exported symbol, as a string (what the host looks up). */
#define CCM_PROVIDER_ENTRY_SYMBOL "ccm_provider_entry_v1"

#if defined(_WIN32)
#define CCM_PLUGIN_EXPORT __declspec(dllexport)
#else
#define CCM_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Capability IDs for major 1. Each names one optional interface and its revision. */
#define CCM_CAP_INSTANCES "ccm.instances/1"
#define CCM_CAP_INSTANCES_BATCH "ccm.instances.batch/1"
#define CCM_CAP_LOADBALANCER "ccm.loadbalancer/1"
#define CCM_CAP_ROUTES "ccm.routes/1"

/* ------------------------------------------------------------------------------------------ */
/* Status codes                                                                                */
/* ------------------------------------------------------------------------------------------ */

/*
 * ccm_status: the closed set of results of every fallible call. The numbers follow the
 * canonical gRPC/Abseil codes where one exists. A value outside this list is read by the host
 * as CCM_STATUS_INTERNAL. Next to each code: what the host does when a provider returns it.
 * A message (and, for throttling, a retry-after) is passed with set_error() before returning.
 */
typedef int32_t ccm_status;

/* Success. The call's outputs (emit_*) are used. */
#define CCM_STATUS_OK 0
/* The call noticed is_cancelled() and stopped. Host: drops the result; the work is retried
 * later if it is still wanted (shutdown, lost leadership). */
#define CCM_STATUS_CANCELLED 1
/* The input cannot be acted on (bad annotation, unparsable CIDR). Host: event on the object,
 * retried only with long back-off or when the object changes. */
#define CCM_STATUS_INVALID_ARGUMENT 3
/* The call ran past its deadline. Host: retried with back-off; never taken as an answer. */
#define CCM_STATUS_DEADLINE_EXCEEDED 4
/* The object does not exist in the cloud. Host: meaning depends on the call (a missing load
 * balancer on delete is success; instance existence uses ccm_existence, not this code). */
#define CCM_STATUS_NOT_FOUND 5
/* The object already exists (e.g. a route). Host: treated as success where idempotence
 * allows (route create), otherwise back-off. */
#define CCM_STATUS_ALREADY_EXISTS 6
/* The cloud refused for lack of permission. Host: back-off, Warning event, error log. */
#define CCM_STATUS_PERMISSION_DENIED 7
/* Throttled or out of quota. Host: waits at least the retry-after passed with set_error,
 * else its own back-off. */
#define CCM_STATUS_RESOURCE_EXHAUSTED 8
/* The cloud object is in a state that does not allow the operation (e.g. a load balancer
 * still provisioning). Host: back-off; honours retry-after when given. */
#define CCM_STATUS_FAILED_PRECONDITION 9
/* A concurrent change conflicted. Host: retried soon with back-off. */
#define CCM_STATUS_ABORTED 10
/* The provider does not implement this call. Host: the feature is skipped for this object
 * (e.g. no shutdown taint); a capability whose main call answers this is not used. */
#define CCM_STATUS_UNIMPLEMENTED 12
/* A bug or an unexpected answer. Host: back-off, error log. Unknown codes read as this. */
#define CCM_STATUS_INTERNAL 13
/* The cloud is unreachable or answered 5xx. Host: retried with back-off. */
#define CCM_STATUS_UNAVAILABLE 14
/* The provider's credentials were rejected. Host: back-off, error log. */
#define CCM_STATUS_UNAUTHENTICATED 16
/* Load balancers only: another controller owns this service's load balancer (upstream
 * cloudprovider.ImplementedElsewhere). Host: success without writing status. */
#define CCM_STATUS_IMPLEMENTED_ELSEWHERE 64

/* ------------------------------------------------------------------------------------------ */
/* Value types (frozen: never grow, no struct_size)                                           */
/* ------------------------------------------------------------------------------------------ */

/* A borrowed UTF-8 string view. Not NUL-terminated in general; data may be NULL when size
 * is 0. */
typedef struct ccm_str {
  const char* data;
  size_t size;
} ccm_str;

/* A key/value pair of string views (labels, annotations). */
typedef struct ccm_kv {
  ccm_str key;
  ccm_str value;
} ccm_kv;

/* A node address as Kubernetes spells it: type is one of "Hostname", "InternalIP",
 * "ExternalIP", "InternalDNS", "ExternalDNS". */
typedef struct ccm_node_address {
  ccm_str type;
  ccm_str address;
} ccm_node_address;

/* ------------------------------------------------------------------------------------------ */
/* Calls and host services                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Log levels for ccm_host_services.log. ERROR and WARNING always print; INFO prints at the
 * host's default verbosity; DEBUG at -v=4 and above. */
typedef int32_t ccm_log_level;
#define CCM_LOG_ERROR 0
#define CCM_LOG_WARNING 1
#define CCM_LOG_INFO 2
#define CCM_LOG_DEBUG 3

/* Metric kinds for ccm_host_services.metric. */
typedef int32_t ccm_metric_kind;
#define CCM_METRIC_COUNTER 0   /* value is added */
#define CCM_METRIC_GAUGE 1     /* value is set */
#define CCM_METRIC_HISTOGRAM 2 /* value is observed (seconds); host-chosen buckets */

/* Identifies the host side of one loaded plugin. Assigned by the host at negotiation; the
 * plugin passes it back to every host service. It is an ID, never a pointer. */
typedef uint64_t ccm_host_handle;

/*
 * ccm_call: passed to every call into the plugin, the entry point included.
 * OWNERSHIP: borrowed for the call only.
 * THREAD: the thread the host calls on.
 */
typedef struct ccm_call {
  uint32_t struct_size;
  /* since 1.0: identifies this call to host services; valid until the call returns. */
  uint64_t call_id;
  /* since 1.0: the call must return by this instant of the host's monotonic clock
   * (ccm_host_services.now_monotonic_ns). 0 means no deadline. Lifecycle calls (entry,
   * create, reconfigure) carry the host's start-up or reconfigure deadline: a plugin that
   * has not returned by then is given up on (at start-up the host exits; a reconfigure's
   * outcome stays unknown until it returns). */
  int64_t deadline_monotonic_ns;
} ccm_call;

/* Outputs and their shapes; see ccm_host_services.emit_*. */

/*
 * Instance metadata for one node, the analogue of upstream's cloudprovider.InstanceMetadata.
 * Every field is optional; an empty provider_id is only acceptable when the node already has
 * one. additional_labels in the kubernetes.io / k8s.io domains are dropped by the host.
 */
typedef struct ccm_instance_metadata {
  uint32_t struct_size;
  ccm_str provider_id;                 /* since 1.0, e.g. "fake://vm-0001" */
  ccm_str instance_type;               /* since 1.0 -> node.kubernetes.io/instance-type */
  ccm_str zone;                        /* since 1.0 -> topology.kubernetes.io/zone */
  ccm_str region;                      /* since 1.0 -> topology.kubernetes.io/region */
  const ccm_node_address* addresses;   /* since 1.0, in the order to publish */
  size_t address_count;                /* since 1.0 */
  const ccm_kv* additional_labels;     /* since 1.0 */
  size_t additional_label_count;       /* since 1.0 */
} ccm_instance_metadata;

/* One port of a load balancer ingress (status.loadBalancer.ingress[].ports[]). */
typedef struct ccm_port_status {
  uint32_t struct_size;
  int32_t port;       /* since 1.0 */
  ccm_str protocol;   /* since 1.0: "TCP", "UDP", "SCTP" */
  ccm_str error;      /* since 1.0: empty, or a CamelCase reason */
} ccm_port_status;

/* One ingress point of a load balancer (status.loadBalancer.ingress[]). */
typedef struct ccm_lb_ingress {
  uint32_t struct_size;
  ccm_str ip;                              /* since 1.0 */
  ccm_str hostname;                        /* since 1.0 */
  ccm_str ip_mode;                         /* since 1.0: "", "VIP" or "Proxy" */
  const ccm_port_status* const* ports;     /* since 1.0 */
  size_t port_count;                       /* since 1.0 */
} ccm_lb_ingress;

/* A load balancer's status as the provider reports it, and (since 1.1) the annotations the
 * provider wants on the Service. */
typedef struct ccm_lb_status {
  uint32_t struct_size;
  const ccm_lb_ingress* const* ingress;  /* since 1.0 */
  size_t ingress_count;                 /* since 1.0 */
  /* since 1.1: annotations to set on the Service (e.g. the cloud's load balancer ID). Every
   * key must be "<annotation_domain>/<name>" or "<sub>.<annotation_domain>/<name>" for the
   * plugin's declared ccm_plugin.annotation_domain, with a valid Kubernetes annotation name;
   * the host refuses the whole status otherwise (the call fails as INTERNAL, nothing is
   * written). The host writes them in the same round of writes as the status, only when they
   * differ from what the Service has. */
  const ccm_kv* annotations;
  size_t annotation_count;                /* since 1.1 */
  /* since 1.1: annotation keys (same domain rule) to remove from the Service. A key listed
   * both here and in annotations is refused. */
  const ccm_str* removed_annotations;
  size_t removed_annotation_count;        /* since 1.1 */
} ccm_lb_status;

/* A route for pod traffic to a node, the analogue of upstream's cloudprovider.Route. */
typedef struct ccm_route {
  uint32_t struct_size;
  ccm_str name;                        /* since 1.0: provider-side name; ignored on create */
  ccm_str target_node;                 /* since 1.0: node name */
  ccm_str destination_cidr;            /* since 1.0: e.g. "10.244.3.0/24" */
  bool blackhole;                      /* since 1.0: the route's target is gone */
  bool enable_node_addresses;          /* since 1.0: target_node_addresses is meaningful */
  const ccm_node_address* target_node_addresses; /* since 1.0 */
  size_t target_node_address_count;    /* since 1.0 */
} ccm_route;

/*
 * ccm_host_services: what the host offers the plugin. Passed once, at negotiation; the table
 * stays valid for the life of the process. Slots added in later minors lie beyond an older
 * host's struct_size: check struct_size (the SDK does) before calling them.
 * THREAD: every service may be called from any thread, at any time after negotiation.
 */
typedef struct ccm_host_services {
  uint32_t struct_size;

  /* since 1.0: write one log line through the host's logger (klog text or JSON). The host
   * redacts every value registered with register_secret, replaces invalid UTF-8 and control
   * characters, and cuts a message longer than 16 KiB with a visible marker. A plugin never
   * writes to stdout/stderr itself.
   * OWNERSHIP: message borrowed; copied before return. THREAD: any thread. */
  void (*log)(ccm_host_handle host, ccm_log_level level, ccm_str message);

  /* since 1.0: true once the call should stop: the host is shutting down, lost leadership,
   * or the call's deadline has passed. Long-running calls poll it between cloud requests.
   * Unknown or finished call_ids read as cancelled.
   * OWNERSHIP: nothing is passed. THREAD: any thread. */
  bool (*is_cancelled)(ccm_host_handle host, uint64_t call_id);

  /* since 1.0: the host's clocks. Deadlines are on the monotonic clock. Tests may run the
   * host with a fake clock, so providers should use these rather than the system's.
   * OWNERSHIP: nothing is passed. THREAD: any thread. */
  int64_t (*now_monotonic_ns)(ccm_host_handle host);
  int64_t (*now_unix_ns)(ccm_host_handle host);

  /* since 1.0: attach an error message to the current call (and, for RESOURCE_EXHAUSTED,
   * FAILED_PRECONDITION or UNAVAILABLE, how long to wait before retrying; 0 = host's own
   * back-off). Call it before returning a non-OK status; the last call wins. A message
   * longer than 4 KiB is cut with a visible marker.
   * Returns false when call_id is not a running call (the message is dropped).
   * OWNERSHIP: message borrowed; copied before return. THREAD: any thread. */
  bool (*set_error)(ccm_host_handle host, uint64_t call_id, ccm_str message,
                    int64_t retry_after_ms);

  /* since 1.0: record a metric. The host exposes it on /metrics as
   * ccm_provider_<name> with the given labels after a "provider" label the host adds (the
   * provider's name; a label of that name from the plugin is refused); name must match
   * [a-z_][a-z0-9_]*. Since 1.1,
   * a name that starts with "<metric_namespace>_" for the plugin's declared
   * ccm_plugin.metric_namespace is exposed as it is, without the host's prefix (so a
   * provider can keep the names its users' dashboards know). The first use of a name fixes
   * its kind, help and label names; later uses with a different kind or label set are
   * ignored (and logged once).
   * OWNERSHIP: all strings borrowed; copied before return. THREAD: any thread. */
  void (*metric)(ccm_host_handle host, ccm_metric_kind kind, ccm_str name, ccm_str help,
                 const ccm_kv* labels, size_t label_count, double value);

  /* since 1.0: declare a secret (password, token, application-credential secret). The host
   * replaces it with "<redacted>" in every log line it writes from then on, whoever logs it.
   * Values shorter than 4 bytes are ignored.
   * OWNERSHIP: value borrowed; copied before return. THREAD: any thread. */
  void (*register_secret)(ccm_host_handle host, ccm_str value);

  /* since 1.0: deliver the result of instance_metadata (index 0) or of one node of
   * instance_metadata_batch (index = the node's position in the input array).
   * Returns false if call_id is not running or index is out of range (dropped).
   * OWNERSHIP: metadata and everything it points to borrowed; copied before return.
   * THREAD: any thread, while the call runs. */
  bool (*emit_instance_metadata)(ccm_host_handle host, uint64_t call_id, size_t index,
                                 const ccm_instance_metadata* metadata);

  /* since 1.0: per-node failure inside instance_metadata_batch: that node's result is this
   * status (and message) instead of metadata. A node with neither reads as UNAVAILABLE:
   * the host never assumes an answer it was not given.
   * OWNERSHIP: message borrowed; copied before return. THREAD: any thread, while the call
   * runs. */
  bool (*emit_item_error)(ccm_host_handle host, uint64_t call_id, size_t index,
                          ccm_status status, ccm_str message);

  /* since 1.0: deliver a load balancer status (get_load_balancer, ensure_load_balancer).
   * OWNERSHIP: status and everything it points to borrowed; copied before return.
   * THREAD: any thread, while the call runs. */
  bool (*emit_lb_status)(ccm_host_handle host, uint64_t call_id, const ccm_lb_status* status);

  /* since 1.0: deliver one route of list_routes (call once per route).
   * OWNERSHIP: route borrowed; copied before return. THREAD: any thread, while the call
   * runs. */
  bool (*emit_route)(ccm_host_handle host, uint64_t call_id, const ccm_route* route);

  /* since 1.0: deliver a string result (get_load_balancer_name).
   * OWNERSHIP: value borrowed; copied before return. THREAD: any thread, while the call
   * runs. */
  bool (*emit_string)(ccm_host_handle host, uint64_t call_id, ccm_str value);

  /* since 1.1: like log, with structured fields the host prints after the message (klog:
   * key="value" pairs; JSON: members of the record). Keys match [A-Za-z][A-Za-z0-9_.-]*
   * (others are dropped); values are redacted and cleaned like the message. Prefer it to
   * packing details into the message text: operators filter on fields.
   * OWNERSHIP: message and fields borrowed; copied before return. THREAD: any thread. */
  void (*log_fields)(ccm_host_handle host, ccm_log_level level, ccm_str message,
                     const ccm_kv* fields, size_t field_count);
} ccm_host_services;

/*
 * ccm_host_info: what the host tells the plugin at negotiation (it is not a function; its
 * rules are those of the entry call).
 * OWNERSHIP: the struct and its strings are borrowed for the entry call only; the services
 * table it points to lives for the process.
 */
typedef struct ccm_host_info {
  uint32_t struct_size;
  uint32_t abi_major;                      /* since 1.0: CCM_ABI_MAJOR of the host */
  uint32_t abi_minor;                      /* since 1.0: highest minor the host speaks */
  ccm_str host_name;                       /* since 1.0: "cloud-controller-manager" */
  ccm_str host_version;                    /* since 1.0: semver, e.g. "0.1.0" */
  ccm_host_handle host;                    /* since 1.0: pass to every service */
  const ccm_host_services* services;       /* since 1.0 */
} ccm_host_info;

/* ------------------------------------------------------------------------------------------ */
/* Inputs                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Node system info (status.nodeInfo). */
typedef struct ccm_node_info {
  uint32_t struct_size;
  ccm_str machine_id;                /* since 1.0 */
  ccm_str system_uuid;               /* since 1.0 */
  ccm_str boot_id;                   /* since 1.0 */
  ccm_str kernel_version;            /* since 1.0 */
  ccm_str os_image;                  /* since 1.0 */
  ccm_str container_runtime_version; /* since 1.0 */
  ccm_str kubelet_version;           /* since 1.0 */
  ccm_str operating_system;          /* since 1.0 */
  ccm_str architecture;              /* since 1.0 */
} ccm_node_info;

/* A Kubernetes Node as the host sees it. OWNERSHIP: borrowed for the call only. */
typedef struct ccm_node {
  uint32_t struct_size;
  ccm_str name;                        /* since 1.0 */
  ccm_str uid;                         /* since 1.0 */
  ccm_str provider_id;                 /* since 1.0: spec.providerID, may be empty */
  const ccm_kv* labels;                /* since 1.0 */
  size_t label_count;                  /* since 1.0 */
  const ccm_kv* annotations;           /* since 1.0 */
  size_t annotation_count;             /* since 1.0 */
  const ccm_node_address* addresses;   /* since 1.0: status.addresses */
  size_t address_count;                /* since 1.0 */
  const ccm_node_info* node_info;      /* since 1.0: never NULL */
  /* since 1.0: the whole Node as JSON, for anything the fields above do not carry. Empty
   * unless the capability sets CCM_CAP_WANTS_OBJECT_JSON (it costs the host memory). */
  ccm_str object_json;
} ccm_node;

/* One port of a Service (spec.ports[]). */
typedef struct ccm_service_port {
  uint32_t struct_size;
  ccm_str name;          /* since 1.0 */
  ccm_str protocol;      /* since 1.0: "TCP", "UDP" or "SCTP" */
  int32_t port;          /* since 1.0 */
  int32_t node_port;     /* since 1.0: 0 when not allocated */
  ccm_str target_port;   /* since 1.0: number or name, as text */
  ccm_str app_protocol;  /* since 1.0 */
} ccm_service_port;

/* A Kubernetes Service of type LoadBalancer. OWNERSHIP: borrowed for the call only. */
typedef struct ccm_service {
  uint32_t struct_size;
  ccm_str namespace_;                   /* since 1.0 (trailing _: "namespace" is C++) */
  ccm_str name;                         /* since 1.0 */
  ccm_str uid;                          /* since 1.0 */
  const ccm_kv* labels;                 /* since 1.0 */
  size_t label_count;                   /* since 1.0 */
  const ccm_kv* annotations;            /* since 1.0 */
  size_t annotation_count;              /* since 1.0 */
  ccm_str type;                         /* since 1.0: spec.type */
  const ccm_service_port* const* ports; /* since 1.0 */
  size_t port_count;                    /* since 1.0 */
  ccm_str load_balancer_ip;             /* since 1.0: spec.loadBalancerIP (deprecated field) */
  const ccm_str* source_ranges;         /* since 1.0: spec.loadBalancerSourceRanges */
  size_t source_range_count;            /* since 1.0 */
  ccm_str external_traffic_policy;      /* since 1.0: "Cluster" or "Local" */
  int32_t health_check_node_port;       /* since 1.0: 0 when unset */
  const ccm_str* ip_families;           /* since 1.0: "IPv4", "IPv6" */
  size_t ip_family_count;               /* since 1.0 */
  ccm_str load_balancer_class;          /* since 1.0: empty when unset */
  ccm_str session_affinity;             /* since 1.0: "None" or "ClientIP" */
  ccm_str cluster_ip;                   /* since 1.0 */
  const ccm_lb_status* current_status;  /* since 1.0: status.loadBalancer; never NULL */
  ccm_str object_json;                  /* since 1.0: the whole Service as JSON (always set) */
} ccm_service;

/* ------------------------------------------------------------------------------------------ */
/* Capabilities                                                                                */
/* ------------------------------------------------------------------------------------------ */

/* The provider instance, opaque to the host. Created by ccm_plugin.create. */
typedef struct ccm_provider ccm_provider;

/* Flags in a capability's flags field. */
#define CCM_CAP_WANTS_OBJECT_JSON 0x1u /* fill ccm_node.object_json for this capability */

/* Instance existence: a tri-state, so that an error can never read as "gone". The host
 * deletes a Node only on CCM_EXISTENCE_NOT_FOUND returned with CCM_STATUS_OK. */
typedef int32_t ccm_existence;
#define CCM_EXISTENCE_UNKNOWN 0   /* could not tell: nothing is done */
#define CCM_EXISTENCE_EXISTS 1    /* the instance exists (running, stopped, anything) */
#define CCM_EXISTENCE_NOT_FOUND 2 /* the cloud positively says the instance is gone */

/* Instance power state: shut down is not "not found". */
typedef int32_t ccm_power;
#define CCM_POWER_UNKNOWN 0  /* could not tell: taints are left as they are */
#define CCM_POWER_RUNNING 1  /* not shut down */
#define CCM_POWER_SHUTDOWN 2 /* shut down: the node gets the shutdown taint */

/*
 * "ccm.instances/1": what the cloud knows about the machine behind a Node (upstream
 * InstancesV2). Required for the cloud-node and cloud-node-lifecycle controllers.
 */
typedef struct ccm_instances_v1 {
  uint32_t struct_size;
  /* since 1.0: how many calls of this capability may run at once (0 = no limit). */
  uint32_t max_concurrency;
  /* since 1.0: CCM_CAP_* flags. */
  uint32_t flags;

  /* since 1.0 (required): does the instance behind node exist? Writes *out (initially
   * CCM_EXISTENCE_UNKNOWN). Anything but OK + EXISTS/NOT_FOUND is read as UNKNOWN.
   * OWNERSHIP: node borrowed for the call. THREAD: any worker; concurrent calls allowed. */
  ccm_status (*instance_exists)(ccm_provider* provider, const ccm_call* call,
                                const ccm_node* node, ccm_existence* out);

  /* since 1.0 (required): is the instance shut down? Writes *out (initially
   * CCM_POWER_UNKNOWN). UNIMPLEMENTED means "never shut down".
   * OWNERSHIP: node borrowed for the call. THREAD: any worker; concurrent calls allowed. */
  ccm_status (*instance_shutdown)(ccm_provider* provider, const ccm_call* call,
                                  const ccm_node* node, ccm_power* out);

  /* since 1.0 (required): metadata for node, delivered with emit_instance_metadata(index 0).
   * OK without an emit means "no metadata yet" (the node stays uninitialised, upstream's
   * nil metadata). NOT_FOUND means the instance does not exist.
   * OWNERSHIP: node borrowed for the call. THREAD: any worker; concurrent calls allowed. */
  ccm_status (*instance_metadata)(ccm_provider* provider, const ccm_call* call,
                                  const ccm_node* node);
} ccm_instances_v1;

/*
 * "ccm.instances.batch/1": metadata for many nodes in one call, so a burst of joining nodes
 * costs a handful of cloud requests. The host uses it, when present, for initialisation and
 * for the periodic address refresh.
 */
typedef struct ccm_instances_batch_v1 {
  uint32_t struct_size;
  uint32_t max_concurrency; /* since 1.0: 0 = no limit */
  uint32_t flags;           /* since 1.0: CCM_CAP_* flags */
  uint32_t max_batch_size;  /* since 1.0: largest node_count accepted (0 = no limit) */

  /* since 1.0 (required): for each nodes[i], call emit_instance_metadata(i, ...) or
   * emit_item_error(i, ...). A node with neither reads as UNAVAILABLE for that node. A
   * non-OK return fails every node that has no emitted result.
   * OWNERSHIP: nodes borrowed for the call. THREAD: any worker; concurrent calls allowed. */
  ccm_status (*instance_metadata_batch)(ccm_provider* provider, const ccm_call* call,
                                        const ccm_node* const* nodes, size_t node_count);
} ccm_instances_batch_v1;

/*
 * "ccm.loadbalancer/1": cloud load balancers for Services of type LoadBalancer (upstream
 * LoadBalancer). Ensure, update and delete must be idempotent: the host retries them.
 */
typedef struct ccm_loadbalancer_v1 {
  uint32_t struct_size;
  uint32_t max_concurrency; /* since 1.0: 0 = no limit */
  uint32_t flags;           /* since 1.0: CCM_CAP_* flags (applies to nodes passed in) */

  /* since 1.0 (required): does a load balancer created for service exist? *out_exists must
   * be true while any part of it remains. When it exists, emit its status.
   * OWNERSHIP: cluster_name and service borrowed for the call; *out_exists written by the
   * plugin. THREAD: any worker; never concurrently for the same service. */
  ccm_status (*get_load_balancer)(ccm_provider* provider, const ccm_call* call,
                                  ccm_str cluster_name, const ccm_service* service,
                                  bool* out_exists);

  /* since 1.0 (required): the cloud name of service's load balancer (emit_string).
   * OWNERSHIP: cluster_name and service borrowed for the call. THREAD: any worker;
   * concurrent calls allowed. */
  ccm_status (*get_load_balancer_name)(ccm_provider* provider, const ccm_call* call,
                                       ccm_str cluster_name, const ccm_service* service);

  /* since 1.0 (required): create or update the load balancer so it serves service on
   * nodes, and emit its status (OK without a status is an error). May return
   * IMPLEMENTED_ELSEWHERE, or RESOURCE_EXHAUSTED/FAILED_PRECONDITION with a retry-after
   * while the cloud is busy rather than blocking for minutes.
   * OWNERSHIP: service and nodes borrowed for the call.
   * THREAD: any worker; never concurrently for the same service. */
  ccm_status (*ensure_load_balancer)(ccm_provider* provider, const ccm_call* call,
                                     ccm_str cluster_name, const ccm_service* service,
                                     const ccm_node* const* nodes, size_t node_count);

  /* since 1.0 (required): change only the backend hosts of an existing load balancer.
   * OWNERSHIP: cluster_name, service and nodes borrowed for the call.
   * THREAD: any worker; never concurrently for the same service. */
  ccm_status (*update_load_balancer)(ccm_provider* provider, const ccm_call* call,
                                     ccm_str cluster_name, const ccm_service* service,
                                     const ccm_node* const* nodes, size_t node_count);

  /* since 1.0 (required): delete everything created for service; OK when nothing is left
   * (also when nothing existed). Must not answer IMPLEMENTED_ELSEWHERE.
   * OWNERSHIP: cluster_name and service borrowed for the call.
   * THREAD: any worker; never concurrently for the same service. */
  ccm_status (*ensure_load_balancer_deleted)(ccm_provider* provider, const ccm_call* call,
                                             ccm_str cluster_name, const ccm_service* service);
} ccm_loadbalancer_v1;

/*
 * "ccm.routes/1": cloud routes that send each node's pod CIDR to that node (upstream Routes).
 */
typedef struct ccm_routes_v1 {
  uint32_t struct_size;
  uint32_t max_concurrency; /* since 1.0: 0 = no limit */
  uint32_t flags;           /* since 1.0: CCM_CAP_* flags */

  /* since 1.0 (required): every route this cluster manages, one emit_route per route.
   * OWNERSHIP: cluster_name borrowed for the call. THREAD: any worker; concurrent calls
   * allowed. */
  ccm_status (*list_routes)(ccm_provider* provider, const ccm_call* call, ccm_str cluster_name);

  /* since 1.0 (required): create route (its name is ignored); name_hint is the node's UID.
   * ALREADY_EXISTS is taken as success.
   * OWNERSHIP: cluster_name, name_hint and route borrowed for the call.
   * THREAD: any worker; never twice for the same destination at once; creates for
   * different destinations may run together (serialise inside the provider when the cloud
   * cannot take concurrent writes to one router). */
  ccm_status (*create_route)(ccm_provider* provider, const ccm_call* call, ccm_str cluster_name,
                             ccm_str name_hint, const ccm_route* route);

  /* since 1.0 (required): delete route as returned by list_routes; NOT_FOUND is success.
   * OWNERSHIP: cluster_name and route borrowed for the call. THREAD: any worker; never
   * twice for the same destination at once. */
  ccm_status (*delete_route)(ccm_provider* provider, const ccm_call* call, ccm_str cluster_name,
                             const ccm_route* route);
} ccm_routes_v1;

/* ------------------------------------------------------------------------------------------ */
/* The plugin table and the entry point                                                       */
/* ------------------------------------------------------------------------------------------ */

/*
 * ccm_plugin: the plugin's answer to negotiation. Usually a static const object.
 * OWNERSHIP: owned by the plugin; must stay valid for the life of the process.
 */
typedef struct ccm_plugin {
  uint32_t struct_size;
  uint32_t abi_major;    /* since 1.0: must equal CCM_ABI_MAJOR (1) */
  uint32_t abi_minor;    /* since 1.0: the minor the plugin speaks, <= the host's */
  ccm_str name;          /* since 1.0: provider name, [a-z0-9-]+, matches the file name */
  ccm_str version;       /* since 1.0: the plugin's own semver */

  /* since 1.0 (required): create a provider instance from config (the bytes of
   * --cloud-config; size 0 when none was given). On refusal return INVALID_ARGUMENT (or
   * another code) after set_error with a message that names the offending key; never abort.
   * OWNERSHIP: config borrowed for the call; *out is owned by the plugin until destroy.
   * THREAD: a host thread of its own (the caller waits for it, up to the start-up deadline in
   * call); no other call into the plugin overlaps it. */
  ccm_status (*create)(const ccm_call* call, ccm_str config, ccm_provider** out);

  /* since 1.0 (required): destroy a provider created by create. Called at most once, at
   * shutdown, and only after every other call on it has returned. When some call never
   * returned (it hung past its deadline and was abandoned), the host does not call destroy
   * at all and exits without it, so destroy never races a running call.
   * OWNERSHIP: provider is the plugin's own; the host forgets it after the call.
   * THREAD: main thread; no other call into the plugin overlaps it. */
  void (*destroy)(ccm_provider* provider);

  /* since 1.0 (required): the capability with this ID (e.g. CCM_CAP_INSTANCES) as a pointer
   * to its ccm_*_v1 table, or NULL when unsupported. The table must stay valid until
   * destroy. No side effects.
   * OWNERSHIP: id borrowed; the returned table stays owned by the plugin.
   * THREAD: main thread, after create. */
  const void* (*get_capability)(ccm_provider* provider, ccm_str id);

  /* since 1.1 (optional, NULL = not supported): apply new --cloud-config bytes (the file
   * changed, e.g. a rotated credential in a Secret) without a restart. On OK the provider
   * uses the new settings for every call that starts after it returns (calls already
   * running may finish with the old ones) and keeps its cloud objects; on any other code it
   * must keep its old settings in full, after set_error with a message naming what is wrong
   * (INVALID_ARGUMENT for a bad file, FAILED_PRECONDITION for a setting that cannot change
   * while running). UNIMPLEMENTED means the provider cannot reconfigure at all, as a NULL
   * slot does: the host then logs that the change takes effect at the next restart. A call
   * still running at its deadline is abandoned: its outcome is unknown until it returns, and
   * the host starts no other reconfigure before it has.
   * OWNERSHIP: config borrowed for the call. THREAD: one host thread, never concurrently
   * with create, destroy or another reconfigure; capability calls may run at the same time. */
  ccm_status (*reconfigure)(ccm_provider* provider, const ccm_call* call, ccm_str config);

  /* since 1.1: the providerID prefix this provider owns, e.g. "openstack://" or "fake://"
   * (lower-case scheme, then "://"). When set, the host refuses metadata whose provider_id
   * does not start with it, and (with several providers loaded) gives each node with a
   * providerID to the provider whose prefix it has. Empty: not declared. */
  ccm_str provider_id_prefix;

  /* since 1.1: the DNS subdomain under which this provider writes Service annotations
   * (ccm_lb_status.annotations), e.g. "loadbalancer.openstack.org". It must not be
   * kubernetes.io, k8s.io or a subdomain of them. Empty: the provider writes none. */
  ccm_str annotation_domain;

  /* since 1.1: the provider's own metric prefix, [a-z][a-z0-9]* (e.g. "openstack"). Metric
   * names starting with "<metric_namespace>_" are exposed without the host's
   * "ccm_provider_" prefix. The host refuses namespaces it uses itself ("ccm", "process",
   * "go", "rest", "workqueue", "apiserver", "cloudprovider", "leader", "kubernetes", and the
   * first words of its upstream-named metrics: "node", "service", "route", "running").
   * Empty: every metric is under ccm_provider_. */
  ccm_str metric_namespace;
} ccm_plugin;

/*
 * The entry point every plugin exports (and the only symbol it exports).
 * The host calls it exactly once, first. The plugin checks host->abi_major (refuse a
 * different major with FAILED_PRECONDITION and a message naming both versions), keeps
 * host->host and host->services for later, and sets *out to its ccm_plugin table, choosing
 * abi_minor = the lower of the host's and its own. To refuse with a message, call
 * host->services->set_error(host->host, call->call_id, message, 0) and return non-OK. This
 * is safe whatever the host's version: only a major-1 host looks up ccm_provider_entry_v1
 * (the symbol's name carries the major), and major 1's services table never changes shape.
 * The host gives it the start-up deadline in call; a plugin must not block here (no cloud
 * requests: those belong in create).
 * OWNERSHIP: host and call borrowed for this call; the services table lives for the process;
 * *out must stay valid for the life of the process.
 * THREAD: a host thread of its own (the caller waits for it, up to the start-up deadline).
 */
typedef ccm_status (*ccm_provider_entry_fn)(const ccm_host_info* host, const ccm_call* call,
                                            const ccm_plugin** out);

CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* host,
                                                   const ccm_call* call,
                                                   const ccm_plugin** out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CCM_PROVIDER_ABI_H */
