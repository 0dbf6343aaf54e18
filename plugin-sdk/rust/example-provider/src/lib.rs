//! rust-example: a complete ccm provider in Rust, on the ccm-provider crate.
//!
//! It knows a fixed set of machines, read from its --cloud-config in a line format:
//!
//! ```text
//! # comment
//! region <name>                                   (optional; default "example-region")
//! <node-name> <zone> <instance-type> <internal-ip> [running|shutdown]
//! panic <node-name>                                (instance_metadata for it panics)
//! ```
//!
//! It offers `ccm.instances/1` (existence, shutdown, metadata) and `ccm.routes/1` (routes kept
//! in memory), and can be reconfigured without a restart. `panic` lines exist to show (and
//! test) that a panic becomes an INTERNAL error with its message, never a crash of the host.

use std::collections::BTreeMap;
use std::sync::{Mutex, RwLock};

use ccm_provider::{
    ccm_provider, AddressType, Call, Existence, InstanceMetadata, Instances, Node, NodeAddress,
    Power, Provider, Result, Route, Routes, Status,
};

const PROVIDER_ID_PREFIX: &str = "rust-example://";

#[derive(Debug, Clone, PartialEq, Eq)]
struct Machine {
    zone: String,
    instance_type: String,
    ip: String,
    shutdown: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Config {
    region: String,
    machines: BTreeMap<String, Machine>,
    panic_on: Vec<String>,
}

/// Parses the config; an error names the line and what is wrong with it.
fn parse(config: &[u8]) -> Result<Config> {
    let text = std::str::from_utf8(config).map_err(|e| {
        Status::invalid_argument(format!("the config is not UTF-8 (byte {})", e.valid_up_to()))
    })?;
    let mut out = Config { region: "example-region".to_string(), ..Config::default() };
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let words: Vec<&str> = line.split_whitespace().collect();
        let bad = |what: &str| {
            Status::invalid_argument(format!("line {}: {}: \"{}\"", line_no, what, line))
        };
        match words.as_slice() {
            [] => {}
            [first, ..] if first.starts_with('#') => {}
            ["region", name] => out.region = (*name).to_string(),
            ["region", ..] => return Err(bad("expected \"region <name>\"")),
            ["panic", node] => out.panic_on.push((*node).to_string()),
            ["panic", ..] => return Err(bad("expected \"panic <node-name>\"")),
            [name, zone, instance_type, ip, rest @ ..] if rest.len() <= 1 => {
                let shutdown = match rest.first() {
                    None | Some(&"running") => false,
                    Some(&"shutdown") => true,
                    Some(_) => return Err(bad("the state must be \"running\" or \"shutdown\"")),
                };
                if ip.parse::<std::net::IpAddr>().is_err() {
                    return Err(bad(&format!("\"{}\" is not an IP address", ip)));
                }
                let machine = Machine {
                    zone: (*zone).to_string(),
                    instance_type: (*instance_type).to_string(),
                    ip: (*ip).to_string(),
                    shutdown,
                };
                if out.machines.insert((*name).to_string(), machine).is_some() {
                    return Err(bad(&format!("machine \"{}\" is listed twice", name)));
                }
            }
            _ => return Err(bad(
                "expected \"<node-name> <zone> <instance-type> <internal-ip> [running|shutdown]\"",
            )),
        }
    }
    Ok(out)
}

pub struct RustExample {
    config: RwLock<Config>,
    routes: Mutex<BTreeMap<String, Route>>,
}

impl RustExample {
    fn config(&self) -> Config {
        // A poisoned lock only means another call panicked while reading; the data is intact.
        self.config.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The machine behind a node: by providerID first, else by node name.
    fn find(&self, node: &Node) -> Option<(String, Machine)> {
        let name = node.provider_id.strip_prefix(PROVIDER_ID_PREFIX).unwrap_or(&node.name);
        self.config().machines.get(name).map(|m| (name.to_string(), m.clone()))
    }
}

impl Provider for RustExample {
    const NAME: &'static str = "rust-example";
    const VERSION: &'static str = "0.1.0";
    const PROVIDER_ID_PREFIX: &'static str = PROVIDER_ID_PREFIX;
    const RECONFIGURABLE: bool = true;

    fn create(call: &Call, config: &[u8]) -> Result<Self> {
        let config = parse(config)?;
        let machines = config.machines.len().to_string();
        call.host().log_fields(
            ccm_provider::LogLevel::Info,
            "rust-example provider ready",
            &[("machines", machines.as_str()), ("region", config.region.as_str())],
        );
        Ok(RustExample { config: RwLock::new(config), routes: Mutex::new(BTreeMap::new()) })
    }

    fn reconfigure(&self, call: &Call, config: &[u8]) -> Result<()> {
        let config = parse(config)?;
        call.host()
            .info(&format!("rust-example reconfigured with {} machines", config.machines.len()));
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
        Ok(())
    }

    fn instances(&self) -> Option<&dyn Instances> {
        Some(self)
    }

    fn routes(&self) -> Option<&dyn Routes> {
        Some(self)
    }
}

impl Instances for RustExample {
    fn instance_exists(&self, _call: &Call, node: &Node) -> Result<Existence> {
        // The machine list is authoritative, so "not listed" is a positive NOT_FOUND.
        Ok(if self.find(node).is_some() { Existence::Exists } else { Existence::NotFound })
    }

    fn instance_shutdown(&self, _call: &Call, node: &Node) -> Result<Power> {
        match self.find(node) {
            Some((_, m)) => Ok(if m.shutdown { Power::Shutdown } else { Power::Running }),
            None => Err(Status::not_found(format!("no machine for node {}", node.name))),
        }
    }

    fn instance_metadata(&self, call: &Call, node: &Node) -> Result<Option<InstanceMetadata>> {
        if self.config().panic_on.contains(&node.name) {
            panic!("rust-example was told to panic for node {}", node.name);
        }
        call.host().counter(
            "rust_example_metadata_calls_total",
            "Instance metadata calls answered by the rust-example provider.",
            &[],
            1.0,
        );
        let (name, m) = self
            .find(node)
            .ok_or_else(|| Status::not_found(format!("no machine for node {}", node.name)))?;
        Ok(Some(InstanceMetadata {
            provider_id: format!("{}{}", PROVIDER_ID_PREFIX, name),
            instance_type: m.instance_type,
            zone: m.zone,
            region: self.config().region,
            addresses: vec![
                NodeAddress::new(AddressType::InternalIp, m.ip),
                NodeAddress::new(AddressType::Hostname, name),
            ],
            additional_labels: BTreeMap::new(),
        }))
    }
}

impl Routes for RustExample {
    fn list_routes(&self, _call: &Call, _cluster: &str) -> Result<Vec<Route>> {
        Ok(self.routes.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect())
    }

    fn create_route(
        &self,
        _call: &Call,
        _cluster: &str,
        name_hint: &str,
        route: &Route,
    ) -> Result<()> {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        if routes.contains_key(&route.destination_cidr) {
            return Err(Status::already_exists(format!(
                "a route for {} exists",
                route.destination_cidr
            )));
        }
        let mut stored = route.clone();
        stored.name = format!("{}-{}", name_hint, route.destination_cidr.replace('/', "-"));
        routes.insert(route.destination_cidr.clone(), stored);
        Ok(())
    }

    fn delete_route(&self, _call: &Call, _cluster: &str, route: &Route) -> Result<()> {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        match routes.remove(&route.destination_cidr) {
            Some(_) => Ok(()),
            None => Err(Status::not_found(format!("no route for {}", route.destination_cidr))),
        }
    }
}

ccm_provider!(RustExample);

#[cfg(test)]
mod tests {
    use super::*;
    use ccm_provider::Code;

    #[test]
    fn parses_machines_region_and_panic_lines() {
        let c = parse(b"# machines\nregion r1\nnode-a z1 small 10.0.0.1\nnode-b z2 big 10.0.0.2 shutdown\npanic node-c\n").unwrap();
        assert_eq!(c.region, "r1");
        assert_eq!(c.machines.len(), 2);
        assert!(c.machines["node-b"].shutdown);
        assert_eq!(c.panic_on, vec!["node-c".to_string()]);
    }

    #[test]
    fn a_bad_line_is_refused_with_its_number() {
        let e = parse(b"node-a z1 small 10.0.0.1\nnode-b z2 big not-an-ip\n").unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(
            e.message().starts_with("line 2: \"not-an-ip\" is not an IP address"),
            "{}",
            e.message()
        );
        let e = parse(b"node-a z1 small 10.0.0.1 sleeping\n").unwrap_err();
        assert!(e.message().contains("line 1: the state must be"), "{}", e.message());
        let e = parse(b"node-a z1 small 10.0.0.1\nnode-a z1 small 10.0.0.2\n").unwrap_err();
        assert!(e.message().contains("listed twice"), "{}", e.message());
    }

    #[test]
    fn metadata_by_provider_id_and_by_name() {
        let call = Call::for_test(1, 0);
        let p = RustExample::create(&call, b"node-a z1 small 10.0.0.1\n").unwrap();
        let md = p.instance_metadata(&call, &Node::named("node-a")).unwrap().unwrap();
        assert_eq!(md.provider_id, "rust-example://node-a");
        assert_eq!(md.zone, "z1");
        let mut renamed = Node::named("other-name");
        renamed.provider_id = "rust-example://node-a".to_string();
        assert_eq!(p.instance_exists(&call, &renamed).unwrap(), Existence::Exists);
        assert_eq!(p.instance_exists(&call, &Node::named("node-z")).unwrap(), Existence::NotFound);
        assert_eq!(
            p.instance_metadata(&call, &Node::named("node-z")).unwrap_err().code(),
            Code::NotFound
        );
    }

    #[test]
    fn a_failed_reconfigure_keeps_the_old_settings() {
        let call = Call::for_test(1, 0);
        let p = RustExample::create(&call, b"node-a z1 small 10.0.0.1\n").unwrap();
        assert!(p.reconfigure(&call, b"broken line\n").is_err());
        assert_eq!(p.instance_exists(&call, &Node::named("node-a")).unwrap(), Existence::Exists);
        p.reconfigure(&call, b"node-b z1 small 10.0.0.2\n").unwrap();
        assert_eq!(p.instance_exists(&call, &Node::named("node-a")).unwrap(), Existence::NotFound);
    }

    #[test]
    fn routes_are_kept_in_memory() {
        let call = Call::for_test(1, 0);
        let p = RustExample::create(&call, b"").unwrap();
        let route = Route {
            target_node: "node-a".into(),
            destination_cidr: "10.244.1.0/24".into(),
            ..Route::default()
        };
        p.create_route(&call, "c", "uid-1", &route).unwrap();
        assert_eq!(
            p.create_route(&call, "c", "uid-1", &route).unwrap_err().code(),
            Code::AlreadyExists
        );
        let listed = p.list_routes(&call, "c").unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "uid-1-10.244.1.0-24");
        p.delete_route(&call, "c", &listed[0]).unwrap();
        assert_eq!(p.delete_route(&call, "c", &listed[0]).unwrap_err().code(), Code::NotFound);
    }
}
