//! The `extern "C"` side: negotiation, the plugin table, and one trampoline per ABI function
//! that turns the raw call into a safe one on the provider, under the panic barrier.
//!
//! Used through the `ccm_provider!` macro; nothing here is meant to be called by hand.

use std::os::raw::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::abi;
use crate::boundary::{guard, guard_value, install_panic_hook};
use crate::convert::{self, string, to_c, with_c_lb_status, with_c_metadata, with_c_route};
use crate::host::{Call, Host};
use crate::provider::Provider;
use crate::status::{Result, Status};
use crate::types::{InstanceMetadata, LbStatus};

/// A `ccm_plugin` that may live in a `static` (its string pointers point at `'static` data).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct PluginTable(pub abi::ccm_plugin);

// SAFETY: the table is immutable and every pointer in it is to 'static data or a function.
unsafe impl Sync for PluginTable {}

/// How many plugin tables there are: one per minor this crate speaks.
pub const MINORS: usize = abi::CCM_ABI_MINOR as usize + 1;

const fn static_str(s: &'static str) -> abi::ccm_str {
    abi::ccm_str { data: s.as_ptr() as *const c_char, size: s.len() }
}

/// The plugin tables of provider `P`, one per ABI minor (index = the minor it answers).
pub const fn plugin_tables<P: Provider>() -> [PluginTable; MINORS] {
    let table = abi::ccm_plugin {
        struct_size: std::mem::size_of::<abi::ccm_plugin>() as u32,
        abi_major: abi::CCM_ABI_MAJOR,
        abi_minor: 0,
        name: static_str(P::NAME),
        version: static_str(P::VERSION),
        create: Some(create::<P>),
        destroy: Some(destroy::<P>),
        get_capability: Some(get_capability::<P>),
        reconfigure: if P::RECONFIGURABLE { Some(reconfigure::<P>) } else { None },
        provider_id_prefix: static_str(P::PROVIDER_ID_PREFIX),
        annotation_domain: static_str(P::ANNOTATION_DOMAIN),
        metric_namespace: static_str(P::METRIC_NAMESPACE),
    };
    let mut tables = [PluginTable(table); MINORS];
    let mut minor = 0;
    while minor < MINORS {
        tables[minor].0.abi_minor = minor as u32;
        minor += 1;
    }
    tables
}

/// The entry point's body: checks the host's major (refusing another one with a message
/// naming both versions), records the host, installs the panic hook, and answers with the
/// table of minor = min(host's, this crate's).
///
/// # Safety
/// Called by the host as `ccm_provider_entry_v1`, with the pointers the ABI describes.
pub unsafe fn negotiate<P: Provider>(
    info: *const abi::ccm_host_info,
    call: *const abi::ccm_call,
    out: *mut *const abi::ccm_plugin,
    tables: &'static [PluginTable; MINORS],
) -> abi::ccm_status {
    guard_value("ccm_provider_entry_v1", abi::CCM_STATUS_INTERNAL, || {
        if info.is_null() || out.is_null() {
            return abi::CCM_STATUS_INVALID_ARGUMENT;
        }
        let info: abi::ccm_host_info = convert::read_struct(info);
        if info.abi_major != abi::CCM_ABI_MAJOR {
            // Never keep the table of another major; its set_error slot is used only when the
            // table's struct_size says it has one.
            let theirs: abi::ccm_host_services = convert::read_struct(info.services);
            if let (Some(set_error), false) = (theirs.set_error, call.is_null()) {
                let call: abi::ccm_call = convert::read_struct(call);
                let message = format!(
                    "plugin {} speaks ABI {}.{} but the host speaks ABI {}.{}",
                    P::NAME,
                    abi::CCM_ABI_MAJOR,
                    abi::CCM_ABI_MINOR,
                    info.abi_major,
                    info.abi_minor
                );
                set_error(info.host, call.call_id, to_c(&message), 0);
            }
            return abi::CCM_STATUS_FAILED_PRECONDITION;
        }
        if info.services.is_null() {
            return abi::CCM_STATUS_INVALID_ARGUMENT;
        }
        let minor = info.abi_minor.min(abi::CCM_ABI_MINOR);
        Host::install(info.host, info.services, minor);
        install_panic_hook();
        *out = &tables[minor as usize].0;
        abi::CCM_STATUS_OK
    })
}

/// What a `ccm_provider*` points to: the provider and the capability tables the host gets.
struct Wrapper<P> {
    provider: P,
    instances: Option<abi::ccm_instances_v1>,
    batch: Option<abi::ccm_instances_batch_v1>,
    lb: Option<abi::ccm_loadbalancer_v1>,
    routes: Option<abi::ccm_routes_v1>,
}

fn flags(wants_object_json: bool) -> u32 {
    if wants_object_json {
        abi::CCM_CAP_WANTS_OBJECT_JSON
    } else {
        0
    }
}

impl<P: Provider> Wrapper<P> {
    fn new(provider: P) -> Wrapper<P> {
        let instances = provider.instances().map(|c| abi::ccm_instances_v1 {
            struct_size: std::mem::size_of::<abi::ccm_instances_v1>() as u32,
            max_concurrency: c.max_concurrency(),
            flags: flags(c.wants_object_json()),
            instance_exists: Some(instance_exists::<P>),
            instance_shutdown: Some(instance_shutdown::<P>),
            instance_metadata: Some(instance_metadata::<P>),
        });
        let batch = provider.instances_batch().map(|c| abi::ccm_instances_batch_v1 {
            struct_size: std::mem::size_of::<abi::ccm_instances_batch_v1>() as u32,
            max_concurrency: c.max_concurrency(),
            flags: flags(c.wants_object_json()),
            max_batch_size: c.max_batch_size(),
            instance_metadata_batch: Some(instance_metadata_batch::<P>),
        });
        let lb = provider.load_balancer().map(|c| abi::ccm_loadbalancer_v1 {
            struct_size: std::mem::size_of::<abi::ccm_loadbalancer_v1>() as u32,
            max_concurrency: c.max_concurrency(),
            flags: flags(c.wants_object_json()),
            get_load_balancer: Some(get_load_balancer::<P>),
            get_load_balancer_name: Some(get_load_balancer_name::<P>),
            ensure_load_balancer: Some(ensure_load_balancer::<P>),
            update_load_balancer: Some(update_load_balancer::<P>),
            ensure_load_balancer_deleted: Some(ensure_load_balancer_deleted::<P>),
        });
        let routes = provider.routes().map(|c| abi::ccm_routes_v1 {
            struct_size: std::mem::size_of::<abi::ccm_routes_v1>() as u32,
            max_concurrency: c.max_concurrency(),
            flags: 0,
            list_routes: Some(list_routes::<P>),
            create_route: Some(create_route::<P>),
            delete_route: Some(delete_route::<P>),
        });
        Wrapper { provider, instances, batch, lb, routes }
    }
}

/// # Safety
/// `p` is a pointer `create::<P>` returned and `destroy` has not been called.
unsafe fn provider<'a, P: Provider>(p: *mut abi::ccm_provider) -> Option<&'a P> {
    (p as *const Wrapper<P>).as_ref().map(|w| &w.provider)
}

/// Answers a method's result: OK and `on_ok`'s status, or the error's code after set_error.
fn finish<T>(
    call: &Call,
    result: Result<T>,
    on_ok: impl FnOnce(T) -> abi::ccm_status,
) -> abi::ccm_status {
    match result {
        Ok(value) => on_ok(value),
        Err(status) => fail(call, &status),
    }
}

fn fail(call: &Call, status: &Status) -> abi::ccm_status {
    call.set_error(&status.message_for_host(), status.retry_after());
    status.raw_for_host()
}

fn missing(call: &Call, capability: &str) -> abi::ccm_status {
    fail(call, &Status::unimplemented(format!("the provider offers no {}", capability)))
}

fn emit_metadata(call: &Call, index: usize, md: &InstanceMetadata) -> bool {
    let host = call.host();
    match host.services().emit_instance_metadata {
        // SAFETY: the slot is the host's; the metadata is borrowed for the call.
        Some(emit) => {
            with_c_metadata(md, |raw| unsafe { emit(host.handle(), call.id(), index, raw) })
        }
        None => false,
    }
}

static WARNED_ANNOTATIONS: AtomicBool = AtomicBool::new(false);

fn emit_lb_status(call: &Call, status: &LbStatus) -> bool {
    let host = call.host();
    if host.abi_minor() < 1
        && (!status.annotations.is_empty() || !status.removed_annotations.is_empty())
        && !WARNED_ANNOTATIONS.swap(true, Ordering::Relaxed)
    {
        host.warning(
            "the host speaks ABI 1.0: the load balancer's Service annotations are not written",
        );
    }
    match host.services().emit_lb_status {
        // SAFETY: the slot is the host's; the status is borrowed for the call.
        Some(emit) => {
            with_c_lb_status(status, |raw| unsafe { emit(host.handle(), call.id(), raw) })
        }
        None => false,
    }
}

// Lifecycle --------------------------------------------------------------------------------

unsafe extern "C" fn create<P: Provider>(
    call: *const abi::ccm_call,
    config: abi::ccm_str,
    out: *mut *mut abi::ccm_provider,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "create", || {
        if out.is_null() {
            return fail(
                &call,
                &Status::invalid_argument("create was given no place for the provider"),
            );
        }
        let bytes = convert::slice(config.data as *const u8, config.size);
        finish(&call, P::create(&call, bytes), |provider| {
            let wrapper = Box::new(Wrapper::new(provider));
            *out = Box::into_raw(wrapper) as *mut abi::ccm_provider;
            abi::CCM_STATUS_OK
        })
    })
}

unsafe extern "C" fn destroy<P: Provider>(p: *mut abi::ccm_provider) {
    guard_value("destroy", (), || {
        if !p.is_null() {
            drop(Box::from_raw(p as *mut Wrapper<P>));
        }
    })
}

unsafe extern "C" fn get_capability<P: Provider>(
    p: *mut abi::ccm_provider,
    id: abi::ccm_str,
) -> *const c_void {
    guard_value("get_capability", std::ptr::null(), || {
        let wrapper = match (p as *const Wrapper<P>).as_ref() {
            Some(w) => w,
            None => return std::ptr::null(),
        };
        fn table<T>(t: &Option<T>) -> *const c_void {
            t.as_ref().map_or(std::ptr::null(), |t| t as *const T as *const c_void)
        }
        match string(id).as_str() {
            abi::CCM_CAP_INSTANCES => table(&wrapper.instances),
            abi::CCM_CAP_INSTANCES_BATCH => table(&wrapper.batch),
            abi::CCM_CAP_LOADBALANCER => table(&wrapper.lb),
            abi::CCM_CAP_ROUTES => table(&wrapper.routes),
            _ => std::ptr::null(),
        }
    })
}

unsafe extern "C" fn reconfigure<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    config: abi::ccm_str,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "reconfigure", || match provider::<P>(p) {
        Some(provider) => {
            let bytes = convert::slice(config.data as *const u8, config.size);
            finish(&call, provider.reconfigure(&call, bytes), |()| abi::CCM_STATUS_OK)
        }
        None => fail(&call, &Status::invalid_argument("reconfigure was given no provider")),
    })
}

// ccm.instances/1 ----------------------------------------------------------------------------

unsafe extern "C" fn instance_exists<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    node: *const abi::ccm_node,
    out: *mut abi::ccm_existence,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "instance_exists", || {
        let cap = match provider::<P>(p).and_then(|p| p.instances()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_INSTANCES),
        };
        let node = convert::node(node);
        finish(&call, cap.instance_exists(&call, &node), |e| {
            if !out.is_null() {
                *out = convert::existence(e);
            }
            abi::CCM_STATUS_OK
        })
    })
}

unsafe extern "C" fn instance_shutdown<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    node: *const abi::ccm_node,
    out: *mut abi::ccm_power,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "instance_shutdown", || {
        let cap = match provider::<P>(p).and_then(|p| p.instances()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_INSTANCES),
        };
        let node = convert::node(node);
        finish(&call, cap.instance_shutdown(&call, &node), |power| {
            if !out.is_null() {
                *out = convert::power(power);
            }
            abi::CCM_STATUS_OK
        })
    })
}

unsafe extern "C" fn instance_metadata<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    node: *const abi::ccm_node,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "instance_metadata", || {
        let cap = match provider::<P>(p).and_then(|p| p.instances()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_INSTANCES),
        };
        let node = convert::node(node);
        finish(&call, cap.instance_metadata(&call, &node), |md| {
            if let Some(md) = md {
                emit_metadata(&call, 0, &md);
            }
            abi::CCM_STATUS_OK
        })
    })
}

// ccm.instances.batch/1 ----------------------------------------------------------------------

unsafe extern "C" fn instance_metadata_batch<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    nodes: *const *const abi::ccm_node,
    node_count: usize,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "instance_metadata_batch", || {
        let cap = match provider::<P>(p).and_then(|p| p.instances_batch()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_INSTANCES_BATCH),
        };
        let nodes = convert::nodes(nodes, node_count);
        finish(&call, cap.instance_metadata_batch(&call, &nodes), |results| {
            let host = call.host();
            for (index, result) in results.iter().enumerate().take(node_count) {
                match result {
                    Ok(md) => {
                        emit_metadata(&call, index, md);
                    }
                    Err(status) => {
                        if let Some(emit) = host.services().emit_item_error {
                            let message = status.message_for_host();
                            emit(
                                host.handle(),
                                call.id(),
                                index,
                                status.raw_for_host(),
                                to_c(&message),
                            );
                        }
                    }
                }
            }
            abi::CCM_STATUS_OK
        })
    })
}

// ccm.loadbalancer/1 -------------------------------------------------------------------------

unsafe extern "C" fn get_load_balancer<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    cluster: abi::ccm_str,
    service: *const abi::ccm_service,
    out_exists: *mut bool,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "get_load_balancer", || {
        let cap = match provider::<P>(p).and_then(|p| p.load_balancer()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_LOADBALANCER),
        };
        let service = convert::service(service);
        finish(&call, cap.get_load_balancer(&call, &string(cluster), &service), |status| {
            if !out_exists.is_null() {
                *out_exists = status.is_some();
            }
            if let Some(status) = status {
                emit_lb_status(&call, &status);
            }
            abi::CCM_STATUS_OK
        })
    })
}

unsafe extern "C" fn get_load_balancer_name<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    cluster: abi::ccm_str,
    service: *const abi::ccm_service,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "get_load_balancer_name", || {
        let cap = match provider::<P>(p).and_then(|p| p.load_balancer()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_LOADBALANCER),
        };
        let service = convert::service(service);
        finish(&call, cap.get_load_balancer_name(&call, &string(cluster), &service), |name| {
            let host = call.host();
            if let Some(emit) = host.services().emit_string {
                emit(host.handle(), call.id(), to_c(&name));
            }
            abi::CCM_STATUS_OK
        })
    })
}

unsafe extern "C" fn ensure_load_balancer<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    cluster: abi::ccm_str,
    service: *const abi::ccm_service,
    nodes: *const *const abi::ccm_node,
    node_count: usize,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "ensure_load_balancer", || {
        let cap = match provider::<P>(p).and_then(|p| p.load_balancer()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_LOADBALANCER),
        };
        let service = convert::service(service);
        let nodes = convert::nodes(nodes, node_count);
        finish(
            &call,
            cap.ensure_load_balancer(&call, &string(cluster), &service, &nodes),
            |status| {
                emit_lb_status(&call, &status);
                abi::CCM_STATUS_OK
            },
        )
    })
}

unsafe extern "C" fn update_load_balancer<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    cluster: abi::ccm_str,
    service: *const abi::ccm_service,
    nodes: *const *const abi::ccm_node,
    node_count: usize,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "update_load_balancer", || {
        let cap = match provider::<P>(p).and_then(|p| p.load_balancer()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_LOADBALANCER),
        };
        let service = convert::service(service);
        let nodes = convert::nodes(nodes, node_count);
        finish(&call, cap.update_load_balancer(&call, &string(cluster), &service, &nodes), |()| {
            abi::CCM_STATUS_OK
        })
    })
}

unsafe extern "C" fn ensure_load_balancer_deleted<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    cluster: abi::ccm_str,
    service: *const abi::ccm_service,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "ensure_load_balancer_deleted", || {
        let cap = match provider::<P>(p).and_then(|p| p.load_balancer()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_LOADBALANCER),
        };
        let service = convert::service(service);
        finish(&call, cap.ensure_load_balancer_deleted(&call, &string(cluster), &service), |()| {
            abi::CCM_STATUS_OK
        })
    })
}

// ccm.routes/1 -------------------------------------------------------------------------------

unsafe extern "C" fn list_routes<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    cluster: abi::ccm_str,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "list_routes", || {
        let cap = match provider::<P>(p).and_then(|p| p.routes()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_ROUTES),
        };
        finish(&call, cap.list_routes(&call, &string(cluster)), |routes| {
            let host = call.host();
            if let Some(emit) = host.services().emit_route {
                for route in &routes {
                    with_c_route(route, |raw| emit(host.handle(), call.id(), raw));
                }
            }
            abi::CCM_STATUS_OK
        })
    })
}

unsafe extern "C" fn create_route<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    cluster: abi::ccm_str,
    name_hint: abi::ccm_str,
    route: *const abi::ccm_route,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "create_route", || {
        let cap = match provider::<P>(p).and_then(|p| p.routes()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_ROUTES),
        };
        let route = convert::route(route);
        finish(&call, cap.create_route(&call, &string(cluster), &string(name_hint), &route), |()| {
            abi::CCM_STATUS_OK
        })
    })
}

unsafe extern "C" fn delete_route<P: Provider>(
    p: *mut abi::ccm_provider,
    call: *const abi::ccm_call,
    cluster: abi::ccm_str,
    route: *const abi::ccm_route,
) -> abi::ccm_status {
    let call = Call::from_raw(call);
    guard(Some(&call), "delete_route", || {
        let cap = match provider::<P>(p).and_then(|p| p.routes()) {
            Some(c) => c,
            None => return missing(&call, abi::CCM_CAP_ROUTES),
        };
        let route = convert::route(route);
        finish(&call, cap.delete_route(&call, &string(cluster), &route), |()| abi::CCM_STATUS_OK)
    })
}
