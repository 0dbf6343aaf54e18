//! The exported entry point and trampolines, driven the way the host drives them: a fake
//! host service table written in Rust records every set_error, log line and emit, and the test
//! calls `ccm_provider_entry_v1` (exported by `ccm_provider!` in this test binary) and the
//! tables it returns. Covers negotiation (major refused with a message, minor = min), errors
//! with retry-after, outputs, and the panic barrier (INTERNAL + message + host log).

use std::collections::BTreeMap;
use std::os::raw::c_char;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use ::ccm_provider::abi::{self, ccm_str};
use ::ccm_provider::{
    ccm_provider, Call, Code, Existence, InstanceMetadata, Instances, InstancesBatch, LbIngress,
    LbStatus, LoadBalancer, Node, Power, Provider, Result, Route, Routes, Service, Status,
};

// -- the fake host -------------------------------------------------------------------------

#[derive(Debug, Default)]
struct Record {
    errors: Vec<(u64, String, i64)>,
    logs: Vec<(i32, String)>,
    metadata: Vec<(u64, usize, String)>,
    lb_annotations: Vec<BTreeMap<String, String>>,
    strings: Vec<String>,
    item_errors: Vec<(usize, i32, String)>,
    routes: Vec<(String, String, bool, Option<Vec<String>>)>,
}

static RECORD: Mutex<Option<Record>> = Mutex::new(None);
// One test at a time: the plugin's host is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

fn record() -> MutexGuard<'static, Option<Record>> {
    RECORD.lock().unwrap_or_else(|e| e.into_inner())
}

unsafe fn text(s: ccm_str) -> String {
    if s.data.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(std::slice::from_raw_parts(s.data as *const u8, s.size)).into_owned()
}

unsafe extern "C" fn log(_h: u64, level: i32, message: ccm_str) {
    let m = text(message);
    eprintln!("host log {}: {}", level, m); // visible when a test fails
    record().get_or_insert_with(Record::default).logs.push((level, m));
}
unsafe extern "C" fn log_fields(
    _h: u64,
    level: i32,
    message: ccm_str,
    fields: *const abi::ccm_kv,
    n: usize,
) {
    let mut m = text(message);
    for kv in std::slice::from_raw_parts(fields, n) {
        m.push_str(&format!(" {}={}", text(kv.key), text(kv.value)));
    }
    eprintln!("host log {}: {}", level, m);
    record().get_or_insert_with(Record::default).logs.push((level, m));
}
unsafe extern "C" fn is_cancelled(_h: u64, call_id: u64) -> bool {
    call_id == 999
}
unsafe extern "C" fn now(_h: u64) -> i64 {
    1_000_000_000
}
unsafe extern "C" fn set_error(_h: u64, call_id: u64, message: ccm_str, retry_ms: i64) -> bool {
    record().get_or_insert_with(Record::default).errors.push((call_id, text(message), retry_ms));
    true
}
unsafe extern "C" fn emit_md(
    _h: u64,
    call_id: u64,
    index: usize,
    md: *const abi::ccm_instance_metadata,
) -> bool {
    let md = &*md;
    record().get_or_insert_with(Record::default).metadata.push((
        call_id,
        index,
        text(md.provider_id),
    ));
    true
}
unsafe extern "C" fn emit_item_error(_h: u64, _c: u64, i: usize, code: i32, m: ccm_str) -> bool {
    record().get_or_insert_with(Record::default).item_errors.push((i, code, text(m)));
    true
}
unsafe extern "C" fn emit_route(_h: u64, _c: u64, route: *const abi::ccm_route) -> bool {
    let r = &*route;
    let addresses = if r.enable_node_addresses {
        let list = std::slice::from_raw_parts(r.target_node_addresses, r.target_node_address_count);
        Some(list.iter().map(|a| format!("{}={}", text(a.type_), text(a.address))).collect())
    } else {
        None
    };
    let entry = (text(r.name), text(r.destination_cidr), r.blackhole, addresses);
    record().get_or_insert_with(Record::default).routes.push(entry);
    true
}
unsafe extern "C" fn emit_lb(_h: u64, _c: u64, status: *const abi::ccm_lb_status) -> bool {
    let s = &*status;
    let kvs = std::slice::from_raw_parts(s.annotations, s.annotation_count);
    let map = kvs.iter().map(|kv| (text(kv.key), text(kv.value))).collect();
    record().get_or_insert_with(Record::default).lb_annotations.push(map);
    true
}
unsafe extern "C" fn emit_string(_h: u64, _c: u64, value: ccm_str) -> bool {
    record().get_or_insert_with(Record::default).strings.push(text(value));
    true
}

fn services(with_log_fields: bool) -> &'static abi::ccm_host_services {
    Box::leak(Box::new(abi::ccm_host_services {
        struct_size: std::mem::size_of::<abi::ccm_host_services>() as u32,
        log: Some(log),
        is_cancelled: Some(is_cancelled),
        now_monotonic_ns: Some(now),
        now_unix_ns: Some(now),
        set_error: Some(set_error),
        metric: None,
        register_secret: None,
        emit_instance_metadata: Some(emit_md),
        emit_item_error: Some(emit_item_error),
        emit_lb_status: Some(emit_lb),
        emit_route: Some(emit_route),
        emit_string: Some(emit_string),
        log_fields: if with_log_fields { Some(log_fields) } else { None },
    }))
}

fn c(s: &'static str) -> ccm_str {
    ccm_str { data: s.as_ptr() as *const c_char, size: s.len() }
}

fn call(id: u64) -> abi::ccm_call {
    abi::ccm_call {
        struct_size: std::mem::size_of::<abi::ccm_call>() as u32,
        call_id: id,
        deadline_monotonic_ns: 0,
    }
}

/// Negotiates as a host of this version; the status and the plugin table.
fn negotiate(major: u32, minor: u32) -> (i32, Option<&'static abi::ccm_plugin>) {
    *record() = Some(Record::default());
    let info = abi::ccm_host_info {
        struct_size: std::mem::size_of::<abi::ccm_host_info>() as u32,
        abi_major: major,
        abi_minor: minor,
        host_name: c("fake-host"),
        host_version: c("0.0.1"),
        host: 7,
        services: services(minor >= 1),
    };
    let mut out: *const abi::ccm_plugin = std::ptr::null();
    let status = unsafe { ccm_provider_entry_v1(&info, &call(1), &mut out) };
    (status, unsafe { out.as_ref() })
}

fn take() -> Record {
    record().take().unwrap_or_default()
}

// -- the provider under test -------------------------------------------------------------

struct Tester;

impl Provider for Tester {
    const NAME: &'static str = "tester";
    const VERSION: &'static str = "1.2.3";
    const ANNOTATION_DOMAIN: &'static str = "lb.example.com";
    const RECONFIGURABLE: bool = true;

    fn create(_call: &Call, config: &[u8]) -> Result<Self> {
        match config {
            b"panic" => panic!("create was told to panic"),
            b"bad" => Err(Status::invalid_argument("line 1: bad is not a config")),
            _ => Ok(Tester),
        }
    }
    fn instances(&self) -> Option<&dyn Instances> {
        Some(self)
    }
    fn load_balancer(&self) -> Option<&dyn LoadBalancer> {
        Some(self)
    }
    fn instances_batch(&self) -> Option<&dyn InstancesBatch> {
        Some(self)
    }
    fn routes(&self) -> Option<&dyn Routes> {
        Some(self)
    }
}

impl Instances for Tester {
    fn max_concurrency(&self) -> u32 {
        4
    }
    fn instance_exists(&self, call: &Call, node: &Node) -> Result<Existence> {
        call.check()?;
        match node.name.as_str() {
            "busy" => Err(Status::throttled("the cloud is busy", Duration::from_secs(30))),
            "gone" => Ok(Existence::NotFound),
            _ => Ok(Existence::Exists),
        }
    }
    fn instance_shutdown(&self, _call: &Call, _node: &Node) -> Result<Power> {
        Err(Status::new(::ccm_provider::Code::Ok, "confused"))
    }
    fn instance_metadata(&self, _call: &Call, node: &Node) -> Result<Option<InstanceMetadata>> {
        if node.name == "boom" {
            panic!("boom for {}", node.name);
        }
        Ok(Some(InstanceMetadata {
            provider_id: format!("tester://{}", node.name),
            ..Default::default()
        }))
    }
}

impl LoadBalancer for Tester {
    fn get_load_balancer(&self, _c: &Call, _cl: &str, _s: &Service) -> Result<Option<LbStatus>> {
        Ok(None)
    }
    fn get_load_balancer_name(&self, _c: &Call, cluster: &str, s: &Service) -> Result<String> {
        Ok(format!("{}-{}-{}", cluster, s.namespace, s.name))
    }
    fn ensure_load_balancer(
        &self,
        _c: &Call,
        _cl: &str,
        s: &Service,
        nodes: &[Node],
    ) -> Result<LbStatus> {
        let mut status =
            LbStatus { ingress: vec![LbIngress::ip("192.0.2.1")], ..LbStatus::default() };
        status
            .annotations
            .insert("lb.example.com/id".into(), format!("{}-{}", s.name, nodes.len()));
        Ok(status)
    }
    fn update_load_balancer(&self, _c: &Call, _cl: &str, _s: &Service, _n: &[Node]) -> Result<()> {
        Ok(())
    }
    fn ensure_load_balancer_deleted(&self, _c: &Call, _cl: &str, _s: &Service) -> Result<()> {
        Ok(())
    }
}

impl InstancesBatch for Tester {
    fn max_batch_size(&self) -> u32 {
        50
    }
    fn instance_metadata_batch(
        &self,
        _call: &Call,
        nodes: &[Node],
    ) -> Result<Vec<Result<InstanceMetadata>>> {
        // Answers all but the last node: that one is left without a result.
        let answered = nodes.len().saturating_sub(1);
        Ok(nodes[..answered]
            .iter()
            .map(|n| match n.name.as_str() {
                "missing" => Err(Status::not_found("no instance for missing")),
                name => Ok(InstanceMetadata {
                    provider_id: format!("tester://{}", name),
                    ..Default::default()
                }),
            })
            .collect())
    }
}

impl Routes for Tester {
    fn list_routes(&self, _call: &Call, cluster: &str) -> Result<Vec<Route>> {
        let with_addresses = Route {
            name: format!("{}-r1", cluster),
            target_node: "n1".into(),
            destination_cidr: "10.244.1.0/24".into(),
            blackhole: false,
            target_node_addresses: Some(vec![::ccm_provider::NodeAddress::new(
                ::ccm_provider::AddressType::InternalIp,
                "10.0.0.1",
            )]),
        };
        let blackhole = Route {
            name: format!("{}-r2", cluster),
            destination_cidr: "fd00:10:244::/64".into(),
            blackhole: true,
            ..Route::default()
        };
        Ok(vec![with_addresses, blackhole])
    }
    fn create_route(&self, _call: &Call, _c: &str, name_hint: &str, route: &Route) -> Result<()> {
        if route.destination_cidr == "10.244.1.0/24" && name_hint == "uid-1" {
            Err(Status::already_exists("route exists"))
        } else {
            Ok(())
        }
    }
    fn delete_route(&self, _call: &Call, _c: &str, route: &Route) -> Result<()> {
        let addresses = route.target_node_addresses.as_deref().unwrap_or(&[]);
        match addresses.first() {
            Some(a) if a.address == "10.0.0.1" => Ok(()),
            _ => Err(Status::not_found(format!("no route {}", route.name))),
        }
    }
}

ccm_provider!(Tester);

fn node(name: &'static str, info: &abi::ccm_node_info) -> abi::ccm_node {
    abi::ccm_node {
        struct_size: std::mem::size_of::<abi::ccm_node>() as u32,
        name: c(name),
        uid: c(""),
        provider_id: c(""),
        labels: std::ptr::null(),
        label_count: 0,
        annotations: std::ptr::null(),
        annotation_count: 0,
        addresses: std::ptr::null(),
        address_count: 0,
        node_info: info,
        object_json: c(""),
    }
}

fn empty_info() -> abi::ccm_node_info {
    let e = c("");
    abi::ccm_node_info {
        struct_size: std::mem::size_of::<abi::ccm_node_info>() as u32,
        machine_id: e,
        system_uuid: e,
        boot_id: e,
        kernel_version: e,
        os_image: e,
        container_runtime_version: e,
        kubelet_version: e,
        operating_system: e,
        architecture: e,
    }
}

/// Negotiates at 1.1 and creates the provider; the plugin table and the provider handle.
fn created() -> (&'static abi::ccm_plugin, *mut abi::ccm_provider) {
    let (status, plugin) = negotiate(1, 1);
    assert_eq!(status, abi::CCM_STATUS_OK);
    let plugin = plugin.unwrap();
    let mut p: *mut abi::ccm_provider = std::ptr::null_mut();
    assert_eq!(unsafe { plugin.create.unwrap()(&call(2), c("ok"), &mut p) }, abi::CCM_STATUS_OK);
    assert!(!p.is_null());
    (plugin, p)
}

fn instances(
    plugin: &abi::ccm_plugin,
    p: *mut abi::ccm_provider,
) -> &'static abi::ccm_instances_v1 {
    let t = unsafe { plugin.get_capability.unwrap()(p, c(abi::CCM_CAP_INSTANCES)) };
    unsafe { (t as *const abi::ccm_instances_v1).as_ref() }.expect("no instances table")
}

// -- tests -----------------------------------------------------------------------------------

#[test]
fn another_major_is_refused_with_both_versions() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (status, plugin) = negotiate(2, 0);
    assert_eq!(status, abi::CCM_STATUS_FAILED_PRECONDITION);
    assert!(plugin.is_none());
    let r = take();
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert_eq!(r.errors[0].1, "plugin tester speaks ABI 1.1 but the host speaks ABI 2.0");
}

#[test]
fn the_minor_is_the_lower_of_both() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (host_minor, want) in [(0u32, 0u32), (1, 1), (7, abi::CCM_ABI_MINOR)] {
        let (status, plugin) = negotiate(1, host_minor);
        assert_eq!(status, abi::CCM_STATUS_OK);
        let plugin = plugin.unwrap();
        assert_eq!(plugin.abi_major, 1);
        assert_eq!(plugin.abi_minor, want, "host minor {}", host_minor);
        assert_eq!(unsafe { text(plugin.name) }, "tester");
        assert_eq!(unsafe { text(plugin.version) }, "1.2.3");
        assert_eq!(unsafe { text(plugin.annotation_domain) }, "lb.example.com");
        assert_eq!(unsafe { text(plugin.provider_id_prefix) }, "");
        assert!(plugin.reconfigure.is_some());
    }
}

#[test]
fn create_refusals_and_panics_carry_their_message() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_, plugin) = negotiate(1, 1);
    let plugin = plugin.unwrap();
    let mut p: *mut abi::ccm_provider = std::ptr::null_mut();
    assert_eq!(
        unsafe { plugin.create.unwrap()(&call(3), c("bad"), &mut p) },
        abi::CCM_STATUS_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe { plugin.create.unwrap()(&call(4), c("panic"), &mut p) },
        abi::CCM_STATUS_INTERNAL
    );
    assert!(p.is_null());
    let r = take();
    assert_eq!(r.errors[0], (3, "line 1: bad is not a config".to_string(), 0));
    assert_eq!(r.errors[1].0, 4);
    assert_eq!(r.errors[1].1, "panic in create: create was told to panic");
}

#[test]
fn a_panicking_call_is_internal_with_its_message_in_the_error_and_the_log() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (plugin, p) = created();
    let table = instances(plugin, p);
    let info = empty_info();
    let n = node("boom", &info);
    let status = unsafe { table.instance_metadata.unwrap()(p, &call(10), &n) };
    assert_eq!(status, abi::CCM_STATUS_INTERNAL);
    let r = take();
    assert!(
        r.errors.contains(&(10, "panic in instance_metadata: boom for boom".to_string(), 0)),
        "{:?}",
        r.errors
    );
    let panic_log = r.logs.iter().find(|(_, m)| m.starts_with("provider panicked: boom for boom"));
    let (level, line) = panic_log.unwrap_or_else(|| panic!("no panic line in {:?}", r.logs));
    assert_eq!(*level, abi::CCM_LOG_ERROR);
    assert!(line.contains("location=tests/boundary.rs:"), "{}", line);
    assert!(r.metadata.is_empty());
    // The plugin still answers afterwards.
    let ok = node("fine", &info);
    assert_eq!(unsafe { table.instance_metadata.unwrap()(p, &call(11), &ok) }, abi::CCM_STATUS_OK);
    assert_eq!(take().metadata, vec![(11, 0, "tester://fine".to_string())]);
    unsafe { plugin.destroy.unwrap()(p) };
}

#[test]
fn on_a_1_0_host_the_panic_report_goes_through_plain_log() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (status, plugin) = negotiate(1, 0);
    assert_eq!(status, abi::CCM_STATUS_OK);
    let plugin = plugin.unwrap();
    let mut p: *mut abi::ccm_provider = std::ptr::null_mut();
    assert_eq!(unsafe { plugin.create.unwrap()(&call(2), c("ok"), &mut p) }, abi::CCM_STATUS_OK);
    let info = empty_info();
    let n = node("boom", &info);
    let status = unsafe { instances(plugin, p).instance_metadata.unwrap()(p, &call(12), &n) };
    assert_eq!(status, abi::CCM_STATUS_INTERNAL);
    let r = take();
    assert!(
        r.logs.iter().any(|(_, m)| m.starts_with("provider panicked: boom for boom location=\"")),
        "{:?}",
        r.logs
    );
    unsafe { plugin.destroy.unwrap()(p) };
}

#[test]
fn statuses_answers_and_retry_after_reach_the_host() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (plugin, p) = created();
    let table = instances(plugin, p);
    assert_eq!(table.max_concurrency, 4);
    assert_eq!(table.struct_size as usize, std::mem::size_of::<abi::ccm_instances_v1>());
    let info = empty_info();
    let mut e = abi::CCM_EXISTENCE_UNKNOWN;
    let gone = node("gone", &info);
    assert_eq!(
        unsafe { table.instance_exists.unwrap()(p, &call(20), &gone, &mut e) },
        abi::CCM_STATUS_OK
    );
    assert_eq!(e, abi::CCM_EXISTENCE_NOT_FOUND);
    let busy = node("busy", &info);
    let status = unsafe { table.instance_exists.unwrap()(p, &call(21), &busy, &mut e) };
    assert_eq!(status, abi::CCM_STATUS_RESOURCE_EXHAUSTED);
    // A cancelled call (the fake host cancels call 999) stops with CANCELLED.
    let fine = node("fine", &info);
    assert_eq!(
        unsafe { table.instance_exists.unwrap()(p, &call(999), &fine, &mut e) },
        abi::CCM_STATUS_CANCELLED
    );
    // An error with code OK is answered as INTERNAL.
    let mut power = abi::CCM_POWER_UNKNOWN;
    let status = unsafe { table.instance_shutdown.unwrap()(p, &call(22), &fine, &mut power) };
    assert_eq!(status, abi::CCM_STATUS_INTERNAL);
    assert_eq!(power, abi::CCM_POWER_UNKNOWN);
    let r = take();
    assert!(r.errors.contains(&(21, "the cloud is busy".to_string(), 30_000)), "{:?}", r.errors);
    assert!(
        r.errors.iter().any(|(id, m, _)| *id == 22 && m.contains("code OK: confused")),
        "{:?}",
        r.errors
    );
    // Unknown capability IDs (another revision included) are NULL.
    for id in ["ccm.instances/2", "ccm.routes", ""] {
        assert!(unsafe { plugin.get_capability.unwrap()(p, c(id)) }.is_null(), "{}", id);
    }
    unsafe { plugin.destroy.unwrap()(p) };
}

#[test]
fn load_balancer_outputs_carry_the_1_1_annotations() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (plugin, p) = created();
    let t = unsafe { plugin.get_capability.unwrap()(p, c(abi::CCM_CAP_LOADBALANCER)) }
        as *const abi::ccm_loadbalancer_v1;
    let lb = unsafe { t.as_ref() }.unwrap();
    let empty_status = abi::ccm_lb_status {
        struct_size: std::mem::size_of::<abi::ccm_lb_status>() as u32,
        ingress: std::ptr::null(),
        ingress_count: 0,
        annotations: std::ptr::null(),
        annotation_count: 0,
        removed_annotations: std::ptr::null(),
        removed_annotation_count: 0,
    };
    let mut svc: abi::ccm_service = unsafe { std::mem::zeroed() };
    svc.struct_size = std::mem::size_of::<abi::ccm_service>() as u32;
    svc.namespace_ = c("default");
    svc.name = c("web");
    svc.current_status = &empty_status;
    let info = empty_info();
    let n1 = node("n1", &info);
    let nodes = [&n1 as *const abi::ccm_node];
    let status =
        unsafe { lb.ensure_load_balancer.unwrap()(p, &call(30), c("k"), &svc, nodes.as_ptr(), 1) };
    assert_eq!(status, abi::CCM_STATUS_OK);
    assert_eq!(
        unsafe { lb.get_load_balancer_name.unwrap()(p, &call(31), c("k"), &svc) },
        abi::CCM_STATUS_OK
    );
    let mut exists = true;
    assert_eq!(
        unsafe { lb.get_load_balancer.unwrap()(p, &call(32), c("k"), &svc, &mut exists) },
        abi::CCM_STATUS_OK
    );
    assert!(!exists);
    let r = take();
    assert_eq!(r.lb_annotations.len(), 1);
    assert_eq!(r.lb_annotations[0].get("lb.example.com/id").map(String::as_str), Some("web-1"));
    assert_eq!(r.strings, vec!["k-default-web".to_string()]);
    unsafe { plugin.destroy.unwrap()(p) };
}

#[test]
fn batch_results_are_emitted_per_node() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (plugin, p) = created();
    let t = unsafe { plugin.get_capability.unwrap()(p, c(abi::CCM_CAP_INSTANCES_BATCH)) }
        as *const abi::ccm_instances_batch_v1;
    let batch = unsafe { t.as_ref() }.unwrap();
    assert_eq!(batch.max_batch_size, 50);
    let info = empty_info();
    let (a, m, last) = (node("a", &info), node("missing", &info), node("last", &info));
    let nodes = [&a as *const abi::ccm_node, &m, &last];
    let f = batch.instance_metadata_batch.unwrap();
    assert_eq!(unsafe { f(p, &call(40), nodes.as_ptr(), 3) }, abi::CCM_STATUS_OK);
    let r = take();
    assert_eq!(r.metadata, vec![(40, 0, "tester://a".to_string())]);
    let not_found = Code::NotFound.raw();
    assert_eq!(r.item_errors, vec![(1, not_found, "no instance for missing".to_string())]);
    unsafe { plugin.destroy.unwrap()(p) };
}

#[test]
fn routes_are_emitted_and_read_with_their_addresses() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (plugin, p) = created();
    let t = unsafe { plugin.get_capability.unwrap()(p, c(abi::CCM_CAP_ROUTES)) }
        as *const abi::ccm_routes_v1;
    let routes = unsafe { t.as_ref() }.unwrap();
    assert_eq!(unsafe { routes.list_routes.unwrap()(p, &call(50), c("k")) }, abi::CCM_STATUS_OK);
    let r = take();
    assert_eq!(
        r.routes,
        vec![
            (
                "k-r1".to_string(),
                "10.244.1.0/24".to_string(),
                false,
                Some(vec!["InternalIP=10.0.0.1".to_string()])
            ),
            ("k-r2".to_string(), "fd00:10:244::/64".to_string(), true, None),
        ]
    );
    let address = abi::ccm_node_address { type_: c("InternalIP"), address: c("10.0.0.1") };
    let mut route = abi::ccm_route {
        struct_size: std::mem::size_of::<abi::ccm_route>() as u32,
        name: c("k-r1"),
        target_node: c("n1"),
        destination_cidr: c("10.244.1.0/24"),
        blackhole: false,
        enable_node_addresses: true,
        target_node_addresses: &address,
        target_node_address_count: 1,
    };
    let create = routes.create_route.unwrap();
    let delete = routes.delete_route.unwrap();
    assert_eq!(
        unsafe { create(p, &call(51), c("k"), c("uid-1"), &route) },
        abi::CCM_STATUS_ALREADY_EXISTS
    );
    assert_eq!(unsafe { create(p, &call(52), c("k"), c("uid-2"), &route) }, abi::CCM_STATUS_OK);
    assert_eq!(unsafe { delete(p, &call(53), c("k"), &route) }, abi::CCM_STATUS_OK);
    // Without enable_node_addresses the addresses are not read.
    route.enable_node_addresses = false;
    assert_eq!(unsafe { delete(p, &call(54), c("k"), &route) }, abi::CCM_STATUS_NOT_FOUND);
    let r = take();
    assert!(r.errors.contains(&(54, "no route k-r1".to_string(), 0)), "{:?}", r.errors);
    unsafe { plugin.destroy.unwrap()(p) };
}
