//! Conversions between the raw ABI structs and the safe types: inputs are copied out of the
//! host's borrowed memory (growing structs by the `struct_size` rule), outputs are laid out in
//! C structs that borrow the Rust values for the one emit call that copies them.

use std::collections::BTreeMap;
use std::os::raw::c_char;

use crate::abi;
use crate::types::{
    AddressType, Existence, InstanceMetadata, LbIngress, LbStatus, Node, NodeAddress, NodeInfo,
    PortStatus, Power, Route, Service, ServicePort,
};

/// A `ccm_str` borrowing `s` (valid while `s` is).
pub(crate) fn to_c(s: &str) -> abi::ccm_str {
    abi::ccm_str { data: s.as_ptr() as *const c_char, size: s.len() }
}

/// `ccm_kv`s borrowing the pairs' strings.
pub(crate) fn kv_array<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<abi::ccm_kv> {
    pairs.map(|(k, v)| abi::ccm_kv { key: to_c(k), value: to_c(v) }).collect()
}

/// Reads a growing struct (one that starts with `uint32_t struct_size`) the ABI's way: a zeroed
/// `T` with min(sender's struct_size, size_of::<T>()) bytes copied in, so fields the sender
/// does not have read as zero/NULL. A NULL pointer reads as all zero.
///
/// # Safety
/// `p` is NULL or points to a struct starting with a `u32` struct_size, readable for that
/// many bytes; `T` is a `#[repr(C)]` ABI struct for which all-zero bytes are a valid value.
pub(crate) unsafe fn read_struct<T: Copy>(p: *const T) -> T {
    let mut out = std::mem::MaybeUninit::<T>::zeroed();
    if !p.is_null() {
        let sender = std::ptr::read_unaligned(p as *const u32) as usize;
        let n = sender.min(std::mem::size_of::<T>());
        std::ptr::copy_nonoverlapping(p as *const u8, out.as_mut_ptr() as *mut u8, n);
    }
    out.assume_init()
}

/// A borrowed slice of `count` items at `p` (empty for NULL or 0).
///
/// # Safety
/// When `p` is not NULL it points to `count` readable items that outlive `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, count: usize) -> &'a [T] {
    if p.is_null() || count == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, count)
    }
}

/// An owned copy of a `ccm_str` (invalid UTF-8 replaced with U+FFFD, which the host never
/// sends).
///
/// # Safety
/// `s.data` is NULL or points to `s.size` readable bytes.
pub(crate) unsafe fn string(s: abi::ccm_str) -> String {
    String::from_utf8_lossy(slice(s.data as *const u8, s.size)).into_owned()
}

unsafe fn map(p: *const abi::ccm_kv, count: usize) -> BTreeMap<String, String> {
    slice(p, count).iter().map(|kv| (string(kv.key), string(kv.value))).collect()
}

unsafe fn strings(p: *const abi::ccm_str, count: usize) -> Vec<String> {
    slice(p, count).iter().map(|s| string(*s)).collect()
}

unsafe fn addresses(p: *const abi::ccm_node_address, count: usize) -> Vec<NodeAddress> {
    slice(p, count)
        .iter()
        .map(|a| NodeAddress::new(AddressType::parse(&string(a.type_)), string(a.address)))
        .collect()
}

/// # Safety
/// `p` is NULL or a `ccm_node` the host passed for this call.
pub(crate) unsafe fn node(p: *const abi::ccm_node) -> Node {
    let raw: abi::ccm_node = read_struct(p);
    let info: abi::ccm_node_info = read_struct(raw.node_info);
    Node {
        name: string(raw.name),
        uid: string(raw.uid),
        provider_id: string(raw.provider_id),
        labels: map(raw.labels, raw.label_count),
        annotations: map(raw.annotations, raw.annotation_count),
        addresses: addresses(raw.addresses, raw.address_count),
        info: NodeInfo {
            machine_id: string(info.machine_id),
            system_uuid: string(info.system_uuid),
            boot_id: string(info.boot_id),
            kernel_version: string(info.kernel_version),
            os_image: string(info.os_image),
            container_runtime_version: string(info.container_runtime_version),
            kubelet_version: string(info.kubelet_version),
            operating_system: string(info.operating_system),
            architecture: string(info.architecture),
        },
        object_json: string(raw.object_json),
    }
}

/// # Safety
/// `p` is NULL or an array of `count` node pointers the host passed for this call.
pub(crate) unsafe fn nodes(p: *const *const abi::ccm_node, count: usize) -> Vec<Node> {
    slice(p, count).iter().map(|n| node(*n)).collect()
}

/// # Safety
/// `p` is NULL or a `ccm_lb_status` the host passed for this call.
pub(crate) unsafe fn lb_status(p: *const abi::ccm_lb_status) -> LbStatus {
    let raw: abi::ccm_lb_status = read_struct(p);
    let ingress = slice(raw.ingress, raw.ingress_count)
        .iter()
        .map(|i| {
            let i: abi::ccm_lb_ingress = read_struct(*i);
            LbIngress {
                ip: string(i.ip),
                hostname: string(i.hostname),
                ip_mode: string(i.ip_mode),
                ports: slice(i.ports, i.port_count)
                    .iter()
                    .map(|p| {
                        let p: abi::ccm_port_status = read_struct(*p);
                        PortStatus {
                            port: p.port,
                            protocol: string(p.protocol),
                            error: string(p.error),
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    LbStatus {
        ingress,
        annotations: map(raw.annotations, raw.annotation_count),
        removed_annotations: strings(raw.removed_annotations, raw.removed_annotation_count),
    }
}

/// # Safety
/// `p` is NULL or a `ccm_service` the host passed for this call.
pub(crate) unsafe fn service(p: *const abi::ccm_service) -> Service {
    let raw: abi::ccm_service = read_struct(p);
    Service {
        namespace: string(raw.namespace_),
        name: string(raw.name),
        uid: string(raw.uid),
        labels: map(raw.labels, raw.label_count),
        annotations: map(raw.annotations, raw.annotation_count),
        service_type: string(raw.type_),
        ports: slice(raw.ports, raw.port_count)
            .iter()
            .map(|p| {
                let p: abi::ccm_service_port = read_struct(*p);
                ServicePort {
                    name: string(p.name),
                    protocol: string(p.protocol),
                    port: p.port,
                    node_port: p.node_port,
                    target_port: string(p.target_port),
                    app_protocol: string(p.app_protocol),
                }
            })
            .collect(),
        load_balancer_ip: string(raw.load_balancer_ip),
        source_ranges: strings(raw.source_ranges, raw.source_range_count),
        external_traffic_policy: string(raw.external_traffic_policy),
        health_check_node_port: raw.health_check_node_port,
        ip_families: strings(raw.ip_families, raw.ip_family_count),
        load_balancer_class: string(raw.load_balancer_class),
        session_affinity: string(raw.session_affinity),
        cluster_ip: string(raw.cluster_ip),
        current_status: lb_status(raw.current_status),
        object_json: string(raw.object_json),
    }
}

/// # Safety
/// `p` is NULL or a `ccm_route` the host passed for this call.
pub(crate) unsafe fn route(p: *const abi::ccm_route) -> Route {
    let raw: abi::ccm_route = read_struct(p);
    Route {
        name: string(raw.name),
        target_node: string(raw.target_node),
        destination_cidr: string(raw.destination_cidr),
        blackhole: raw.blackhole,
        target_node_addresses: if raw.enable_node_addresses {
            Some(addresses(raw.target_node_addresses, raw.target_node_address_count))
        } else {
            None
        },
    }
}

pub(crate) fn existence(e: Existence) -> abi::ccm_existence {
    match e {
        Existence::Unknown => abi::CCM_EXISTENCE_UNKNOWN,
        Existence::Exists => abi::CCM_EXISTENCE_EXISTS,
        Existence::NotFound => abi::CCM_EXISTENCE_NOT_FOUND,
    }
}

pub(crate) fn power(p: Power) -> abi::ccm_power {
    match p {
        Power::Unknown => abi::CCM_POWER_UNKNOWN,
        Power::Running => abi::CCM_POWER_RUNNING,
        Power::Shutdown => abi::CCM_POWER_SHUTDOWN,
    }
}

fn c_addresses(list: &[NodeAddress]) -> Vec<abi::ccm_node_address> {
    list.iter()
        .map(|a| abi::ccm_node_address {
            type_: to_c(a.address_type.as_str()),
            address: to_c(&a.address),
        })
        .collect()
}

/// Lays `md` out as a `ccm_instance_metadata` and passes it to `f` (the emit call).
pub(crate) fn with_c_metadata<R>(
    md: &InstanceMetadata,
    f: impl FnOnce(&abi::ccm_instance_metadata) -> R,
) -> R {
    let addresses = c_addresses(&md.addresses);
    let labels = kv_array(md.additional_labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let raw = abi::ccm_instance_metadata {
        struct_size: std::mem::size_of::<abi::ccm_instance_metadata>() as u32,
        provider_id: to_c(&md.provider_id),
        instance_type: to_c(&md.instance_type),
        zone: to_c(&md.zone),
        region: to_c(&md.region),
        addresses: addresses.as_ptr(),
        address_count: addresses.len(),
        additional_labels: labels.as_ptr(),
        additional_label_count: labels.len(),
    };
    f(&raw)
}

/// Lays `status` out as a `ccm_lb_status` and passes it to `f` (the emit call).
pub(crate) fn with_c_lb_status<R>(
    status: &LbStatus,
    f: impl FnOnce(&abi::ccm_lb_status) -> R,
) -> R {
    // Every buffer is complete before a pointer into it is taken, and all live until f returns.
    let ports: Vec<Vec<abi::ccm_port_status>> = status
        .ingress
        .iter()
        .map(|i| {
            i.ports
                .iter()
                .map(|p| abi::ccm_port_status {
                    struct_size: std::mem::size_of::<abi::ccm_port_status>() as u32,
                    port: p.port,
                    protocol: to_c(&p.protocol),
                    error: to_c(&p.error),
                })
                .collect()
        })
        .collect();
    let port_ptrs: Vec<Vec<*const abi::ccm_port_status>> =
        ports.iter().map(|v| v.iter().map(|p| p as *const _).collect()).collect();
    let ingress: Vec<abi::ccm_lb_ingress> = status
        .ingress
        .iter()
        .zip(&port_ptrs)
        .map(|(i, ptrs)| abi::ccm_lb_ingress {
            struct_size: std::mem::size_of::<abi::ccm_lb_ingress>() as u32,
            ip: to_c(&i.ip),
            hostname: to_c(&i.hostname),
            ip_mode: to_c(&i.ip_mode),
            ports: ptrs.as_ptr(),
            port_count: ptrs.len(),
        })
        .collect();
    let ingress_ptrs: Vec<*const abi::ccm_lb_ingress> =
        ingress.iter().map(|i| i as *const _).collect();
    let annotations = kv_array(status.annotations.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let removed: Vec<abi::ccm_str> = status.removed_annotations.iter().map(|k| to_c(k)).collect();
    let raw = abi::ccm_lb_status {
        struct_size: std::mem::size_of::<abi::ccm_lb_status>() as u32,
        ingress: ingress_ptrs.as_ptr(),
        ingress_count: ingress_ptrs.len(),
        annotations: annotations.as_ptr(),
        annotation_count: annotations.len(),
        removed_annotations: removed.as_ptr(),
        removed_annotation_count: removed.len(),
    };
    f(&raw)
}

/// Lays `route` out as a `ccm_route` and passes it to `f` (the emit call).
pub(crate) fn with_c_route<R>(route: &Route, f: impl FnOnce(&abi::ccm_route) -> R) -> R {
    let addresses = route.target_node_addresses.as_deref().map(c_addresses).unwrap_or_default();
    let raw = abi::ccm_route {
        struct_size: std::mem::size_of::<abi::ccm_route>() as u32,
        name: to_c(&route.name),
        target_node: to_c(&route.target_node),
        destination_cidr: to_c(&route.destination_cidr),
        blackhole: route.blackhole,
        enable_node_addresses: route.target_node_addresses.is_some(),
        target_node_addresses: addresses.as_ptr(),
        target_node_address_count: addresses.len(),
    };
    f(&raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shorter_sender_struct_reads_as_zero_beyond_its_size() {
        // A 1.0 sender's ccm_lb_status ends before the 1.1 annotation fields.
        let ann = [abi::ccm_kv { key: to_c("a/b"), value: to_c("c") }];
        let mut raw = abi::ccm_lb_status {
            struct_size: 0,
            ingress: std::ptr::null(),
            ingress_count: 0,
            annotations: ann.as_ptr(),
            annotation_count: 1,
            removed_annotations: std::ptr::null(),
            removed_annotation_count: 0,
        };
        raw.struct_size = (3 * std::mem::size_of::<usize>()) as u32; // through ingress_count
        let status = unsafe { lb_status(&raw) };
        assert!(status.annotations.is_empty());
        raw.struct_size = std::mem::size_of::<abi::ccm_lb_status>() as u32;
        let status = unsafe { lb_status(&raw) };
        assert_eq!(status.annotations.get("a/b").map(String::as_str), Some("c"));
    }

    #[test]
    fn null_and_empty_views_read_as_empty() {
        let s = abi::ccm_str { data: std::ptr::null(), size: 12 };
        assert_eq!(unsafe { string(s) }, "");
        assert!(unsafe { nodes(std::ptr::null(), 3) }.is_empty());
        assert_eq!(unsafe { node(std::ptr::null()) }, Node::default());
    }

    #[test]
    fn lb_status_round_trips_through_its_c_layout() {
        let mut status = LbStatus::default();
        let mut ingress = LbIngress::ip("192.0.2.10");
        ingress.ports.push(PortStatus { port: 80, protocol: "TCP".into(), error: String::new() });
        ingress.ports.push(PortStatus { port: 53, protocol: "UDP".into(), error: "Busy".into() });
        status.ingress.push(ingress);
        status
            .ingress
            .push(LbIngress { hostname: "lb.example.com".into(), ..LbIngress::default() });
        status.annotations.insert("lb.example.com/id".into(), "lb-1".into());
        status.removed_annotations.push("lb.example.com/old".into());
        let back = with_c_lb_status(&status, |raw| unsafe { lb_status(raw) });
        assert_eq!(back, status);
    }

    #[test]
    fn route_and_metadata_lay_out_every_field() {
        let route = Route {
            name: "r1".into(),
            target_node: "node-a".into(),
            destination_cidr: "10.244.1.0/24".into(),
            blackhole: true,
            target_node_addresses: Some(vec![NodeAddress::new(
                AddressType::InternalIp,
                "10.0.0.1",
            )]),
        };
        assert_eq!(with_c_route(&route, |raw| unsafe { super::route(raw) }), route);
        let mut md = InstanceMetadata {
            provider_id: "x://1".into(),
            zone: "z".into(),
            ..Default::default()
        };
        md.addresses.push(NodeAddress::new(AddressType::Hostname, "node-a"));
        md.additional_labels.insert("example.com/pool".into(), "blue".into());
        with_c_metadata(&md, |raw| unsafe {
            assert_eq!(string(raw.provider_id), "x://1");
            assert_eq!(string(raw.zone), "z");
            assert_eq!(addresses(raw.addresses, raw.address_count), md.addresses);
            assert_eq!(
                map(raw.additional_labels, raw.additional_label_count),
                md.additional_labels
            );
        });
    }
}
