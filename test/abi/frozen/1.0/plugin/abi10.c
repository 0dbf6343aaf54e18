/* abi10.c — a provider built against the frozen ABI 1.0 header (test/abi/frozen/1.0), which
 * every later host of major 1 must keep loading and driving unchanged. Never port it to a
 * newer header: it stands for the plugins already built and shipped.
 *
 * Capabilities: "ccm.instances/1" (every node exists, runs, and gets metadata: providerID
 * "abi10://<node>", the configured zone and region, its InternalIP kept and its Hostname) and
 * "ccm.loadbalancer/1" (an in-memory load balancer per Service, with an address from
 * 192.0.2.0/24). Config: optional "zone=<z>" and "region=<r>" lines; any other key is refused
 * with a message.
 */
#include <ccm/provider_abi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LBS 64
#define FIELD 64

struct lb {
  char uid[FIELD];
  char ip[FIELD];
  int used;
};

struct ccm_provider {
  char zone[FIELD];
  char region[FIELD];
  pthread_mutex_t lock; /* guards lbs */
  struct lb lbs[MAX_LBS];
};

static ccm_host_handle host;
static const ccm_host_services* services;

static ccm_str str(const char* s) {
  ccm_str out;
  out.data = s;
  out.size = strlen(s);
  return out;
}

static int str_eq(ccm_str a, const char* b) {
  size_t n = strlen(b);
  return a.size == n && (n == 0 || memcmp(a.data, b, n) == 0);
}

/* Copies a borrowed view into a NUL-terminated buffer; 0 when it does not fit. */
static int copy_view(char* out, size_t cap, ccm_str in) {
  if (in.size >= cap) {
    return 0;
  }
  if (in.size > 0) {
    memcpy(out, in.data, in.size);
  }
  out[in.size] = '\0';
  return 1;
}

static void fail(const ccm_call* call, const char* message) {
  services->set_error(host, call->call_id, str(message), 0);
}

/* ---- ccm.instances/1 ---------------------------------------------------------------------- */

static ccm_status instance_exists(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                                  ccm_existence* out) {
  (void)p;
  (void)call;
  (void)node;
  *out = CCM_EXISTENCE_EXISTS;
  return CCM_STATUS_OK;
}

static ccm_status instance_shutdown(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                                    ccm_power* out) {
  (void)p;
  (void)call;
  (void)node;
  *out = CCM_POWER_RUNNING;
  return CCM_STATUS_OK;
}

static ccm_status instance_metadata(ccm_provider* p, const ccm_call* call, const ccm_node* node) {
  char name[FIELD];
  char provider_id[FIELD + 16];
  ccm_node_address addresses[2];
  size_t count = 0;
  size_t i;
  ccm_instance_metadata md;
  if (!copy_view(name, sizeof name, node->name)) {
    fail(call, "node name longer than 63 bytes");
    return CCM_STATUS_INVALID_ARGUMENT;
  }
  snprintf(provider_id, sizeof provider_id, "abi10://%s", name);
  for (i = 0; i < node->address_count; i++) {
    if (str_eq(node->addresses[i].type, "InternalIP")) {
      addresses[count++] = node->addresses[i];
      break;
    }
  }
  addresses[count].type = str("Hostname");
  addresses[count].address = node->name;
  count++;
  memset(&md, 0, sizeof md);
  md.struct_size = sizeof md;
  md.provider_id = str(provider_id);
  md.instance_type = str("frozen.small");
  md.zone = str(p->zone);
  md.region = str(p->region);
  md.addresses = addresses;
  md.address_count = count;
  services->emit_instance_metadata(host, call->call_id, 0, &md);
  return CCM_STATUS_OK;
}

static const ccm_instances_v1 instances = {
    sizeof(ccm_instances_v1), 0, 0, instance_exists, instance_shutdown, instance_metadata};

/* ---- ccm.loadbalancer/1 ------------------------------------------------------------------- */

/* The slot of service's load balancer, or -1. Caller holds p->lock. */
static int find_lb(ccm_provider* p, const ccm_service* service) {
  int i;
  for (i = 0; i < MAX_LBS; i++) {
    if (p->lbs[i].used && str_eq(service->uid, p->lbs[i].uid)) {
      return i;
    }
  }
  return -1;
}

static void emit_status(const ccm_call* call, const char* ip) {
  ccm_lb_ingress ingress;
  const ccm_lb_ingress* list[1];
  ccm_lb_status status;
  memset(&ingress, 0, sizeof ingress);
  ingress.struct_size = sizeof ingress;
  ingress.ip = str(ip);
  list[0] = &ingress;
  memset(&status, 0, sizeof status);
  status.struct_size = sizeof status;
  status.ingress = list;
  status.ingress_count = 1;
  services->emit_lb_status(host, call->call_id, &status);
}

static ccm_status get_lb(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                         const ccm_service* service, bool* out_exists) {
  char ip[FIELD];
  int i;
  (void)cluster;
  pthread_mutex_lock(&p->lock);
  i = find_lb(p, service);
  if (i >= 0) {
    memcpy(ip, p->lbs[i].ip, sizeof ip);
  }
  pthread_mutex_unlock(&p->lock);
  *out_exists = i >= 0;
  if (i >= 0) {
    emit_status(call, ip);
  }
  return CCM_STATUS_OK;
}

static ccm_status lb_name(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                          const ccm_service* service) {
  char uid[FIELD];
  char name[FIELD + 8];
  (void)p;
  (void)cluster;
  if (!copy_view(uid, sizeof uid, service->uid)) {
    fail(call, "service uid longer than 63 bytes");
    return CCM_STATUS_INVALID_ARGUMENT;
  }
  snprintf(name, sizeof name, "abi10-%s", uid);
  services->emit_string(host, call->call_id, str(name));
  return CCM_STATUS_OK;
}

static ccm_status ensure_lb(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                            const ccm_service* service, const ccm_node* const* nodes,
                            size_t node_count) {
  char ip[FIELD];
  int i;
  int free_slot = -1;
  (void)cluster;
  (void)nodes;
  (void)node_count;
  pthread_mutex_lock(&p->lock);
  i = find_lb(p, service);
  if (i < 0) {
    for (i = 0; i < MAX_LBS && free_slot < 0; i++) {
      if (!p->lbs[i].used) {
        free_slot = i;
      }
    }
    i = free_slot;
    if (i >= 0 && copy_view(p->lbs[i].uid, FIELD, service->uid)) {
      p->lbs[i].used = 1;
      snprintf(p->lbs[i].ip, FIELD, "192.0.2.%d", i + 1);
    } else {
      i = -1;
    }
  }
  if (i >= 0) {
    memcpy(ip, p->lbs[i].ip, sizeof ip);
  }
  pthread_mutex_unlock(&p->lock);
  if (i < 0) {
    fail(call, "no room for another load balancer (at most 64), or a uid over 63 bytes");
    return CCM_STATUS_RESOURCE_EXHAUSTED;
  }
  emit_status(call, ip);
  return CCM_STATUS_OK;
}

static ccm_status update_lb(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                            const ccm_service* service, const ccm_node* const* nodes,
                            size_t node_count) {
  int i;
  (void)cluster;
  (void)nodes;
  (void)node_count;
  pthread_mutex_lock(&p->lock);
  i = find_lb(p, service);
  pthread_mutex_unlock(&p->lock);
  if (i < 0) {
    fail(call, "no load balancer for this service");
    return CCM_STATUS_NOT_FOUND;
  }
  return CCM_STATUS_OK;
}

static ccm_status delete_lb(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                            const ccm_service* service) {
  int i;
  (void)call;
  (void)cluster;
  pthread_mutex_lock(&p->lock);
  i = find_lb(p, service);
  if (i >= 0) {
    p->lbs[i].used = 0;
  }
  pthread_mutex_unlock(&p->lock);
  return CCM_STATUS_OK;
}

static const ccm_loadbalancer_v1 loadbalancer = {
    sizeof(ccm_loadbalancer_v1), 0, 0, get_lb, lb_name, ensure_lb, update_lb, delete_lb};

/* ---- lifecycle ---------------------------------------------------------------------------- */

/* Reads "key=value" lines into p; on a bad line writes a message and returns 0. */
static int parse_config(ccm_provider* p, ccm_str config, char* message, size_t cap) {
  size_t pos = 0;
  int line = 0;
  while (pos < config.size) {
    size_t end = pos;
    size_t eq;
    char key[FIELD];
    ccm_str value;
    while (end < config.size && config.data[end] != '\n') {
      end++;
    }
    line++;
    for (eq = pos; eq < end && config.data[eq] != '='; eq++) {
    }
    if (end > pos) {
      ccm_str k;
      k.data = config.data + pos;
      k.size = eq - pos;
      value.data = config.data + eq + 1;
      value.size = eq < end ? end - eq - 1 : 0;
      if (eq == end || !copy_view(key, sizeof key, k)) {
        snprintf(message, cap, "line %d: expected key=value", line);
        return 0;
      }
      if (strcmp(key, "zone") != 0 && strcmp(key, "region") != 0) {
        snprintf(message, cap, "line %d: unknown key %s (zone and region are known)", line, key);
        return 0;
      }
      if (!copy_view(strcmp(key, "zone") == 0 ? p->zone : p->region, FIELD, value)) {
        snprintf(message, cap, "line %d: %s is longer than 63 bytes", line, key);
        return 0;
      }
    }
    pos = end + 1;
  }
  return 1;
}

static ccm_status create(const ccm_call* call, ccm_str config, ccm_provider** out) {
  char message[64 + 2 * FIELD + 64];
  ccm_provider* p = calloc(1, sizeof *p);
  if (p == NULL) {
    fail(call, "out of memory");
    return CCM_STATUS_RESOURCE_EXHAUSTED;
  }
  strcpy(p->zone, "frozen-zone");
  strcpy(p->region, "frozen-region");
  if (!parse_config(p, config, message, sizeof message)) {
    free(p);
    fail(call, message);
    return CCM_STATUS_INVALID_ARGUMENT;
  }
  pthread_mutex_init(&p->lock, NULL);
  snprintf(message, sizeof message, "abi10 provider ready (zone %s, region %s)", p->zone,
           p->region);
  services->log(host, CCM_LOG_INFO, str(message));
  *out = p;
  return CCM_STATUS_OK;
}

static void destroy(ccm_provider* p) {
  pthread_mutex_destroy(&p->lock);
  free(p);
}

static const void* get_capability(ccm_provider* p, ccm_str id) {
  (void)p;
  if (str_eq(id, CCM_CAP_INSTANCES)) {
    return &instances;
  }
  if (str_eq(id, CCM_CAP_LOADBALANCER)) {
    return &loadbalancer;
  }
  return NULL;
}

/* The 1.0 table: eight fields, struct_size 72. */
static const ccm_plugin plugin = {sizeof(ccm_plugin), CCM_ABI_MAJOR, CCM_ABI_MINOR, {"abi10", 5},
                                  {"1.0.0", 5},       create,        destroy,       get_capability};

CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* info, const ccm_call* call,
                                                   const ccm_plugin** out) {
  (void)call;
  if (info->abi_major != CCM_ABI_MAJOR) {
    return CCM_STATUS_FAILED_PRECONDITION;
  }
  host = info->host;
  services = info->services;
  *out = &plugin; /* minor 0: no host of major 1 speaks less */
  return CCM_STATUS_OK;
}
