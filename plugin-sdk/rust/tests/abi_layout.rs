//! The hand-written mirror in `ccm_provider::abi` against the C header, as the C compiler sees
//! it: the test reads `ccm/provider_abi.h`, finds every struct and field and every numeric or
//! string `#define`, generates a C program that prints each struct's size and alignment and
//! each field's offset, compiles it with the C compiler (`$CC`, else `cc`), and compares every
//! line with the Rust side. A field or constant that exists on one side only fails the test,
//! so the mirror cannot silently fall behind the header.
//!
//! The header is taken from `$CCM_ABI_INCLUDE_DIR/ccm/provider_abi.h` when set, else from the
//! SDK this crate is part of (the source tree's `../include`, or an installed SDK's
//! `<prefix>/include`).

use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::process::Command;

use ::ccm_provider::abi::*;

fn include_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CCM_ABI_INCLUDE_DIR") {
        return PathBuf::from(dir);
    }
    // The SDK's source tree (plugin-sdk/rust -> plugin-sdk/include), else an installed SDK
    // (<prefix>/share/ccm-plugin-sdk/rust -> <prefix>/include).
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = [crate_dir.join("../include"), crate_dir.join("../../../include")];
    for dir in &candidates {
        if dir.join("ccm").join("provider_abi.h").is_file() {
            return dir.clone();
        }
    }
    panic!("ccm/provider_abi.h is in none of {:?}: set CCM_ABI_INCLUDE_DIR", candidates)
}

fn header_text() -> String {
    let path = include_dir().join("ccm").join("provider_abi.h");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {}", path.display(), e))
}

/// The header without its /* */ comments (it has no // comments).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        match rest[start + 2..].find("*/") {
            Some(end) => rest = &rest[start + 2 + end + 2..],
            None => panic!("unterminated comment in the header"),
        }
        out.push(' ');
    }
    out.push_str(rest);
    out
}

/// Every `typedef struct NAME { ... } NAME;` with its field names, in order.
fn header_structs(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("typedef struct ") {
        let after = &rest[at + "typedef struct ".len()..];
        let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let after_name = after[name.len()..].trim_start();
        if !after_name.starts_with('{') {
            // An opaque declaration (typedef struct ccm_provider ccm_provider;).
            rest = after;
            continue;
        }
        let close = after_name.find('}').expect("struct without a closing brace");
        let body = &after_name[1..close];
        let mut fields = Vec::new();
        for decl in body.split(';').map(str::trim).filter(|d| !d.is_empty()) {
            let field = if let Some(p) = decl.find("(*") {
                decl[p + 2..].split(')').next().unwrap().trim().to_string()
            } else {
                let rev: String =
                    decl.chars().rev().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                rev.chars().rev().collect()
            };
            assert!(!field.is_empty(), "cannot read a field name in {}: {:?}", name, decl);
            fields.push(field);
        }
        out.push((name, fields));
        rest = &after_name[close..];
    }
    out
}

#[derive(Debug, PartialEq, Eq)]
enum Value {
    Int(i64),
    Str(String),
}

/// Every `#define CCM_... <integer or string literal>`.
fn header_constants(text: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        let rest = match line.strip_prefix("#define ") {
            Some(r) => r.trim(),
            None => continue,
        };
        let mut parts = rest.splitn(2, char::is_whitespace);
        let name = parts.next().unwrap().to_string();
        let value = parts.next().unwrap_or("").trim();
        if !name.starts_with("CCM_") || name.contains('(') || value.is_empty() {
            continue;
        }
        if let Some(s) = value.strip_prefix('"') {
            out.insert(name, Value::Str(s.trim_end_matches('"').to_string()));
            continue;
        }
        let digits = value.trim_end_matches(['u', 'U']);
        let parsed = match digits.strip_prefix("0x") {
            Some(hex) => i64::from_str_radix(hex, 16).ok(),
            None => digits.parse::<i64>().ok(),
        };
        if let Some(v) = parsed {
            out.insert(name, Value::Int(v));
        }
    }
    out
}

/// Rust's view: "<struct> <field|sizeof|alignof>" -> number.
macro_rules! layout {
    ($out:ident, $ty:ident { $($field:ident),* $(,)? }) => {{
        let name = stringify!($ty);
        $out.insert(format!("{} sizeof", name), std::mem::size_of::<$ty>());
        $out.insert(format!("{} alignof", name), std::mem::align_of::<$ty>());
        let value = MaybeUninit::<$ty>::uninit();
        let base = value.as_ptr() as usize;
        $(
            // SAFETY: only the field's address is taken; nothing is read.
            let at = unsafe { std::ptr::addr_of!((*value.as_ptr()).$field) } as usize;
            let field = match stringify!($field) { "type_" => "type", other => other };
            $out.insert(format!("{} {}", name, field), at - base);
        )*
    }};
}

fn rust_layout() -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    layout!(m, ccm_str { data, size });
    layout!(m, ccm_kv { key, value });
    layout!(m, ccm_node_address { type_, address });
    layout!(m, ccm_call { struct_size, call_id, deadline_monotonic_ns });
    layout!(
        m,
        ccm_instance_metadata {
            struct_size,
            provider_id,
            instance_type,
            zone,
            region,
            addresses,
            address_count,
            additional_labels,
            additional_label_count
        }
    );
    layout!(m, ccm_port_status { struct_size, port, protocol, error });
    layout!(m, ccm_lb_ingress { struct_size, ip, hostname, ip_mode, ports, port_count });
    layout!(
        m,
        ccm_lb_status {
            struct_size,
            ingress,
            ingress_count,
            annotations,
            annotation_count,
            removed_annotations,
            removed_annotation_count
        }
    );
    layout!(
        m,
        ccm_route {
            struct_size,
            name,
            target_node,
            destination_cidr,
            blackhole,
            enable_node_addresses,
            target_node_addresses,
            target_node_address_count
        }
    );
    layout!(
        m,
        ccm_host_services {
            struct_size,
            log,
            is_cancelled,
            now_monotonic_ns,
            now_unix_ns,
            set_error,
            metric,
            register_secret,
            emit_instance_metadata,
            emit_item_error,
            emit_lb_status,
            emit_route,
            emit_string,
            log_fields
        }
    );
    layout!(
        m,
        ccm_host_info {
            struct_size,
            abi_major,
            abi_minor,
            host_name,
            host_version,
            host,
            services
        }
    );
    layout!(
        m,
        ccm_node_info {
            struct_size,
            machine_id,
            system_uuid,
            boot_id,
            kernel_version,
            os_image,
            container_runtime_version,
            kubelet_version,
            operating_system,
            architecture
        }
    );
    layout!(
        m,
        ccm_node {
            struct_size,
            name,
            uid,
            provider_id,
            labels,
            label_count,
            annotations,
            annotation_count,
            addresses,
            address_count,
            node_info,
            object_json
        }
    );
    layout!(
        m,
        ccm_service_port {
            struct_size,
            name,
            protocol,
            port,
            node_port,
            target_port,
            app_protocol
        }
    );
    layout!(
        m,
        ccm_service {
            struct_size,
            namespace_,
            name,
            uid,
            labels,
            label_count,
            annotations,
            annotation_count,
            type_,
            ports,
            port_count,
            load_balancer_ip,
            source_ranges,
            source_range_count,
            external_traffic_policy,
            health_check_node_port,
            ip_families,
            ip_family_count,
            load_balancer_class,
            session_affinity,
            cluster_ip,
            current_status,
            object_json
        }
    );
    layout!(
        m,
        ccm_instances_v1 {
            struct_size,
            max_concurrency,
            flags,
            instance_exists,
            instance_shutdown,
            instance_metadata
        }
    );
    layout!(
        m,
        ccm_instances_batch_v1 {
            struct_size,
            max_concurrency,
            flags,
            max_batch_size,
            instance_metadata_batch
        }
    );
    layout!(
        m,
        ccm_loadbalancer_v1 {
            struct_size,
            max_concurrency,
            flags,
            get_load_balancer,
            get_load_balancer_name,
            ensure_load_balancer,
            update_load_balancer,
            ensure_load_balancer_deleted
        }
    );
    layout!(
        m,
        ccm_routes_v1 {
            struct_size,
            max_concurrency,
            flags,
            list_routes,
            create_route,
            delete_route
        }
    );
    layout!(
        m,
        ccm_plugin {
            struct_size,
            abi_major,
            abi_minor,
            name,
            version,
            create,
            destroy,
            get_capability,
            reconfigure,
            provider_id_prefix,
            annotation_domain,
            metric_namespace
        }
    );
    m
}

fn rust_constants() -> BTreeMap<String, Value> {
    let ints: &[(&str, i64)] = &[
        ("CCM_ABI_MAJOR", CCM_ABI_MAJOR.into()),
        ("CCM_ABI_MINOR", CCM_ABI_MINOR.into()),
        ("CCM_STATUS_OK", CCM_STATUS_OK.into()),
        ("CCM_STATUS_CANCELLED", CCM_STATUS_CANCELLED.into()),
        ("CCM_STATUS_INVALID_ARGUMENT", CCM_STATUS_INVALID_ARGUMENT.into()),
        ("CCM_STATUS_DEADLINE_EXCEEDED", CCM_STATUS_DEADLINE_EXCEEDED.into()),
        ("CCM_STATUS_NOT_FOUND", CCM_STATUS_NOT_FOUND.into()),
        ("CCM_STATUS_ALREADY_EXISTS", CCM_STATUS_ALREADY_EXISTS.into()),
        ("CCM_STATUS_PERMISSION_DENIED", CCM_STATUS_PERMISSION_DENIED.into()),
        ("CCM_STATUS_RESOURCE_EXHAUSTED", CCM_STATUS_RESOURCE_EXHAUSTED.into()),
        ("CCM_STATUS_FAILED_PRECONDITION", CCM_STATUS_FAILED_PRECONDITION.into()),
        ("CCM_STATUS_ABORTED", CCM_STATUS_ABORTED.into()),
        ("CCM_STATUS_UNIMPLEMENTED", CCM_STATUS_UNIMPLEMENTED.into()),
        ("CCM_STATUS_INTERNAL", CCM_STATUS_INTERNAL.into()),
        ("CCM_STATUS_UNAVAILABLE", CCM_STATUS_UNAVAILABLE.into()),
        ("CCM_STATUS_UNAUTHENTICATED", CCM_STATUS_UNAUTHENTICATED.into()),
        ("CCM_STATUS_IMPLEMENTED_ELSEWHERE", CCM_STATUS_IMPLEMENTED_ELSEWHERE.into()),
        ("CCM_LOG_ERROR", CCM_LOG_ERROR.into()),
        ("CCM_LOG_WARNING", CCM_LOG_WARNING.into()),
        ("CCM_LOG_INFO", CCM_LOG_INFO.into()),
        ("CCM_LOG_DEBUG", CCM_LOG_DEBUG.into()),
        ("CCM_METRIC_COUNTER", CCM_METRIC_COUNTER.into()),
        ("CCM_METRIC_GAUGE", CCM_METRIC_GAUGE.into()),
        ("CCM_METRIC_HISTOGRAM", CCM_METRIC_HISTOGRAM.into()),
        ("CCM_CAP_WANTS_OBJECT_JSON", CCM_CAP_WANTS_OBJECT_JSON.into()),
        ("CCM_EXISTENCE_UNKNOWN", CCM_EXISTENCE_UNKNOWN.into()),
        ("CCM_EXISTENCE_EXISTS", CCM_EXISTENCE_EXISTS.into()),
        ("CCM_EXISTENCE_NOT_FOUND", CCM_EXISTENCE_NOT_FOUND.into()),
        ("CCM_POWER_UNKNOWN", CCM_POWER_UNKNOWN.into()),
        ("CCM_POWER_RUNNING", CCM_POWER_RUNNING.into()),
        ("CCM_POWER_SHUTDOWN", CCM_POWER_SHUTDOWN.into()),
    ];
    let strs: &[(&str, &str)] = &[
        ("CCM_PROVIDER_ENTRY_SYMBOL", CCM_PROVIDER_ENTRY_SYMBOL),
        ("CCM_CAP_INSTANCES", CCM_CAP_INSTANCES),
        ("CCM_CAP_INSTANCES_BATCH", CCM_CAP_INSTANCES_BATCH),
        ("CCM_CAP_LOADBALANCER", CCM_CAP_LOADBALANCER),
        ("CCM_CAP_ROUTES", CCM_CAP_ROUTES),
    ];
    let mut m = BTreeMap::new();
    for (k, v) in ints {
        m.insert(k.to_string(), Value::Int(*v));
    }
    for (k, v) in strs {
        m.insert(k.to_string(), Value::Str(v.to_string()));
    }
    m
}

/// Compiles and runs a C program printing the header's layout as the C compiler sees it.
fn c_layout(structs: &[(String, Vec<String>)]) -> BTreeMap<String, usize> {
    let mut program = String::from(
        "#include <ccm/provider_abi.h>\n#include <stddef.h>\n#include <stdio.h>\nint main(void) {\n",
    );
    for (name, fields) in structs {
        program.push_str(&format!("  printf(\"{0} sizeof %zu\\n\", sizeof({0}));\n", name));
        program
            .push_str(&format!("  printf(\"{0} alignof %zu\\n\", (size_t)_Alignof({0}));\n", name));
        for f in fields {
            program
                .push_str(&format!("  printf(\"{0} {1} %zu\\n\", offsetof({0}, {1}));\n", name, f));
        }
    }
    program.push_str("  return 0;\n}\n");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("abi_layout");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("layout.c");
    let binary = dir.join("layout");
    std::fs::write(&source, program).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let built = Command::new(&cc)
        .arg("-std=c11")
        .arg("-I")
        .arg(include_dir())
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {:?}: {}", cc, e));
    assert!(
        built.status.success(),
        "the layout program did not compile:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&binary).output().expect("cannot run the layout program");
    assert!(ran.status.success());
    let mut m = BTreeMap::new();
    for line in String::from_utf8(ran.stdout).unwrap().lines() {
        let (key, value) = line.rsplit_once(' ').unwrap();
        m.insert(key.to_string(), value.parse().unwrap());
    }
    m
}

#[test]
fn every_struct_and_field_matches_the_c_compiler() {
    let text = strip_comments(&header_text());
    let structs = header_structs(&text);
    assert!(structs.len() >= 20, "found only {} structs in the header", structs.len());
    let c = c_layout(&structs);
    let rust = rust_layout();
    let mut problems = Vec::new();
    for (key, c_value) in &c {
        match rust.get(key) {
            None => {
                problems.push(format!("{} = {} in C, missing from the Rust mirror", key, c_value))
            }
            Some(r) if r != c_value => {
                problems.push(format!("{}: C {} but Rust {}", key, c_value, r))
            }
            Some(_) => {}
        }
    }
    for key in rust.keys().filter(|k| !c.contains_key(*k)) {
        problems.push(format!("{} is in the Rust mirror but not in the header", key));
    }
    assert!(
        problems.is_empty(),
        "the Rust ABI mirror differs from the header:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_constant_matches_the_header() {
    let c = header_constants(&strip_comments(&header_text()));
    assert!(c.len() >= 30, "found only {} constants in the header", c.len());
    let rust = rust_constants();
    let mut problems = Vec::new();
    for (name, value) in &c {
        match rust.get(name) {
            None => problems.push(format!(
                "{} = {:?} in the header, missing from the Rust mirror",
                name, value
            )),
            Some(r) if r != value => {
                problems.push(format!("{}: header {:?} but Rust {:?}", name, value, r))
            }
            Some(_) => {}
        }
    }
    for name in rust.keys().filter(|k| !c.contains_key(*k)) {
        problems.push(format!("{} is in the Rust mirror but not in the header", name));
    }
    assert!(
        problems.is_empty(),
        "the Rust constants differ from the header:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_header_reader_sees_function_slots_and_plain_fields() {
    let structs = header_structs(&strip_comments(
        "typedef struct ccm_x {\n  uint32_t struct_size;\n  const ccm_kv* const* ports;\n  \
         bool (*probe)(ccm_host_handle host,\n uint64_t id);\n} ccm_x;\ntypedef struct ccm_o ccm_o;\n",
    ));
    assert_eq!(
        structs,
        vec![("ccm_x".to_string(), vec!["struct_size".into(), "ports".into(), "probe".into()])]
    );
}
