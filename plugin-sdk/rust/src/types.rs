//! The safe types a provider works with: inputs (`Node`, `Service`, `Route` as the host passes
//! them, copied into owned values) and outputs (`InstanceMetadata`, `LbStatus`, `Route`), plus
//! the explicit answers `Existence` and `Power`.

use std::collections::BTreeMap;

/// A node address type, as Kubernetes spells it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AddressType {
    Hostname,
    InternalIp,
    ExternalIp,
    InternalDns,
    ExternalDns,
    /// A type the SDK does not know, kept as given (the host refuses it in outputs).
    Other(String),
}

impl AddressType {
    pub fn as_str(&self) -> &str {
        match self {
            AddressType::Hostname => "Hostname",
            AddressType::InternalIp => "InternalIP",
            AddressType::ExternalIp => "ExternalIP",
            AddressType::InternalDns => "InternalDNS",
            AddressType::ExternalDns => "ExternalDNS",
            AddressType::Other(s) => s,
        }
    }

    pub fn parse(s: &str) -> AddressType {
        match s {
            "Hostname" => AddressType::Hostname,
            "InternalIP" => AddressType::InternalIp,
            "ExternalIP" => AddressType::ExternalIp,
            "InternalDNS" => AddressType::InternalDns,
            "ExternalDNS" => AddressType::ExternalDns,
            other => AddressType::Other(other.to_string()),
        }
    }
}

/// One node address (`status.addresses[]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeAddress {
    pub address_type: AddressType,
    pub address: String,
}

impl NodeAddress {
    pub fn new(address_type: AddressType, address: impl Into<String>) -> NodeAddress {
        NodeAddress { address_type, address: address.into() }
    }
}

/// `status.nodeInfo` of a Node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeInfo {
    pub machine_id: String,
    pub system_uuid: String,
    pub boot_id: String,
    pub kernel_version: String,
    pub os_image: String,
    pub container_runtime_version: String,
    pub kubelet_version: String,
    pub operating_system: String,
    pub architecture: String,
}

/// A Kubernetes Node as the host passes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub uid: String,
    /// `spec.providerID`; empty until the node is initialised.
    pub provider_id: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub addresses: Vec<NodeAddress>,
    pub info: NodeInfo,
    /// The whole Node as JSON; empty unless the capability asked for it
    /// (`wants_object_json`).
    pub object_json: String,
}

impl Node {
    /// A node with only a name, for tests.
    pub fn named(name: impl Into<String>) -> Node {
        Node { name: name.into(), ..Node::default() }
    }
}

/// One port of a Service (`spec.ports[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServicePort {
    pub name: String,
    /// "TCP", "UDP" or "SCTP".
    pub protocol: String,
    pub port: i32,
    /// 0 when not allocated.
    pub node_port: i32,
    /// A number or a name, as text.
    pub target_port: String,
    pub app_protocol: String,
}

/// A Kubernetes Service of type LoadBalancer as the host passes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Service {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// `spec.type`.
    pub service_type: String,
    pub ports: Vec<ServicePort>,
    /// `spec.loadBalancerIP` (deprecated field).
    pub load_balancer_ip: String,
    /// `spec.loadBalancerSourceRanges`.
    pub source_ranges: Vec<String>,
    /// "Cluster" or "Local".
    pub external_traffic_policy: String,
    /// 0 when unset.
    pub health_check_node_port: i32,
    /// "IPv4", "IPv6".
    pub ip_families: Vec<String>,
    pub load_balancer_class: String,
    /// "None" or "ClientIP".
    pub session_affinity: String,
    pub cluster_ip: String,
    /// `status.loadBalancer` as the Service has it now.
    pub current_status: LbStatus,
    /// The whole Service as JSON (always set by the host).
    pub object_json: String,
}

/// What the cloud knows about the machine behind a node (upstream InstanceMetadata).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceMetadata {
    /// e.g. "my-cloud://vm-0001"; may be empty only when the node already has one.
    pub provider_id: String,
    /// -> node.kubernetes.io/instance-type
    pub instance_type: String,
    /// -> topology.kubernetes.io/zone
    pub zone: String,
    /// -> topology.kubernetes.io/region
    pub region: String,
    /// In the order to publish.
    pub addresses: Vec<NodeAddress>,
    /// Extra node labels (the host drops those in the kubernetes.io / k8s.io domains).
    pub additional_labels: BTreeMap<String, String>,
}

/// One port of a load balancer ingress.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortStatus {
    pub port: i32,
    /// "TCP", "UDP", "SCTP".
    pub protocol: String,
    /// Empty, or a CamelCase reason.
    pub error: String,
}

/// One ingress point of a load balancer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LbIngress {
    pub ip: String,
    pub hostname: String,
    /// "", "VIP" or "Proxy".
    pub ip_mode: String,
    pub ports: Vec<PortStatus>,
}

impl LbIngress {
    /// An ingress with only an IP.
    pub fn ip(ip: impl Into<String>) -> LbIngress {
        LbIngress { ip: ip.into(), ..LbIngress::default() }
    }
}

/// A load balancer's status and (ABI 1.1) the Service annotations the provider wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LbStatus {
    pub ingress: Vec<LbIngress>,
    /// Annotations to set on the Service; every key must be inside the provider's
    /// `ANNOTATION_DOMAIN` ("<domain>/<name>" or "<sub>.<domain>/<name>"). Dropped, with a
    /// warning in the host's log, when the host speaks ABI 1.0.
    pub annotations: BTreeMap<String, String>,
    /// Annotation keys (same domain rule) to remove from the Service.
    pub removed_annotations: Vec<String>,
}

/// A route sending a node's pod CIDR to that node (upstream Route).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Route {
    /// The provider's own name for it (ignored on create).
    pub name: String,
    pub target_node: String,
    /// e.g. "10.244.3.0/24".
    pub destination_cidr: String,
    /// The route's target is gone.
    pub blackhole: bool,
    /// The target node's addresses, when the host knows them.
    pub target_node_addresses: Option<Vec<NodeAddress>>,
}

/// Does the instance behind a node exist? A tri-state: only `NotFound` can lead to the
/// Node's deletion, so answer it only when the cloud positively says the instance is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existence {
    Unknown,
    Exists,
    NotFound,
}

/// Is the instance shut down? Shut down is not "not found".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    Unknown,
    Running,
    Shutdown,
}
