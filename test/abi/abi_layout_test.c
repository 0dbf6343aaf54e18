/* ABI layout freeze: the sizes and offsets of every struct of ccm/provider_abi.h (ABI 1.0) on
 * LP64 Linux. Compiled as C11 (pedantic) and as C++; an accidental reorder, resize or retype
 * fails the build. Appending a field in a later minor grows a struct's size: update that size
 * here in the same change, and never an offset. */
#include <stddef.h>

#include "ccm/provider_abi.h"

#ifdef __cplusplus
#define CCM_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define CCM_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define CCM_CHECK_SIZE(T, n) CCM_STATIC_ASSERT(sizeof(T) == (n), "size of " #T " changed")
#define CCM_CHECK_OFFSET(T, f, n) \
  CCM_STATIC_ASSERT(offsetof(T, f) == (n), "offset of " #T "." #f " changed")

CCM_STATIC_ASSERT(sizeof(void*) == 8, "the frozen layout is for LP64 targets");
CCM_STATIC_ASSERT(CCM_ABI_MAJOR == 1, "this file freezes ABI major 1");

/* struct_size is the first field of every struct that can grow. */
CCM_CHECK_OFFSET(ccm_call, struct_size, 0);
CCM_CHECK_OFFSET(ccm_plugin, struct_size, 0);
CCM_CHECK_OFFSET(ccm_host_info, struct_size, 0);
CCM_CHECK_OFFSET(ccm_host_services, struct_size, 0);
CCM_CHECK_OFFSET(ccm_node, struct_size, 0);
CCM_CHECK_OFFSET(ccm_service, struct_size, 0);
CCM_CHECK_OFFSET(ccm_instances_v1, struct_size, 0);
CCM_CHECK_OFFSET(ccm_routes_v1, struct_size, 0);

/* Status codes are part of the ABI too. */
CCM_STATIC_ASSERT(CCM_STATUS_OK == 0 && CCM_STATUS_NOT_FOUND == 5 &&
                      CCM_STATUS_RESOURCE_EXHAUSTED == 8 && CCM_STATUS_UNAVAILABLE == 14 &&
                      CCM_STATUS_IMPLEMENTED_ELSEWHERE == 64,
                  "status code values changed");
CCM_STATIC_ASSERT(CCM_EXISTENCE_UNKNOWN == 0 && CCM_EXISTENCE_EXISTS == 1 &&
                      CCM_EXISTENCE_NOT_FOUND == 2,
                  "existence values changed");

static void layout_checks(void) {
  CCM_CHECK_SIZE(ccm_str, 16);
  CCM_CHECK_SIZE(ccm_kv, 32);
  CCM_CHECK_SIZE(ccm_node_address, 32);
  CCM_CHECK_SIZE(ccm_call, 24);
  CCM_CHECK_OFFSET(ccm_call, call_id, 8);
  CCM_CHECK_OFFSET(ccm_call, deadline_monotonic_ns, 16);
  CCM_CHECK_SIZE(ccm_instance_metadata, 104);
  CCM_CHECK_OFFSET(ccm_instance_metadata, provider_id, 8);
  CCM_CHECK_OFFSET(ccm_instance_metadata, addresses, 72);
  CCM_CHECK_OFFSET(ccm_instance_metadata, additional_label_count, 96);
  CCM_CHECK_SIZE(ccm_port_status, 40);
  CCM_CHECK_OFFSET(ccm_port_status, protocol, 8);
  CCM_CHECK_OFFSET(ccm_port_status, error, 24);
  CCM_CHECK_SIZE(ccm_lb_ingress, 72);
  CCM_CHECK_OFFSET(ccm_lb_ingress, ports, 56);
  CCM_CHECK_OFFSET(ccm_lb_ingress, port_count, 64);
  CCM_CHECK_SIZE(ccm_lb_status, 56);
  CCM_CHECK_OFFSET(ccm_lb_status, ingress_count, 16);
  CCM_CHECK_SIZE(ccm_route, 80);
  CCM_CHECK_OFFSET(ccm_route, blackhole, 56);
  CCM_CHECK_OFFSET(ccm_route, enable_node_addresses, 57);
  CCM_CHECK_OFFSET(ccm_route, target_node_addresses, 64);
  CCM_CHECK_SIZE(ccm_host_services, 112);
  CCM_CHECK_OFFSET(ccm_host_services, log, 8);
  CCM_CHECK_OFFSET(ccm_host_services, is_cancelled, 16);
  CCM_CHECK_OFFSET(ccm_host_services, set_error, 40);
  CCM_CHECK_OFFSET(ccm_host_services, metric, 48);
  CCM_CHECK_OFFSET(ccm_host_services, register_secret, 56);
  CCM_CHECK_OFFSET(ccm_host_services, emit_instance_metadata, 64);
  CCM_CHECK_OFFSET(ccm_host_services, emit_item_error, 72);
  CCM_CHECK_OFFSET(ccm_host_services, emit_lb_status, 80);
  CCM_CHECK_OFFSET(ccm_host_services, emit_route, 88);
  CCM_CHECK_OFFSET(ccm_host_services, emit_string, 96);
  CCM_CHECK_SIZE(ccm_host_info, 64);
  CCM_CHECK_OFFSET(ccm_host_info, abi_minor, 8);
  CCM_CHECK_OFFSET(ccm_host_info, host_name, 16);
  CCM_CHECK_OFFSET(ccm_host_info, host, 48);
  CCM_CHECK_OFFSET(ccm_host_info, services, 56);
  CCM_CHECK_SIZE(ccm_node_info, 152);
  CCM_CHECK_OFFSET(ccm_node_info, architecture, 136);
  CCM_CHECK_SIZE(ccm_node, 128);
  CCM_CHECK_OFFSET(ccm_node, provider_id, 40);
  CCM_CHECK_OFFSET(ccm_node, labels, 56);
  CCM_CHECK_OFFSET(ccm_node, annotations, 72);
  CCM_CHECK_OFFSET(ccm_node, addresses, 88);
  CCM_CHECK_OFFSET(ccm_node, node_info, 104);
  CCM_CHECK_OFFSET(ccm_node, object_json, 112);
  CCM_CHECK_SIZE(ccm_service_port, 80);
  CCM_CHECK_OFFSET(ccm_service_port, port, 40);
  CCM_CHECK_OFFSET(ccm_service_port, node_port, 44);
  CCM_CHECK_OFFSET(ccm_service_port, app_protocol, 64);
  CCM_CHECK_SIZE(ccm_service, 264);
  CCM_CHECK_OFFSET(ccm_service, type, 88);
  CCM_CHECK_OFFSET(ccm_service, ports, 104);
  CCM_CHECK_OFFSET(ccm_service, load_balancer_ip, 120);
  CCM_CHECK_OFFSET(ccm_service, health_check_node_port, 168);
  CCM_CHECK_OFFSET(ccm_service, ip_families, 176);
  CCM_CHECK_OFFSET(ccm_service, current_status, 240);
  CCM_CHECK_OFFSET(ccm_service, object_json, 248);
  CCM_CHECK_SIZE(ccm_instances_v1, 40);
  CCM_CHECK_OFFSET(ccm_instances_v1, max_concurrency, 4);
  CCM_CHECK_OFFSET(ccm_instances_v1, instance_exists, 16);
  CCM_CHECK_OFFSET(ccm_instances_v1, instance_metadata, 32);
  CCM_CHECK_SIZE(ccm_instances_batch_v1, 24);
  CCM_CHECK_OFFSET(ccm_instances_batch_v1, max_batch_size, 12);
  CCM_CHECK_OFFSET(ccm_instances_batch_v1, instance_metadata_batch, 16);
  CCM_CHECK_SIZE(ccm_loadbalancer_v1, 56);
  CCM_CHECK_OFFSET(ccm_loadbalancer_v1, get_load_balancer, 16);
  CCM_CHECK_OFFSET(ccm_loadbalancer_v1, ensure_load_balancer_deleted, 48);
  CCM_CHECK_SIZE(ccm_routes_v1, 40);
  CCM_CHECK_OFFSET(ccm_routes_v1, list_routes, 16);
  CCM_CHECK_OFFSET(ccm_routes_v1, delete_route, 32);
  CCM_CHECK_SIZE(ccm_plugin, 128);
  CCM_CHECK_OFFSET(ccm_plugin, abi_minor, 8);
  CCM_CHECK_OFFSET(ccm_plugin, name, 16);
  CCM_CHECK_OFFSET(ccm_plugin, version, 32);
  CCM_CHECK_OFFSET(ccm_plugin, create, 48);
  CCM_CHECK_OFFSET(ccm_plugin, destroy, 56);
  CCM_CHECK_OFFSET(ccm_plugin, get_capability, 64);
}

int main(void) {
  layout_checks();
  return 0;
}
