/* echo.so: the host/plugin unit tests' provider. It offers every capability and answers from
 * its inputs, so a test can tell from the answer that each input reached the plugin whole
 * (copied into memory the call owns), that each output came back, and that each status and
 * error message took the documented path. Node and service names pick the behaviour:
 *
 *   instances  exists:   "gone" NOT_FOUND, "flaky" UNAVAILABLE + retry-after, "odd" a value
 *                        outside the ABI's set (refused), else EXISTS
 *              shutdown: "stopped" SHUTDOWN, "unimpl" UNIMPLEMENTED without a message
 *              metadata: "pending" none yet, "wait-cancel" polls is_cancelled,
 *                        "late-reader" outstays its deadline, then reads its inputs and counts
 *                        what it read in the metric echo_late_reads_total{seen}; else metadata
 *                        echoing the node (its JSON asked for: CCM_CAP_WANTS_OBJECT_JSON)
 *   batch      at most 2 nodes a call; "err-*" an item error, "silent" nothing, a node
 *              "fail-chunk" fails the rest of its chunk; no JSON asked for
 *   lb         get: exists when annotation echo/exists=true; name: "<cluster>/<ns>/<name>";
 *              ensure: echoes the service (annotation echo/elsewhere: IMPLEMENTED_ELSEWHERE);
 *              update: INVALID_ARGUMENT without nodes
 *   routes     an in-memory table per cluster name; list of cluster "broken" emits an invalid
 *              route
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ccm/provider_abi.h"

static ccm_host_handle g_host;
static const ccm_host_services* g_services;

struct ccm_provider {
  int unused;
};
static struct ccm_provider g_provider;

static ccm_str s(const char* text) {
  ccm_str out;
  out.data = text;
  out.size = strlen(text);
  return out;
}

static int eq(ccm_str a, const char* b) {
  return a.size == strlen(b) && (a.size == 0 || memcmp(a.data, b, a.size) == 0);
}

static int starts(ccm_str a, const char* prefix) {
  size_t n = strlen(prefix);
  return a.size >= n && memcmp(a.data, prefix, n) == 0;
}

/* Copies a ccm_str into buf as a C string (truncated to fit). */
static const char* cstr(char* buf, size_t cap, ccm_str v) {
  size_t n = v.size < cap - 1 ? v.size : cap - 1;
  if (n > 0) {
    memcpy(buf, v.data, n);
  }
  buf[n] = '\0';
  return buf;
}

static ccm_str find_kv(const ccm_kv* kv, size_t n, const char* key) {
  size_t i;
  ccm_str none = {NULL, 0};
  for (i = 0; i < n; ++i) {
    if (eq(kv[i].key, key)) {
      return kv[i].value;
    }
  }
  return none;
}

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* ---- instances ------------------------------------------------------------------------- */

static ccm_status exists_fn(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                            ccm_existence* out) {
  if (eq(node->name, "gone")) {
    *out = CCM_EXISTENCE_NOT_FOUND;
  } else if (eq(node->name, "flaky")) {
    g_services->set_error(g_host, call->call_id, s("cloud unreachable"), 1500);
    return CCM_STATUS_UNAVAILABLE;
  } else if (eq(node->name, "odd")) {
    *out = 42;
  } else {
    *out = CCM_EXISTENCE_EXISTS;
  }
  return CCM_STATUS_OK;
}

static ccm_status shutdown_fn(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                              ccm_power* out) {
  if (eq(node->name, "unimpl")) {
    return CCM_STATUS_UNIMPLEMENTED;
  }
  *out = eq(node->name, "stopped") ? CCM_POWER_SHUTDOWN : CCM_POWER_RUNNING;
  return CCM_STATUS_OK;
}

/* Emits metadata at index echoing node: provider ID from its name, instance type from its
 * kernel version (or type when empty), zone from its zone label, region telling whether its
 * JSON came along, its addresses plus a Hostname. */
static void emit_node(const ccm_call* call, size_t index, const ccm_node* node,
                      const char* type) {
  char provider_id[128];
  char name[64];
  ccm_node_address addrs[8];
  ccm_instance_metadata md;
  size_t i;
  size_t n = node->address_count < 7 ? node->address_count : 7;
  for (i = 0; i < n; ++i) {
    addrs[i] = node->addresses[i];
  }
  addrs[n].type = s("Hostname");
  addrs[n].address = node->name;
  snprintf(provider_id, sizeof provider_id, "echo://%s", cstr(name, sizeof name, node->name));
  memset(&md, 0, sizeof md);
  md.struct_size = sizeof md;
  md.provider_id = s(provider_id);
  md.instance_type = node->node_info->kernel_version.size > 0 ? node->node_info->kernel_version
                                                              : s(type);
  md.zone = find_kv(node->labels, node->label_count, "topology.kubernetes.io/zone");
  md.region = node->object_json.size > 0 ? s("with-json") : s("without-json");
  md.addresses = addrs;
  md.address_count = n + 1;
  g_services->emit_instance_metadata(g_host, call->call_id, index, &md);
}

static ccm_status metadata_fn(ccm_provider* p, const ccm_call* call, const ccm_node* node) {
  if (eq(node->name, "pending")) {
    return CCM_STATUS_OK;
  }
  if (eq(node->name, "wait-cancel")) {
    int i;
    for (i = 0; i < 1000; ++i) { /* at most 5 s */
      if (g_services->is_cancelled(g_host, call->call_id)) {
        g_services->set_error(g_host, call->call_id, s("noticed the cancellation"), 0);
        return CCM_STATUS_CANCELLED;
      }
      sleep_ms(5);
    }
    return CCM_STATUS_OK;
  }
  if (eq(node->name, "late-reader")) {
    char seen[160];
    char name[64];
    char zone[64];
    ccm_kv label;
    sleep_ms(700); /* past the test's deadline + grace: the host has given up */
    snprintf(seen, sizeof seen, "%s/%s", cstr(name, sizeof name, node->name),
             cstr(zone, sizeof zone,
                  find_kv(node->labels, node->label_count, "topology.kubernetes.io/zone")));
    label.key = s("seen");
    label.value = s(seen);
    g_services->metric(g_host, CCM_METRIC_COUNTER, s("echo_late_reads_total"),
                       s("Inputs read by calls after they were abandoned."), &label, 1, 1);
    return CCM_STATUS_OK;
  }
  emit_node(call, 0, node, "single");
  return CCM_STATUS_OK;
}

static const ccm_instances_v1 g_instances = {
    sizeof(ccm_instances_v1), 0, CCM_CAP_WANTS_OBJECT_JSON, exists_fn, shutdown_fn, metadata_fn,
};

/* ---- instances.batch ------------------------------------------------------------------- */

static ccm_status batch_fn(ccm_provider* p, const ccm_call* call, const ccm_node* const* nodes,
                           size_t count) {
  char type[32];
  char message[96];
  char name[64];
  size_t i;
  snprintf(type, sizeof type, "chunk-of-%zu", count);
  for (i = 0; i < count; ++i) {
    if (eq(nodes[i]->name, "fail-chunk")) {
      g_services->set_error(g_host, call->call_id, s("batch backend down"), 0);
      return CCM_STATUS_UNAVAILABLE;
    }
    if (starts(nodes[i]->name, "err-")) {
      snprintf(message, sizeof message, "no machine for %s",
               cstr(name, sizeof name, nodes[i]->name));
      g_services->emit_item_error(g_host, call->call_id, i, CCM_STATUS_NOT_FOUND, s(message));
    } else if (!eq(nodes[i]->name, "silent")) {
      emit_node(call, i, nodes[i], type);
    }
  }
  return CCM_STATUS_OK;
}

static const ccm_instances_batch_v1 g_batch = {sizeof(ccm_instances_batch_v1), 0, 0, 2,
                                               batch_fn};

/* ---- loadbalancer ---------------------------------------------------------------------- */

static ccm_status lb_get(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                         const ccm_service* svc, bool* exists) {
  ccm_lb_status st;
  *exists = eq(find_kv(svc->annotations, svc->annotation_count, "echo/exists"), "true");
  if (*exists && svc->current_status != NULL) {
    st = *svc->current_status;
    g_services->emit_lb_status(g_host, call->call_id, &st);
  }
  return CCM_STATUS_OK;
}

static ccm_status lb_name(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                          const ccm_service* svc) {
  char out[256];
  char a[64];
  char b[64];
  char c[64];
  snprintf(out, sizeof out, "%s/%s/%s", cstr(a, sizeof a, cluster),
           cstr(b, sizeof b, svc->namespace_), cstr(c, sizeof c, svc->name));
  g_services->emit_string(g_host, call->call_id, s(out));
  return CCM_STATUS_OK;
}

/* Ingress: the service's loadBalancerIP, a hostname counting the nodes, one port status per
 * service port (its protocol, and its target port as the error text). */
static ccm_status lb_ensure(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                            const ccm_service* svc, const ccm_node* const* nodes, size_t n) {
  char hostname[64];
  ccm_port_status ports[8];
  const ccm_port_status* port_list[8];
  ccm_lb_ingress ing;
  const ccm_lb_ingress* list[1];
  ccm_lb_status st;
  size_t i;
  size_t port_count = svc->port_count < 8 ? svc->port_count : 8;
  if (eq(find_kv(svc->annotations, svc->annotation_count, "echo/elsewhere"), "true")) {
    return CCM_STATUS_IMPLEMENTED_ELSEWHERE;
  }
  for (i = 0; i < port_count; ++i) {
    memset(&ports[i], 0, sizeof ports[i]);
    ports[i].struct_size = sizeof ports[i];
    ports[i].port = svc->ports[i]->port;
    ports[i].protocol = svc->ports[i]->protocol;
    port_list[i] = &ports[i];
  }
  snprintf(hostname, sizeof hostname, "nodes-%zu.lb.example.com", n);
  memset(&ing, 0, sizeof ing);
  ing.struct_size = sizeof ing;
  ing.ip = svc->load_balancer_ip;
  ing.hostname = s(hostname);
  ing.ports = port_list;
  ing.port_count = port_count;
  list[0] = &ing;
  memset(&st, 0, sizeof st); /* the 1.1 annotation arrays: none */
  st.struct_size = sizeof st;
  st.ingress = list;
  st.ingress_count = 1;
  g_services->emit_lb_status(g_host, call->call_id, &st);
  return CCM_STATUS_OK;
}

static ccm_status lb_update(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                            const ccm_service* svc, const ccm_node* const* nodes, size_t n) {
  if (n == 0) {
    g_services->set_error(g_host, call->call_id, s("a load balancer needs nodes"), 0);
    return CCM_STATUS_INVALID_ARGUMENT;
  }
  return CCM_STATUS_OK;
}

static ccm_status lb_delete(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                            const ccm_service* svc) {
  return CCM_STATUS_OK;
}

static const ccm_loadbalancer_v1 g_lb = {sizeof(ccm_loadbalancer_v1), 0, 0, lb_get, lb_name,
                                         lb_ensure, lb_update, lb_delete};

/* ---- routes ---------------------------------------------------------------------------- */

#define MAX_ROUTES 32
#define FIELD 64

struct stored_route {
  char cluster[FIELD];
  char name[FIELD];
  char target[FIELD];
  char cidr[FIELD];
  char address[FIELD];
};

static pthread_mutex_t g_routes_mu = PTHREAD_MUTEX_INITIALIZER;
static struct stored_route g_routes[MAX_ROUTES];
static size_t g_route_count;

/* The index of the route of cluster to cidr, or -1. Call with g_routes_mu held. */
static long find_route(ccm_str cluster, ccm_str cidr) {
  size_t i;
  for (i = 0; i < g_route_count; ++i) {
    if (eq(cluster, g_routes[i].cluster) && eq(cidr, g_routes[i].cidr)) {
      return (long)i;
    }
  }
  return -1;
}

static ccm_status list_routes_fn(ccm_provider* p, const ccm_call* call, ccm_str cluster) {
  size_t i;
  ccm_route r;
  ccm_node_address addr;
  if (eq(cluster, "broken")) {
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.destination_cidr = s("not-a-cidr");
    g_services->emit_route(g_host, call->call_id, &r);
    return CCM_STATUS_OK;
  }
  pthread_mutex_lock(&g_routes_mu);
  for (i = 0; i < g_route_count; ++i) {
    if (!eq(cluster, g_routes[i].cluster)) {
      continue;
    }
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.name = s(g_routes[i].name);
    r.target_node = s(g_routes[i].target);
    r.destination_cidr = s(g_routes[i].cidr);
    if (g_routes[i].address[0] != '\0') {
      addr.type = s("InternalIP");
      addr.address = s(g_routes[i].address);
      r.enable_node_addresses = true;
      r.target_node_addresses = &addr;
      r.target_node_address_count = 1;
    }
    g_services->emit_route(g_host, call->call_id, &r);
  }
  pthread_mutex_unlock(&g_routes_mu);
  return CCM_STATUS_OK;
}

static ccm_status create_route_fn(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                                  ccm_str name_hint, const ccm_route* route) {
  struct stored_route* r;
  ccm_status st = CCM_STATUS_OK;
  pthread_mutex_lock(&g_routes_mu);
  if (find_route(cluster, route->destination_cidr) >= 0) {
    g_services->set_error(g_host, call->call_id, s("route exists"), 0);
    st = CCM_STATUS_ALREADY_EXISTS;
  } else if (g_route_count == MAX_ROUTES) {
    st = CCM_STATUS_RESOURCE_EXHAUSTED;
  } else {
    r = &g_routes[g_route_count++];
    memset(r, 0, sizeof *r);
    cstr(r->cluster, FIELD, cluster);
    cstr(r->name, FIELD, name_hint);
    cstr(r->target, FIELD, route->target_node);
    cstr(r->cidr, FIELD, route->destination_cidr);
    if (route->target_node_address_count > 0) {
      cstr(r->address, FIELD, route->target_node_addresses[0].address);
    }
  }
  pthread_mutex_unlock(&g_routes_mu);
  return st;
}

static ccm_status delete_route_fn(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                                  const ccm_route* route) {
  long at;
  ccm_status st = CCM_STATUS_OK;
  pthread_mutex_lock(&g_routes_mu);
  at = find_route(cluster, route->destination_cidr);
  if (at < 0) {
    g_services->set_error(g_host, call->call_id, s("no such route"), 0);
    st = CCM_STATUS_NOT_FOUND;
  } else {
    g_routes[at] = g_routes[--g_route_count];
  }
  pthread_mutex_unlock(&g_routes_mu);
  return st;
}

static const ccm_routes_v1 g_routes_cap = {sizeof(ccm_routes_v1), 0, 0, list_routes_fn,
                                           create_route_fn, delete_route_fn};

/* ---- lifecycle ------------------------------------------------------------------------- */

static ccm_status create_fn(const ccm_call* call, ccm_str config, ccm_provider** out) {
  *out = &g_provider;
  return CCM_STATUS_OK;
}

static void destroy_fn(ccm_provider* p) { (void)p; }

static const void* capability_fn(ccm_provider* p, ccm_str id) {
  if (eq(id, CCM_CAP_INSTANCES)) {
    return &g_instances;
  }
  if (eq(id, CCM_CAP_INSTANCES_BATCH)) {
    return &g_batch;
  }
  if (eq(id, CCM_CAP_LOADBALANCER)) {
    return &g_lb;
  }
  if (eq(id, CCM_CAP_ROUTES)) {
    return &g_routes_cap;
  }
  return NULL;
}

static const ccm_plugin g_plugin = {
    sizeof(ccm_plugin), CCM_ABI_MAJOR, 0,           {"echo", 4}, {"1.2.3", 5},
    create_fn,          destroy_fn,    capability_fn,
    NULL,               {NULL, 0},     {NULL, 0},    {NULL, 0},
};

CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* host,
                                                   const ccm_call* call,
                                                   const ccm_plugin** out);

CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* host,
                                                   const ccm_call* call,
                                                   const ccm_plugin** out) {
  g_host = host->host;
  g_services = host->services;
  *out = &g_plugin;
  return CCM_STATUS_OK;
}
