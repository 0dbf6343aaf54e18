/* script_plugin.c — the provider behind the plugin-output fuzz target (fuzz_plugin_output.cpp).
 *
 * It answers every call by running a "script": the bytes of the call's node name (instance
 * calls; the first node's for batches) or cluster name (load balancer and route calls). The
 * script emits outputs of every kind (well-formed or not: wrong sizes, NULL pointers with
 * counts, out-of-range indexes, invalid text, stray call IDs), sets errors and retry-afters,
 * writes raw existence/power values, logs and records metrics, and returns any status code,
 * known or not. Everything it hands the host points into the script or into its own
 * correctly sized buffers: the plugin itself never reads or writes out of bounds, so any
 * sanitizer report is the host's.
 *
 * Script: a status byte (then four more bytes when it asks for a raw code), then operations
 * until the bytes run out. Strings are a length byte (255: a NULL pointer with the next byte
 * as its size) followed by that many bytes.
 */
#include <ccm/provider_abi.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static ccm_host_handle g_host;
static const ccm_host_services* g_svc;

struct ccm_provider {
  int unused;
};
static struct ccm_provider g_provider;

typedef struct {
  const uint8_t* p;
  size_t n;
  size_t i;
} reader;

static uint8_t u8(reader* r) {
  return r->i < r->n ? r->p[r->i++] : 0;
}

static uint32_t u32(reader* r) {
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k)
    v = (v << 8) | u8(r);
  return v;
}

static ccm_str sstr(reader* r) {
  ccm_str s;
  uint8_t len = u8(r);
  if (len == 255) {
    s.data = NULL;
    s.size = u8(r);
    return s;
  }
  size_t left = r->n - r->i;
  if (len > left)
    len = (uint8_t)left;
  s.data = (const char*)(r->p + r->i);
  s.size = len;
  r->i += len;
  return s;
}

/* The struct_size a script asks for: right, zero, just the size field, half, or larger than
 * the host's struct (the buffers are padded so the host may read that much). */
static uint32_t pick_size(reader* r, size_t real) {
  switch (u8(r) % 8) {
    case 1:
      return 0;
    case 2:
      return 4;
    case 3:
      return (uint32_t)(real / 2);
    case 4:
      return (uint32_t)(real + 64);
    default:
      return (uint32_t)real;
  }
}

static const ccm_status kCodes[] = {CCM_STATUS_OK,
                                    CCM_STATUS_CANCELLED,
                                    CCM_STATUS_INVALID_ARGUMENT,
                                    CCM_STATUS_DEADLINE_EXCEEDED,
                                    CCM_STATUS_NOT_FOUND,
                                    CCM_STATUS_ALREADY_EXISTS,
                                    CCM_STATUS_PERMISSION_DENIED,
                                    CCM_STATUS_RESOURCE_EXHAUSTED,
                                    CCM_STATUS_FAILED_PRECONDITION,
                                    CCM_STATUS_ABORTED,
                                    CCM_STATUS_UNIMPLEMENTED,
                                    CCM_STATUS_INTERNAL,
                                    CCM_STATUS_UNAVAILABLE,
                                    CCM_STATUS_UNAUTHENTICATED,
                                    CCM_STATUS_IMPLEMENTED_ELSEWHERE};

#define MAX_ITEMS 6

static void addresses(reader* r, ccm_node_address* out, size_t* count,
                      const ccm_node_address** ptr) {
  size_t n = u8(r) % (MAX_ITEMS + 1);
  for (size_t k = 0; k < n; ++k) {
    out[k].type = sstr(r);
    out[k].address = sstr(r);
  }
  *count = n;
  *ptr = (n > 0 && (u8(r) % 16) == 0) ? NULL : out; /* NULL with a count */
}

static void op_metadata(reader* r, uint64_t call_id) {
  union {
    ccm_instance_metadata m;
    unsigned char pad[sizeof(ccm_instance_metadata) + 64];
  } u;
  ccm_node_address addrs[MAX_ITEMS];
  ccm_kv labels[MAX_ITEMS];
  memset(&u, 0, sizeof u);
  size_t index = u8(r) % 3;
  u.m.struct_size = pick_size(r, sizeof(ccm_instance_metadata));
  u.m.provider_id = sstr(r);
  u.m.instance_type = sstr(r);
  u.m.zone = sstr(r);
  u.m.region = sstr(r);
  addresses(r, addrs, &u.m.address_count, &u.m.addresses);
  size_t nl = u8(r) % (MAX_ITEMS + 1);
  for (size_t k = 0; k < nl; ++k) {
    labels[k].key = sstr(r);
    labels[k].value = sstr(r);
  }
  u.m.additional_label_count = nl;
  u.m.additional_labels = (nl > 0 && (u8(r) % 16) == 0) ? NULL : labels;
  g_svc->emit_instance_metadata(g_host, call_id, index, (u8(r) % 32) == 0 ? NULL : &u.m);
}

static void op_lb_status(reader* r, uint64_t call_id) {
  union {
    ccm_lb_status s;
    unsigned char pad[sizeof(ccm_lb_status) + 64];
  } st;
  union ingress_u {
    ccm_lb_ingress in;
    unsigned char pad[sizeof(ccm_lb_ingress) + 64];
  } ing[4];
  union port_u {
    ccm_port_status p;
    unsigned char pad[sizeof(ccm_port_status) + 64];
  } ports[4][3];
  const ccm_lb_ingress* ing_ptrs[4];
  const ccm_port_status* port_ptrs[4][3];
  memset(&st, 0, sizeof st);
  memset(ing, 0, sizeof ing);
  memset(ports, 0, sizeof ports);
  size_t ni = u8(r) % 5;
  for (size_t k = 0; k < ni; ++k) {
    ing[k].in.struct_size = pick_size(r, sizeof(ccm_lb_ingress));
    ing[k].in.ip = sstr(r);
    ing[k].in.hostname = sstr(r);
    ing[k].in.ip_mode = sstr(r);
    size_t np = u8(r) % 4;
    for (size_t j = 0; j < np; ++j) {
      ports[k][j].p.struct_size = pick_size(r, sizeof(ccm_port_status));
      ports[k][j].p.port = (int32_t)u32(r);
      ports[k][j].p.protocol = sstr(r);
      ports[k][j].p.error = sstr(r);
      port_ptrs[k][j] = (u8(r) % 16) == 0 ? NULL : &ports[k][j].p;
    }
    ing[k].in.port_count = np;
    ing[k].in.ports = (np > 0 && (u8(r) % 16) == 0) ? NULL : port_ptrs[k];
    ing_ptrs[k] = (u8(r) % 16) == 0 ? NULL : &ing[k].in;
  }
  st.s.struct_size = pick_size(r, sizeof(ccm_lb_status));
  st.s.ingress_count = ni;
  st.s.ingress = (ni > 0 && (u8(r) % 16) == 0) ? NULL : ing_ptrs;
  g_svc->emit_lb_status(g_host, call_id, (u8(r) % 32) == 0 ? NULL : &st.s);
}

static void op_route(reader* r, uint64_t call_id) {
  union {
    ccm_route rt;
    unsigned char pad[sizeof(ccm_route) + 64];
  } u;
  ccm_node_address addrs[MAX_ITEMS];
  memset(&u, 0, sizeof u);
  u.rt.struct_size = pick_size(r, sizeof(ccm_route));
  u.rt.name = sstr(r);
  u.rt.target_node = sstr(r);
  u.rt.destination_cidr = sstr(r);
  uint8_t flags = u8(r);
  u.rt.blackhole = (flags & 1) != 0;
  u.rt.enable_node_addresses = (flags & 2) != 0;
  addresses(r, addrs, &u.rt.target_node_address_count, &u.rt.target_node_addresses);
  g_svc->emit_route(g_host, call_id, (u8(r) % 32) == 0 ? NULL : &u.rt);
}

static const char* const kMetricNames[] = {"fuzz_calls_total", "fuzz_gauge", "fuzz_seconds"};
static const char* const kLabelValues[] = {"a", "b", "", "\xff\xfe"};

static void op_metric(reader* r) {
  ccm_metric_kind kind = (ccm_metric_kind)(u8(r) % 4);
  uint8_t which = u8(r);
  ccm_str name;
  if (which % 4 == 3) {
    name = sstr(r); /* any text: invalid names are refused */
  } else {
    name.data = kMetricNames[which % 3];
    name.size = strlen(name.data);
  }
  ccm_kv labels[3];
  size_t n = u8(r) % 3;
  for (size_t k = 0; k < n; ++k) {
    labels[k].key.data = k == 0 ? "op" : "zone";
    labels[k].key.size = k == 0 ? 2 : 4;
    const char* v = kLabelValues[u8(r) % 4];
    labels[k].value.data = v;
    labels[k].value.size = strlen(v);
  }
  ccm_str help = sstr(r);
  double value = (double)(int32_t)u32(r) / 16.0;
  g_svc->metric(g_host, kind, name, help, (n > 0 && (u8(r) % 16) == 0) ? NULL : labels, n, value);
}

static ccm_status run(const ccm_call* call, ccm_str script, size_t items, ccm_existence* existence,
                      ccm_power* power, bool* exists) {
  reader r = {(const uint8_t*)script.data, script.data != NULL ? script.size : 0, 0};
  uint64_t id = call->call_id;
  uint8_t s = u8(&r);
  ccm_status status =
      s < 200 ? kCodes[s % (sizeof kCodes / sizeof kCodes[0])] : (ccm_status)u32(&r);
  (void)items;
  int ops = 0;
  while (r.i < r.n && ops++ < 64) {
    switch (u8(&r) % 12) {
      case 0:
        op_metadata(&r, id);
        break;
      case 1: {
        size_t index = u8(&r) % 3;
        ccm_status code = (ccm_status)u32(&r);
        g_svc->emit_item_error(g_host, id, index, code, sstr(&r));
        break;
      }
      case 2:
        op_lb_status(&r, id);
        break;
      case 3:
        op_route(&r, id);
        break;
      case 4:
        g_svc->emit_string(g_host, id, sstr(&r));
        break;
      case 5: {
        int64_t after = (int64_t)(int32_t)u32(&r) * 1000;
        g_svc->set_error(g_host, id, sstr(&r), after);
        break;
      }
      case 6: {
        int32_t v = (int32_t)u32(&r);
        if (existence)
          *existence = v;
        if (power)
          *power = v;
        break;
      }
      case 7:
        if (exists)
          *exists = (u8(&r) & 1) != 0;
        break;
      case 8: /* a stray emit: another call's ID */
        g_svc->emit_string(g_host, id + 1 + u8(&r), sstr(&r));
        break;
      case 9:
        g_svc->log(g_host, (ccm_log_level)((int)u8(&r) % 6 - 1), sstr(&r));
        break;
      case 10:
        op_metric(&r);
        break;
      default:
        g_svc->is_cancelled(g_host, id);
        break;
    }
  }
  return status;
}

static ccm_status exists_fn(ccm_provider* p, const ccm_call* c, const ccm_node* n,
                            ccm_existence* out) {
  (void)p;
  return run(c, n->name, 1, out, NULL, NULL);
}
static ccm_status shutdown_fn(ccm_provider* p, const ccm_call* c, const ccm_node* n,
                              ccm_power* out) {
  (void)p;
  return run(c, n->name, 1, NULL, out, NULL);
}
static ccm_status metadata_fn(ccm_provider* p, const ccm_call* c, const ccm_node* n) {
  (void)p;
  return run(c, n->name, 1, NULL, NULL, NULL);
}
static ccm_status batch_fn(ccm_provider* p, const ccm_call* c, const ccm_node* const* nodes,
                           size_t count) {
  (void)p;
  return run(c, count > 0 ? nodes[0]->name : (ccm_str){NULL, 0}, count, NULL, NULL, NULL);
}
static ccm_status get_lb_fn(ccm_provider* p, const ccm_call* c, ccm_str cluster,
                            const ccm_service* s, bool* out) {
  (void)p;
  (void)s;
  return run(c, cluster, 0, NULL, NULL, out);
}
static ccm_status lb_name_fn(ccm_provider* p, const ccm_call* c, ccm_str cluster,
                             const ccm_service* s) {
  (void)p;
  (void)s;
  return run(c, cluster, 0, NULL, NULL, NULL);
}
static ccm_status ensure_fn(ccm_provider* p, const ccm_call* c, ccm_str cluster,
                            const ccm_service* s, const ccm_node* const* nodes, size_t count) {
  (void)p;
  (void)s;
  (void)nodes;
  return run(c, cluster, count, NULL, NULL, NULL);
}
static ccm_status update_fn(ccm_provider* p, const ccm_call* c, ccm_str cluster,
                            const ccm_service* s, const ccm_node* const* nodes, size_t count) {
  (void)p;
  (void)s;
  (void)nodes;
  return run(c, cluster, count, NULL, NULL, NULL);
}
static ccm_status delete_fn(ccm_provider* p, const ccm_call* c, ccm_str cluster,
                            const ccm_service* s) {
  (void)p;
  (void)s;
  return run(c, cluster, 0, NULL, NULL, NULL);
}
static ccm_status list_routes_fn(ccm_provider* p, const ccm_call* c, ccm_str cluster) {
  (void)p;
  return run(c, cluster, 0, NULL, NULL, NULL);
}
static ccm_status create_route_fn(ccm_provider* p, const ccm_call* c, ccm_str cluster, ccm_str hint,
                                  const ccm_route* route) {
  (void)p;
  (void)hint;
  (void)route;
  return run(c, cluster, 0, NULL, NULL, NULL);
}
static ccm_status delete_route_fn(ccm_provider* p, const ccm_call* c, ccm_str cluster,
                                  const ccm_route* route) {
  (void)p;
  (void)route;
  return run(c, cluster, 0, NULL, NULL, NULL);
}

static const ccm_instances_v1 kInstances = {
    sizeof(ccm_instances_v1), 0, 0, exists_fn, shutdown_fn, metadata_fn};
static const ccm_instances_batch_v1 kBatch = {sizeof(ccm_instances_batch_v1), 0, 0, 4, batch_fn};
static const ccm_loadbalancer_v1 kLb = {
    sizeof(ccm_loadbalancer_v1), 0, 0, get_lb_fn, lb_name_fn, ensure_fn, update_fn, delete_fn};
static const ccm_routes_v1 kRoutes = {sizeof(ccm_routes_v1), 0, 0, list_routes_fn, create_route_fn,
                                      delete_route_fn};

static ccm_status create_fn(const ccm_call* call, ccm_str config, ccm_provider** out) {
  (void)call;
  (void)config;
  *out = &g_provider;
  return CCM_STATUS_OK;
}
static void destroy_fn(ccm_provider* p) {
  (void)p;
}
static const void* get_capability_fn(ccm_provider* p, ccm_str id) {
  (void)p;
  if (id.size == strlen(CCM_CAP_INSTANCES) && memcmp(id.data, CCM_CAP_INSTANCES, id.size) == 0)
    return &kInstances;
  if (id.size == strlen(CCM_CAP_INSTANCES_BATCH) &&
      memcmp(id.data, CCM_CAP_INSTANCES_BATCH, id.size) == 0)
    return &kBatch;
  if (id.size == strlen(CCM_CAP_LOADBALANCER) &&
      memcmp(id.data, CCM_CAP_LOADBALANCER, id.size) == 0)
    return &kLb;
  if (id.size == strlen(CCM_CAP_ROUTES) && memcmp(id.data, CCM_CAP_ROUTES, id.size) == 0)
    return &kRoutes;
  return NULL;
}

static const ccm_plugin kPlugin = {sizeof(ccm_plugin),  CCM_ABI_MAJOR,    0,
                                   {"fuzz-script", 11}, {"0.0.1", 5},     create_fn,
                                   destroy_fn,          get_capability_fn,
                                   NULL,                {NULL, 0},        {NULL, 0},
                                   {NULL, 0}};

CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* host, const ccm_call* call,
                                                   const ccm_plugin** out) {
  (void)call;
  g_host = host->host;
  g_svc = host->services;
  *out = &kPlugin;
  return CCM_STATUS_OK;
}
