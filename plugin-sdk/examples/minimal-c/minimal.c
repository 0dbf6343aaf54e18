/* minimal.c — a complete ccm provider plugin in plain C11.
 *
 * It knows a fixed set of machines, read from its --cloud-config: one machine per line,
 * "<node-name> <zone> <instance-type> <internal-ip> [running|shutdown]". Lines starting with
 * '#' are comments. It implements the "ccm.instances/1" capability only, so ccm initialises
 * and watches nodes with it; load balancers and routes are simply not offered.
 *
 * Build against the installed SDK:
 *   cc $(pkg-config --cflags ccm-plugin-sdk) -std=c11 -shared -fPIC minimal.c \
 *      $(pkg-config --libs ccm-plugin-sdk) -o minimal.so
 * and run with: cloud-controller-manager --cloud-provider=minimal --cloud-config=machines.txt
 */
#include <ccm/provider_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MACHINES 256
#define FIELD 64

struct machine {
  char name[FIELD];
  char zone[FIELD];
  char type[FIELD];
  char ip[FIELD];
  int shutdown;
};

struct ccm_provider {
  struct machine machines[MAX_MACHINES];
  size_t count;
};

/* Kept from negotiation: the host's handle and service table (valid for the process). */
static ccm_host_handle host;
static const ccm_host_services* services;

static ccm_str str(const char* s) {
  ccm_str out;
  out.data = s;
  out.size = strlen(s);
  return out;
}

static int str_eq(ccm_str a, const char* b) {
  return a.size == strlen(b) && (a.size == 0 || memcmp(a.data, b, a.size) == 0);
}

static void log_line(ccm_log_level level, const char* message) {
  services->log(host, level, str(message));
}

/* Finds the machine for a node: by providerID "minimal://<name>" first, else by node name. */
static const struct machine* find(const struct ccm_provider* p, const ccm_node* node) {
  size_t i;
  static const char prefix[] = "minimal://";
  ccm_str want = node->name;
  if (node->provider_id.size > sizeof prefix - 1 &&
      memcmp(node->provider_id.data, prefix, sizeof prefix - 1) == 0) {
    want.data = node->provider_id.data + sizeof prefix - 1;
    want.size = node->provider_id.size - (sizeof prefix - 1);
  }
  for (i = 0; i < p->count; ++i) {
    if (str_eq(want, p->machines[i].name)) {
      return &p->machines[i];
    }
  }
  return NULL;
}

/* ccm.instances/1 ------------------------------------------------------------------------ */

static ccm_status instance_exists(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                                  ccm_existence* out) {
  (void)call;
  /* Our machine list is authoritative, so "not listed" is a positive NOT_FOUND. A provider
   * that could not reach its cloud would return an error status instead. */
  *out = find(p, node) != NULL ? CCM_EXISTENCE_EXISTS : CCM_EXISTENCE_NOT_FOUND;
  return CCM_STATUS_OK;
}

static ccm_status instance_shutdown(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                                    ccm_power* out) {
  const struct machine* m = find(p, node);
  if (m == NULL) {
    services->set_error(host, call->call_id, str("no such machine"), 0);
    return CCM_STATUS_NOT_FOUND;
  }
  *out = m->shutdown ? CCM_POWER_SHUTDOWN : CCM_POWER_RUNNING;
  return CCM_STATUS_OK;
}

static ccm_status instance_metadata(ccm_provider* p, const ccm_call* call,
                                    const ccm_node* node) {
  char provider_id[FIELD + 16];
  ccm_node_address addresses[2];
  ccm_instance_metadata md;
  const struct machine* m = find(p, node);
  if (m == NULL) {
    services->set_error(host, call->call_id, str("no such machine"), 0);
    return CCM_STATUS_NOT_FOUND;
  }
  snprintf(provider_id, sizeof provider_id, "minimal://%s", m->name);
  addresses[0].type = str("InternalIP");
  addresses[0].address = str(m->ip);
  addresses[1].type = str("Hostname");
  addresses[1].address = str(m->name);
  memset(&md, 0, sizeof md);
  md.struct_size = sizeof md;
  md.provider_id = str(provider_id);
  md.instance_type = str(m->type);
  md.zone = str(m->zone);
  md.region = str("minimal-region");
  md.addresses = addresses;
  md.address_count = 2;
  /* The host copies everything before emit returns: stack buffers are fine. */
  services->emit_instance_metadata(host, call->call_id, 0, &md);
  return CCM_STATUS_OK;
}

static const ccm_instances_v1 instances = {
    sizeof(ccm_instances_v1),
    0, /* max_concurrency: no limit (this provider only reads memory) */
    0, /* flags */
    instance_exists,
    instance_shutdown,
    instance_metadata,
};

/* Lifecycle ------------------------------------------------------------------------------ */

static ccm_status create(const ccm_call* call, ccm_str config, ccm_provider** out) {
  char line[512];
  char message[600];
  size_t pos = 0;
  int line_no = 0;
  struct ccm_provider* p = calloc(1, sizeof *p);
  if (p == NULL) {
    services->set_error(host, call->call_id, str("out of memory"), 0);
    return CCM_STATUS_RESOURCE_EXHAUSTED;
  }
  while (pos < config.size) {
    size_t len = 0;
    char state[FIELD] = "running";
    struct machine m;
    int fields;
    while (pos < config.size && config.data[pos] != '\n' && len + 1 < sizeof line) {
      line[len++] = config.data[pos++];
    }
    line[len] = '\0';
    while (pos < config.size && config.data[pos] != '\n') {
      ++pos; /* ignore the rest of an overlong line */
    }
    ++pos;
    ++line_no;
    if (len == 0 || line[0] == '#') {
      continue;
    }
    memset(&m, 0, sizeof m);
    fields = sscanf(line, "%63s %63s %63s %63s %63s", m.name, m.zone, m.type, m.ip, state);
    if (fields < 4 || (strcmp(state, "running") != 0 && strcmp(state, "shutdown") != 0)) {
      snprintf(message, sizeof message,
               "line %d: expected \"<name> <zone> <type> <ip> [running|shutdown]\", got \"%s\"",
               line_no, line);
      services->set_error(host, call->call_id, str(message), 0);
      free(p);
      return CCM_STATUS_INVALID_ARGUMENT;
    }
    if (p->count == MAX_MACHINES) {
      services->set_error(host, call->call_id, str("too many machines (at most 256)"), 0);
      free(p);
      return CCM_STATUS_INVALID_ARGUMENT;
    }
    m.shutdown = strcmp(state, "shutdown") == 0;
    p->machines[p->count++] = m;
  }
  snprintf(message, sizeof message, "minimal provider ready with %zu machines", p->count);
  log_line(CCM_LOG_INFO, message);
  *out = p;
  return CCM_STATUS_OK;
}

static void destroy(ccm_provider* p) { free(p); }

static const void* get_capability(ccm_provider* p, ccm_str id) {
  (void)p;
  return str_eq(id, CCM_CAP_INSTANCES) ? &instances : NULL;
}

/* Designated initializers: fields a later ABI minor appends read as zero ("absent") and the
 * table keeps compiling warning-free when the header grows. */
static ccm_plugin plugin = {
    .struct_size = sizeof(ccm_plugin),
    .abi_major = CCM_ABI_MAJOR,
    .abi_minor = CCM_ABI_MINOR,
    .name = {"minimal", 7},
    .version = {"1.0.0", 5},
    .create = create,
    .destroy = destroy,
    .get_capability = get_capability,
    .provider_id_prefix = {"minimal://", 10},
};

CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* info,
                                                   const ccm_call* call,
                                                   const ccm_plugin** out) {
  if (info->abi_major != CCM_ABI_MAJOR) {
    /* Refuse, naming both versions: the message goes through set_error keyed by this
     * call's call_id, when the host's table is long enough to have that slot. */
    const ccm_host_services* s = info->services;
    if (call != NULL && s != NULL &&
        s->struct_size >= offsetof(ccm_host_services, set_error) + sizeof s->set_error &&
        s->set_error != NULL) {
      char message[96];
      snprintf(message, sizeof message, "minimal speaks ABI %d.%d, the host ABI %u.%u",
               CCM_ABI_MAJOR, CCM_ABI_MINOR, (unsigned)info->abi_major, (unsigned)info->abi_minor);
      s->set_error(info->host, call->call_id, str(message), 0);
    }
    return CCM_STATUS_FAILED_PRECONDITION; /* and never touch the rest of its tables */
  }
  host = info->host;
  services = info->services;
  /* Speak the host's minor when it is older, never a newer one. */
  plugin.abi_minor = ccm_abi_negotiated_minor(info->abi_minor, CCM_ABI_MINOR);
  *out = &plugin;
  return CCM_STATUS_OK;
}
