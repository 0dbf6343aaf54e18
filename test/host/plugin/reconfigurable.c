/* reconfigurable.so: a 1.1 plugin with a reconfigure slot and the smallest capability (routes
 * that list nothing: the host refuses a provider without any), for the host's reconfigure
 * call path. The config's first word picks the behaviour:
 *
 *   "refuse <message>"  INVALID_ARGUMENT with <message>
 *   "wait <path>"       returns OK once <path> exists (polled every 10 ms, at most 60 s), so a
 *                       test can hold a reconfigure past its deadline and then let it go
 *   anything else       OK; the bytes are remembered and counted
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ccm/provider_abi.h"

static ccm_host_handle g_host;
static const ccm_host_services* g_services;

struct ccm_provider {
  int applied; /* successful reconfigures */
};
static struct ccm_provider g_provider;

static int starts(ccm_str a, const char* prefix) {
  size_t n = strlen(prefix);
  return a.size >= n && memcmp(a.data, prefix, n) == 0;
}

static ccm_status create_fn(const ccm_call* call, ccm_str config, ccm_provider** out) {
  (void)call;
  (void)config;
  g_provider.applied = 0;
  *out = &g_provider;
  return CCM_STATUS_OK;
}

static void destroy_fn(ccm_provider* p) {
  (void)p;
}

static ccm_status list_routes_fn(ccm_provider* p, const ccm_call* call, ccm_str cluster) {
  (void)p;
  (void)call;
  (void)cluster;
  return CCM_STATUS_OK;
}

static ccm_status create_route_fn(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                                  ccm_str hint, const ccm_route* route) {
  (void)p;
  (void)call;
  (void)cluster;
  (void)hint;
  (void)route;
  return CCM_STATUS_UNIMPLEMENTED;
}

static ccm_status delete_route_fn(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                                  const ccm_route* route) {
  (void)p;
  (void)call;
  (void)cluster;
  (void)route;
  return CCM_STATUS_UNIMPLEMENTED;
}

static const ccm_routes_v1 g_routes = {sizeof(ccm_routes_v1), 0, 0, list_routes_fn,
                                       create_route_fn, delete_route_fn};

static const void* capability_fn(ccm_provider* p, ccm_str id) {
  (void)p;
  if (id.size == strlen(CCM_CAP_ROUTES) && memcmp(id.data, CCM_CAP_ROUTES, id.size) == 0) {
    return &g_routes;
  }
  return NULL;
}

static ccm_status reconfigure_fn(ccm_provider* p, const ccm_call* call, ccm_str config) {
  if (starts(config, "refuse ")) {
    ccm_str message = {config.data + 7, config.size - 7};
    g_services->set_error(g_host, call->call_id, message, 0);
    return CCM_STATUS_INVALID_ARGUMENT;
  }
  if (starts(config, "wait ")) {
    char path[512];
    size_t n = config.size - 5 < sizeof path - 1 ? config.size - 5 : sizeof path - 1;
    struct timespec tick = {0, 10L * 1000 * 1000};
    int i;
    memcpy(path, config.data + 5, n);
    path[n] = '\0';
    for (i = 0; i < 6000 && access(path, F_OK) != 0; ++i) {
      nanosleep(&tick, NULL);
    }
  }
  p->applied++;
  return CCM_STATUS_OK;
}

static const ccm_plugin g_plugin = {
    sizeof(ccm_plugin), CCM_ABI_MAJOR, 1,          {"reconfigurable", 14},
    {"1.0.0", 5},       create_fn,     destroy_fn, capability_fn,
    reconfigure_fn,     {NULL, 0},     {NULL, 0},  {NULL, 0},
};

CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* host, const ccm_call* call,
                                                   const ccm_plugin** out);

CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* host, const ccm_call* call,
                                                   const ccm_plugin** out) {
  (void)call;
  g_host = host->host;
  g_services = host->services;
  *out = &g_plugin;
  return CCM_STATUS_OK;
}
