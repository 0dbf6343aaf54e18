//! The raw C ABI, mirrored by hand from `ccm/provider_abi.h` (ABI 1.1).
//!
//! Every type here is `#[repr(C)]` with the header's field order and C types; the crate's
//! `abi_layout` test compiles a C program from the header and checks every size, alignment and
//! field offset, and every constant, against these definitions. Provider code normally never
//! touches this module: the safe API in the crate root converts to and from it.
//!
//! Function slots are `Option<unsafe extern "C" fn ...>` so that a NULL slot (zero) is `None`.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_void};

/// `CCM_ABI_MAJOR`.
pub const CCM_ABI_MAJOR: u32 = 1;
/// `CCM_ABI_MINOR`: the highest minor this crate speaks.
pub const CCM_ABI_MINOR: u32 = 1;
/// `CCM_PROVIDER_ENTRY_SYMBOL`.
pub const CCM_PROVIDER_ENTRY_SYMBOL: &str = "ccm_provider_entry_v1";

pub const CCM_CAP_INSTANCES: &str = "ccm.instances/1";
pub const CCM_CAP_INSTANCES_BATCH: &str = "ccm.instances.batch/1";
pub const CCM_CAP_LOADBALANCER: &str = "ccm.loadbalancer/1";
pub const CCM_CAP_ROUTES: &str = "ccm.routes/1";

pub type ccm_status = i32;
pub const CCM_STATUS_OK: ccm_status = 0;
pub const CCM_STATUS_CANCELLED: ccm_status = 1;
pub const CCM_STATUS_INVALID_ARGUMENT: ccm_status = 3;
pub const CCM_STATUS_DEADLINE_EXCEEDED: ccm_status = 4;
pub const CCM_STATUS_NOT_FOUND: ccm_status = 5;
pub const CCM_STATUS_ALREADY_EXISTS: ccm_status = 6;
pub const CCM_STATUS_PERMISSION_DENIED: ccm_status = 7;
pub const CCM_STATUS_RESOURCE_EXHAUSTED: ccm_status = 8;
pub const CCM_STATUS_FAILED_PRECONDITION: ccm_status = 9;
pub const CCM_STATUS_ABORTED: ccm_status = 10;
pub const CCM_STATUS_UNIMPLEMENTED: ccm_status = 12;
pub const CCM_STATUS_INTERNAL: ccm_status = 13;
pub const CCM_STATUS_UNAVAILABLE: ccm_status = 14;
pub const CCM_STATUS_UNAUTHENTICATED: ccm_status = 16;
pub const CCM_STATUS_IMPLEMENTED_ELSEWHERE: ccm_status = 64;

/// A borrowed UTF-8 string view (not NUL-terminated; `data` may be NULL when `size` is 0).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_str {
    pub data: *const c_char,
    pub size: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_kv {
    pub key: ccm_str,
    pub value: ccm_str,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_node_address {
    pub type_: ccm_str,
    pub address: ccm_str,
}

pub type ccm_log_level = i32;
pub const CCM_LOG_ERROR: ccm_log_level = 0;
pub const CCM_LOG_WARNING: ccm_log_level = 1;
pub const CCM_LOG_INFO: ccm_log_level = 2;
pub const CCM_LOG_DEBUG: ccm_log_level = 3;

pub type ccm_metric_kind = i32;
pub const CCM_METRIC_COUNTER: ccm_metric_kind = 0;
pub const CCM_METRIC_GAUGE: ccm_metric_kind = 1;
pub const CCM_METRIC_HISTOGRAM: ccm_metric_kind = 2;

pub type ccm_host_handle = u64;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_call {
    pub struct_size: u32,
    pub call_id: u64,
    pub deadline_monotonic_ns: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_instance_metadata {
    pub struct_size: u32,
    pub provider_id: ccm_str,
    pub instance_type: ccm_str,
    pub zone: ccm_str,
    pub region: ccm_str,
    pub addresses: *const ccm_node_address,
    pub address_count: usize,
    pub additional_labels: *const ccm_kv,
    pub additional_label_count: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_port_status {
    pub struct_size: u32,
    pub port: i32,
    pub protocol: ccm_str,
    pub error: ccm_str,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_lb_ingress {
    pub struct_size: u32,
    pub ip: ccm_str,
    pub hostname: ccm_str,
    pub ip_mode: ccm_str,
    pub ports: *const *const ccm_port_status,
    pub port_count: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_lb_status {
    pub struct_size: u32,
    pub ingress: *const *const ccm_lb_ingress,
    pub ingress_count: usize,
    /// since 1.1
    pub annotations: *const ccm_kv,
    /// since 1.1
    pub annotation_count: usize,
    /// since 1.1
    pub removed_annotations: *const ccm_str,
    /// since 1.1
    pub removed_annotation_count: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_route {
    pub struct_size: u32,
    pub name: ccm_str,
    pub target_node: ccm_str,
    pub destination_cidr: ccm_str,
    pub blackhole: bool,
    pub enable_node_addresses: bool,
    pub target_node_addresses: *const ccm_node_address,
    pub target_node_address_count: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ccm_host_services {
    pub struct_size: u32,
    pub log: Option<unsafe extern "C" fn(ccm_host_handle, ccm_log_level, ccm_str)>,
    pub is_cancelled: Option<unsafe extern "C" fn(ccm_host_handle, u64) -> bool>,
    pub now_monotonic_ns: Option<unsafe extern "C" fn(ccm_host_handle) -> i64>,
    pub now_unix_ns: Option<unsafe extern "C" fn(ccm_host_handle) -> i64>,
    pub set_error: Option<unsafe extern "C" fn(ccm_host_handle, u64, ccm_str, i64) -> bool>,
    pub metric: Option<
        unsafe extern "C" fn(
            ccm_host_handle,
            ccm_metric_kind,
            ccm_str,
            ccm_str,
            *const ccm_kv,
            usize,
            f64,
        ),
    >,
    pub register_secret: Option<unsafe extern "C" fn(ccm_host_handle, ccm_str)>,
    pub emit_instance_metadata: Option<
        unsafe extern "C" fn(ccm_host_handle, u64, usize, *const ccm_instance_metadata) -> bool,
    >,
    pub emit_item_error:
        Option<unsafe extern "C" fn(ccm_host_handle, u64, usize, ccm_status, ccm_str) -> bool>,
    pub emit_lb_status:
        Option<unsafe extern "C" fn(ccm_host_handle, u64, *const ccm_lb_status) -> bool>,
    pub emit_route: Option<unsafe extern "C" fn(ccm_host_handle, u64, *const ccm_route) -> bool>,
    pub emit_string: Option<unsafe extern "C" fn(ccm_host_handle, u64, ccm_str) -> bool>,
    /// since 1.1
    pub log_fields:
        Option<unsafe extern "C" fn(ccm_host_handle, ccm_log_level, ccm_str, *const ccm_kv, usize)>,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ccm_host_info {
    pub struct_size: u32,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub host_name: ccm_str,
    pub host_version: ccm_str,
    pub host: ccm_host_handle,
    pub services: *const ccm_host_services,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_node_info {
    pub struct_size: u32,
    pub machine_id: ccm_str,
    pub system_uuid: ccm_str,
    pub boot_id: ccm_str,
    pub kernel_version: ccm_str,
    pub os_image: ccm_str,
    pub container_runtime_version: ccm_str,
    pub kubelet_version: ccm_str,
    pub operating_system: ccm_str,
    pub architecture: ccm_str,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_node {
    pub struct_size: u32,
    pub name: ccm_str,
    pub uid: ccm_str,
    pub provider_id: ccm_str,
    pub labels: *const ccm_kv,
    pub label_count: usize,
    pub annotations: *const ccm_kv,
    pub annotation_count: usize,
    pub addresses: *const ccm_node_address,
    pub address_count: usize,
    pub node_info: *const ccm_node_info,
    pub object_json: ccm_str,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_service_port {
    pub struct_size: u32,
    pub name: ccm_str,
    pub protocol: ccm_str,
    pub port: i32,
    pub node_port: i32,
    pub target_port: ccm_str,
    pub app_protocol: ccm_str,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ccm_service {
    pub struct_size: u32,
    pub namespace_: ccm_str,
    pub name: ccm_str,
    pub uid: ccm_str,
    pub labels: *const ccm_kv,
    pub label_count: usize,
    pub annotations: *const ccm_kv,
    pub annotation_count: usize,
    pub type_: ccm_str,
    pub ports: *const *const ccm_service_port,
    pub port_count: usize,
    pub load_balancer_ip: ccm_str,
    pub source_ranges: *const ccm_str,
    pub source_range_count: usize,
    pub external_traffic_policy: ccm_str,
    pub health_check_node_port: i32,
    pub ip_families: *const ccm_str,
    pub ip_family_count: usize,
    pub load_balancer_class: ccm_str,
    pub session_affinity: ccm_str,
    pub cluster_ip: ccm_str,
    pub current_status: *const ccm_lb_status,
    pub object_json: ccm_str,
}

/// The provider instance, opaque to the host.
#[repr(C)]
pub struct ccm_provider {
    _private: [u8; 0],
}

pub const CCM_CAP_WANTS_OBJECT_JSON: u32 = 0x1;

pub type ccm_existence = i32;
pub const CCM_EXISTENCE_UNKNOWN: ccm_existence = 0;
pub const CCM_EXISTENCE_EXISTS: ccm_existence = 1;
pub const CCM_EXISTENCE_NOT_FOUND: ccm_existence = 2;

pub type ccm_power = i32;
pub const CCM_POWER_UNKNOWN: ccm_power = 0;
pub const CCM_POWER_RUNNING: ccm_power = 1;
pub const CCM_POWER_SHUTDOWN: ccm_power = 2;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ccm_instances_v1 {
    pub struct_size: u32,
    pub max_concurrency: u32,
    pub flags: u32,
    pub instance_exists: Option<
        unsafe extern "C" fn(
            *mut ccm_provider,
            *const ccm_call,
            *const ccm_node,
            *mut ccm_existence,
        ) -> ccm_status,
    >,
    pub instance_shutdown: Option<
        unsafe extern "C" fn(
            *mut ccm_provider,
            *const ccm_call,
            *const ccm_node,
            *mut ccm_power,
        ) -> ccm_status,
    >,
    pub instance_metadata: Option<
        unsafe extern "C" fn(*mut ccm_provider, *const ccm_call, *const ccm_node) -> ccm_status,
    >,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ccm_instances_batch_v1 {
    pub struct_size: u32,
    pub max_concurrency: u32,
    pub flags: u32,
    pub max_batch_size: u32,
    pub instance_metadata_batch: Option<
        unsafe extern "C" fn(
            *mut ccm_provider,
            *const ccm_call,
            *const *const ccm_node,
            usize,
        ) -> ccm_status,
    >,
}

type LbServiceFn = unsafe extern "C" fn(
    *mut ccm_provider,
    *const ccm_call,
    ccm_str,
    *const ccm_service,
) -> ccm_status;
type LbNodesFn = unsafe extern "C" fn(
    *mut ccm_provider,
    *const ccm_call,
    ccm_str,
    *const ccm_service,
    *const *const ccm_node,
    usize,
) -> ccm_status;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ccm_loadbalancer_v1 {
    pub struct_size: u32,
    pub max_concurrency: u32,
    pub flags: u32,
    pub get_load_balancer: Option<
        unsafe extern "C" fn(
            *mut ccm_provider,
            *const ccm_call,
            ccm_str,
            *const ccm_service,
            *mut bool,
        ) -> ccm_status,
    >,
    pub get_load_balancer_name: Option<LbServiceFn>,
    pub ensure_load_balancer: Option<LbNodesFn>,
    pub update_load_balancer: Option<LbNodesFn>,
    pub ensure_load_balancer_deleted: Option<LbServiceFn>,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ccm_routes_v1 {
    pub struct_size: u32,
    pub max_concurrency: u32,
    pub flags: u32,
    pub list_routes:
        Option<unsafe extern "C" fn(*mut ccm_provider, *const ccm_call, ccm_str) -> ccm_status>,
    pub create_route: Option<
        unsafe extern "C" fn(
            *mut ccm_provider,
            *const ccm_call,
            ccm_str,
            ccm_str,
            *const ccm_route,
        ) -> ccm_status,
    >,
    pub delete_route: Option<
        unsafe extern "C" fn(
            *mut ccm_provider,
            *const ccm_call,
            ccm_str,
            *const ccm_route,
        ) -> ccm_status,
    >,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ccm_plugin {
    pub struct_size: u32,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub name: ccm_str,
    pub version: ccm_str,
    pub create: Option<
        unsafe extern "C" fn(*const ccm_call, ccm_str, *mut *mut ccm_provider) -> ccm_status,
    >,
    pub destroy: Option<unsafe extern "C" fn(*mut ccm_provider)>,
    pub get_capability: Option<unsafe extern "C" fn(*mut ccm_provider, ccm_str) -> *const c_void>,
    /// since 1.1
    pub reconfigure:
        Option<unsafe extern "C" fn(*mut ccm_provider, *const ccm_call, ccm_str) -> ccm_status>,
    /// since 1.1
    pub provider_id_prefix: ccm_str,
    /// since 1.1
    pub annotation_domain: ccm_str,
    /// since 1.1
    pub metric_namespace: ccm_str,
}

/// `ccm_provider_entry_fn`.
pub type ccm_provider_entry_fn = unsafe extern "C" fn(
    *const ccm_host_info,
    *const ccm_call,
    *mut *const ccm_plugin,
) -> ccm_status;
