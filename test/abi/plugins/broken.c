/* Conformance kit: plugins that break the ccm plugin ABI in one way each. Built once per
 * breakage with -DBREAK_<KIND> and -DPLUGIN_NAME="<file name>"; the host must turn each into
 * the documented error or recovery, and never crash.
 *
 * Without a BREAK_ define this is a correct provider with instances and load balancers,
 * used as the baseline. With SPEAKS_1_1 it is a correct ABI 1.1 provider (the "v11" kit
 * plugin): it declares providerID prefix "kit://", annotation domain "kit.example.com" and
 * metric namespace "kit", logs with fields, and returns the annotations the test asks for;
 * its providerIDs are inside its prefix. BREAK_OUT_OF_PREFIX is that provider answering a
 * providerID outside its declared prefix (the "out-of-prefix" kit plugin).
 * The variants that hang, crash or emit malformed output do it in instance_metadata (and,
 * for output, in the load balancer calls too), or in the lifecycle call their name says. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ccm/provider_abi.h"

#ifndef PLUGIN_NAME
#error "PLUGIN_NAME must be defined"
#endif

#if defined(BREAK_OUT_OF_PREFIX)
#define SPEAKS_1_1
#endif

static ccm_host_handle g_host;
static const ccm_host_services* g_services;

static ccm_str s(const char* text) {
  ccm_str out;
  out.data = text;
  out.size = strlen(text);
  return out;
}

struct ccm_provider {
  int unused;
};
static struct ccm_provider g_provider;

#if defined(BREAK_HANGS) || defined(BREAK_STRAY_THREAD) || defined(BREAK_HANGS_IN_ENTRY) || \
    defined(BREAK_HANGS_IN_CREATE) || defined(WAITS_WHEN_ASKED)
static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}
#endif

#if defined(BREAK_HANGS_IN_ENTRY) || defined(BREAK_HANGS_IN_CREATE)
/* Never returns and ignores its deadline (an authentication to an unreachable cloud with no
 * timeout of its own). The host gives up on it; the process exit ends it. */
static void hang_forever(void) {
  for (;;) {
    sleep_ms(1000);
  }
}
#endif

#if defined(BREAK_CRASHES) || defined(BREAK_CRASHES_WHILE_MARKED)
/* Where the crashing call writes: an address no process has mapped. Volatile, so the
 * compiler cannot see through it. */
static int* volatile g_wild = (int*)(uintptr_t)16;
#endif

#if defined(BREAK_OVERFLOWS)
/* Unbounded recursion that the compiler cannot turn into a loop. */
static int recurse(volatile char* previous, int depth) {
  volatile char frame[512];
  if (depth < 0) { /* never: the stack runs out first */
    return 0;
  }
  frame[0] = (char)depth;
  frame[511] = previous != NULL ? previous[0] : 0;
  return recurse(frame, depth + 1) + frame[511];
}
#endif

/* ---- instances ---- */

static ccm_status exists_fn(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                            ccm_existence* out) {
  (void)p;
  (void)call;
  (void)node;
#if defined(BREAK_UNKNOWN_STATUS)
  g_services->set_error(g_host, call->call_id, s("something odd"), 0);
  return 777;
#else
#if defined(SPEAKS_1_1)
  {
    ccm_kv fields[3];
    fields[0].key = s("node");
    fields[0].value = node->name;
    fields[1].key = s("bad key");
    fields[1].value = s("dropped");
    fields[2].key = s("zone");
    fields[2].value = s("zone-a");
    g_services->log_fields(g_host, CCM_LOG_INFO, s("kit: checked an instance"), fields, 3);
    g_services->metric(g_host, CCM_METRIC_COUNTER, s("kit_checks_total"), s("Checks."), NULL, 0,
                       1);
    g_services->metric(g_host, CCM_METRIC_COUNTER, s("kitchen_checks_total"), s("Checks."),
                       NULL, 0, 1);
  }
#endif
#if defined(BREAK_BAD_METRIC)
  g_services->metric(g_host, CCM_METRIC_COUNTER, s("Bad-Name"), s("Checks."), NULL, 0, 1);
#endif
#if defined(BREAK_WRONG_OUTPUT)
  /* instance_exists returns no output: the host refuses this emit. */
  g_services->emit_string(g_host, call->call_id, s("surprise"));
#endif
#if defined(BREAK_BAD_EXISTENCE)
  *out = (ccm_existence)7; /* none of the ABI's values */
#else
  *out = CCM_EXISTENCE_EXISTS;
#endif
  return CCM_STATUS_OK;
#endif
}

static ccm_status shutdown_fn(ccm_provider* p, const ccm_call* call, const ccm_node* node,
                              ccm_power* out) {
  (void)p;
  (void)call;
  (void)node;
#if defined(BREAK_BAD_EXISTENCE)
  *out = (ccm_power)9; /* none of the ABI's values */
#else
  *out = CCM_POWER_RUNNING;
#endif
  return CCM_STATUS_OK;
}

#if defined(BREAK_STRAY_THREAD)
static uint64_t g_stray_call;
static void* stray(void* arg) {
  ccm_instance_metadata md;
  (void)arg;
  sleep_ms(200);
  memset(&md, 0, sizeof md);
  md.struct_size = sizeof md;
  md.provider_id = s("broken://late");
  /* The call this ID belonged to has returned: the host must refuse this. */
  g_services->emit_instance_metadata(g_host, g_stray_call, 0, &md);
  return NULL;
}
#endif

#if defined(WAITS_WHEN_ASKED)
static void touch(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "w");
  if (f != NULL) {
    fclose(f);
  }
}

/* When CCM_KIT_CANCEL_DIR names a folder: creates <dir>/waiting, then waits (at most two
 * minutes) until the host says the call is cancelled, creates <dir>/cancelled and answers
 * true. A test of cancellation reaching the plugin (an isolated provider's child included);
 * without the variable the baseline answers at once. */
static bool waited_for_cancel(const ccm_call* call) {
  const char* dir = getenv("CCM_KIT_CANCEL_DIR");
  if (dir == NULL) {
    return false;
  }
  touch(dir, "waiting");
  for (int i = 0; i < 12000; ++i) {
    if (g_services->is_cancelled(g_host, call->call_id)) {
      touch(dir, "cancelled");
      return true;
    }
    sleep_ms(10);
  }
  return false;
}
#endif

static ccm_status metadata_fn(ccm_provider* p, const ccm_call* call, const ccm_node* node) {
  ccm_instance_metadata md;
  ccm_node_address addrs[2];
  (void)p;
  memset(&md, 0, sizeof md);
  md.struct_size = sizeof md;
  md.provider_id = s("broken://vm-1");
  md.instance_type = s("small");
  md.zone = s("zone-a");
  md.region = s("region-1");
  addrs[0].type = s("InternalIP");
  addrs[0].address = s("10.0.0.1");
  addrs[1].type = s("Hostname");
  addrs[1].address = node->name;
  md.addresses = addrs;
  md.address_count = 2;
#if defined(WAITS_WHEN_ASKED)
  if (waited_for_cancel(call)) {
    return CCM_STATUS_CANCELLED;
  }
#endif
#if defined(BREAK_HANGS)
  /* Ignores its deadline and cancellation: the host must abandon the call. */
  sleep_ms(3000);
#elif defined(BREAK_STRAY_THREAD)
  {
    pthread_t t;
    g_stray_call = call->call_id;
    pthread_create(&t, NULL, stray, NULL);
    pthread_detach(t);
    return CCM_STATUS_OK; /* no metadata yet */
  }
#elif defined(BREAK_MALFORMED)
  addrs[0].type = s("Bogus");
  addrs[1].address = s("\xff\xfe not utf-8");
#elif defined(BREAK_NO_METADATA)
  /* Upstream's nil metadata: OK without an answer means "not yet". */
  (void)node;
  return CCM_STATUS_OK;
#elif defined(BREAK_NO_PROVIDER_ID)
  md.provider_id = s("");
#elif defined(BREAK_OUT_OF_PREFIX)
  md.provider_id = s("other://vm-1"); /* outside the declared "kit://" */
#elif defined(SPEAKS_1_1)
  /* The node's own providerID when it is one of ours; else one inside the prefix. */
  md.provider_id = s("kit://vm-1");
  if (node->provider_id.size >= 6 && memcmp(node->provider_id.data, "kit://", 6) == 0) {
    md.provider_id = node->provider_id;
  }
#elif defined(BREAK_MINOR0_DECLARES)
  /* The node's own providerID when it has one (a 1.0 plugin has no prefix to keep). */
  if (node->provider_id.size > 0) {
    md.provider_id = node->provider_id;
  }
#elif defined(BREAK_CRASHES)
  /* A wild write: SIGSEGV inside the call. */
  *g_wild = 1;
#elif defined(BREAK_CRASHES_WHILE_MARKED)
  /* Crashes while the file CCM_KIT_CRASH_MARKER names exists, and works once it is gone: a
   * test of recovery (the host restarts an isolated provider that crashed). */
  {
    const char* marker = getenv("CCM_KIT_CRASH_MARKER");
    if (marker != NULL && access(marker, F_OK) == 0) {
      *g_wild = 1;
    }
  }
#elif defined(BREAK_ABORTS)
  abort();
#elif defined(BREAK_OVERFLOWS)
  md.address_count = (size_t)recurse(NULL, 0);
#elif defined(BREAK_NULL_DATA)
  md.provider_id.data = NULL;
  md.provider_id.size = 12;
#elif defined(BREAK_NULL_ARRAYS)
  md.addresses = NULL;
  md.address_count = 3;
#endif
  g_services->emit_instance_metadata(g_host, call->call_id, 0, &md);
  return CCM_STATUS_OK;
}

static ccm_instances_v1 g_instances = {
    sizeof(ccm_instances_v1),
#if defined(BREAK_HANGS)
    2, /* max_concurrency */
#else
    0,
#endif
    0,
    exists_fn,
    shutdown_fn,
#if defined(BREAK_NULL_CAP_SLOT)
    NULL,
#else
    metadata_fn,
#endif
};

/* ---- load balancers (only to carry malformed output) ---- */

static ccm_status lb_get(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                         const ccm_service* svc, bool* exists) {
  (void)p;
  (void)call;
  (void)cluster;
  (void)svc;
#if defined(BREAK_NO_STATUS)
  *exists = true; /* ... and no emit_lb_status */
#else
  *exists = false;
#endif
  return CCM_STATUS_OK;
}
static ccm_status lb_name(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                          const ccm_service* svc) {
  (void)p;
  (void)cluster;
#if defined(BREAK_NULL_DATA)
  {
    ccm_str bad;
    bad.data = NULL;
    bad.size = 5;
    g_services->emit_string(g_host, call->call_id, bad);
    return CCM_STATUS_OK;
  }
#endif
  g_services->emit_string(g_host, call->call_id, svc->name);
  return CCM_STATUS_OK;
}
static ccm_status lb_ensure(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                            const ccm_service* svc, const ccm_node* const* nodes, size_t n) {
  ccm_lb_ingress ing;
  const ccm_lb_ingress* list[1];
  ccm_lb_status st;
#if defined(SPEAKS_1_1) || defined(BREAK_MINOR0_DECLARES)
  /* Annotations as the Service asks: "test/set" names a key to set (to "v1"), "test/remove"
   * a key to remove. */
  ccm_kv set[1];
  ccm_str removed[1];
  size_t k;
#endif
  (void)p;
  (void)cluster;
  (void)svc;
  (void)nodes;
  (void)n;
  memset(&st, 0, sizeof st);
  memset(&ing, 0, sizeof ing);
  ing.struct_size = sizeof ing;
#if defined(BREAK_MALFORMED)
  ing.ip = s("not-an-ip");
#else
  ing.ip = s("192.0.2.10");
#endif
  list[0] = &ing;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  st.ingress = list;
  st.ingress_count = 1;
#if defined(SPEAKS_1_1) || defined(BREAK_MINOR0_DECLARES)
  for (k = 0; k < svc->annotation_count; ++k) {
    const ccm_kv* a = &svc->annotations[k];
    if (a->key.size == 8 && memcmp(a->key.data, "test/set", 8) == 0) {
      set[0].key = a->value;
      set[0].value = s("v1");
      st.annotations = set;
      st.annotation_count = 1;
    } else if (a->key.size == 11 && memcmp(a->key.data, "test/remove", 11) == 0) {
      removed[0] = a->value;
      st.removed_annotations = removed;
      st.removed_annotation_count = 1;
    }
  }
#endif
#if defined(BREAK_NULL_DATA)
  st.ingress = NULL; /* {ingress=NULL, ingress_count=1} */
#elif defined(BREAK_NULL_ARRAYS)
  ing.ports = NULL; /* {ports=NULL, port_count=2} */
  ing.port_count = 2;
#endif
#if !defined(BREAK_NO_STATUS)
  g_services->emit_lb_status(g_host, call->call_id, &st);
#endif
  return CCM_STATUS_OK;
}
static ccm_status lb_update(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                            const ccm_service* svc, const ccm_node* const* nodes, size_t n) {
  (void)p;
  (void)call;
  (void)cluster;
  (void)svc;
  (void)nodes;
  (void)n;
  return CCM_STATUS_OK;
}
static ccm_status lb_delete(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                            const ccm_service* svc) {
  (void)p;
  (void)call;
  (void)cluster;
  (void)svc;
  return CCM_STATUS_OK;
}
static ccm_loadbalancer_v1 g_lb = {sizeof(ccm_loadbalancer_v1), 0, 0, lb_get, lb_name,
                                   lb_ensure, lb_update, lb_delete};

/* ---- lifecycle ---- */

#if defined(BREAK_NOISY)
/* A log message of 20 KiB (over the host's 16 KiB limit) that starts with invalid UTF-8, a
 * terminal escape and a newline, and an error message of 5 KiB (over 4 KiB). */
static char g_noise[20 * 1024];
static char g_long_error[5 * 1024];
#endif

static ccm_status create_fn(const ccm_call* call, ccm_str config, ccm_provider** out) {
  (void)config;
#if defined(BREAK_HANGS_IN_CREATE)
  (void)call;
  (void)out;
  hang_forever();
#endif
#if defined(BREAK_NOISY)
  {
    ccm_str noise;
    ccm_str err;
    memset(g_noise, 'n', sizeof g_noise);
    static const char prefix[] = "noisy \xff\xfe \x1b[31mred\n";
    memcpy(g_noise, prefix, sizeof prefix - 1);
    noise.data = g_noise;
    noise.size = sizeof g_noise;
    g_services->log(g_host, CCM_LOG_WARNING, noise);
    memset(g_long_error, 'e', sizeof g_long_error);
    memcpy(g_long_error, "long refusal: ", 14);
    err.data = g_long_error;
    err.size = sizeof g_long_error;
    g_services->set_error(g_host, call->call_id, err, 0);
    return CCM_STATUS_INVALID_ARGUMENT;
  }
#endif
#if defined(BREAK_REFUSES_CONFIG)
  g_services->set_error(g_host, call->call_id,
                        s("[Global] auth-url is required but missing"), 0);
  return CCM_STATUS_INVALID_ARGUMENT;
#else
  (void)call;
  *out = &g_provider;
  return CCM_STATUS_OK;
#endif
}

static void destroy_fn(ccm_provider* p) { (void)p; }

static const void* capability_fn(ccm_provider* p, ccm_str id) {
  (void)p;
#if defined(BREAK_NO_CAPABILITY)
  (void)id;
  return NULL;
#endif
  if (id.size == strlen(CCM_CAP_INSTANCES) && memcmp(id.data, CCM_CAP_INSTANCES, id.size) == 0) {
    return &g_instances;
  }
  if (id.size == strlen(CCM_CAP_LOADBALANCER) &&
      memcmp(id.data, CCM_CAP_LOADBALANCER, id.size) == 0) {
    return &g_lb;
  }
  return NULL;
}

static ccm_plugin g_plugin;

#if defined(BREAK_NO_ENTRY)
#define ENTRY_NAME some_other_symbol
#elif defined(BREAK_ENTRY_V2)
#define ENTRY_NAME ccm_provider_entry_v2
#else
#define ENTRY_NAME ccm_provider_entry_v1
#endif

CCM_PLUGIN_EXPORT ccm_status ENTRY_NAME(const ccm_host_info* host, const ccm_call* call,
                                        const ccm_plugin** out);

CCM_PLUGIN_EXPORT ccm_status ENTRY_NAME(const ccm_host_info* host, const ccm_call* call,
                                        const ccm_plugin** out) {
  g_host = host->host;
  g_services = host->services;
#if defined(BREAK_HANGS_IN_ENTRY)
  (void)call;
  (void)out;
  hang_forever();
#endif
#if defined(BREAK_REFUSES_NEGOTIATION)
  g_services->set_error(g_host, call->call_id, s("this plugin needs ABI 1.3 features"), 0);
  return CCM_STATUS_FAILED_PRECONDITION;
#else
  (void)call;
#endif
  g_plugin.struct_size = sizeof g_plugin;
  g_plugin.abi_major = CCM_ABI_MAJOR;
  g_plugin.abi_minor = 0;
  g_plugin.name = s(PLUGIN_NAME);
  g_plugin.version = s("9.9.9");
  g_plugin.create = create_fn;
  g_plugin.destroy = destroy_fn;
  g_plugin.get_capability = capability_fn;
#if defined(BREAK_WRONG_MAJOR)
  g_plugin.abi_major = 2;
#elif defined(BREAK_MINOR_TOO_NEW)
  g_plugin.abi_minor = 5;
#elif defined(BREAK_SHORT_STRUCT)
  g_plugin.struct_size = 8;
#elif defined(BREAK_NULL_SLOT)
  g_plugin.create = NULL;
#elif defined(BREAK_WRONG_NAME)
  g_plugin.name = s("somebody-else");
#elif defined(BREAK_BAD_VERSION)
  g_plugin.version = s("1.0\x1b[2J\n");
#elif defined(BREAK_LONG_VERSION)
  {
    static char long_version[1 << 20];
    memset(long_version, '7', sizeof long_version);
    g_plugin.version.data = long_version;
    g_plugin.version.size = sizeof long_version;
  }
#elif defined(BREAK_NULL_TABLE)
  *out = NULL;
  return CCM_STATUS_OK;
#elif defined(BREAK_BAD_PREFIX)
  g_plugin.abi_minor = 1;
  g_plugin.provider_id_prefix = s("Kit:/vm");
#elif defined(BREAK_BAD_DOMAIN)
  g_plugin.abi_minor = 1;
  g_plugin.annotation_domain = s("lb.k8s.io");
#elif defined(BREAK_BAD_NAMESPACE)
  g_plugin.abi_minor = 1;
  g_plugin.metric_namespace = s("workqueue");
#elif defined(BREAK_MINOR0_DECLARES)
  /* Speaks 1.0 but fills the 1.1 fields: the host must not read them. */
  g_plugin.provider_id_prefix = s("kit://");
  g_plugin.annotation_domain = s("kit.example.com");
  g_plugin.metric_namespace = s("kit");
#elif defined(SPEAKS_1_1)
  g_plugin.abi_minor = host->abi_minor < 1 ? host->abi_minor : 1;
  g_plugin.provider_id_prefix = s("kit://");
  g_plugin.annotation_domain = s("kit.example.com");
  g_plugin.metric_namespace = s("kit");
#endif
  *out = &g_plugin;
  return CCM_STATUS_OK;
}
