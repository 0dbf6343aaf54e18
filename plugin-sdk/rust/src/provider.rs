//! The traits a provider implements: `Provider` (identity, create, optional reconfigure, and
//! which capabilities it offers) and one trait per capability.
//!
//! Threads: `create` runs on the host's main thread; capability methods run on host worker
//! threads, concurrently up to each capability's `max_concurrency` (hence `Send + Sync`);
//! `reconfigure` may run while capability calls are in flight, so state it changes needs
//! interior mutability (an `RwLock`, say).

use crate::host::Call;
use crate::status::{Result, Status};
use crate::types::{Existence, InstanceMetadata, LbStatus, Node, Power, Route, Service};

/// A cloud provider. Export it with `ccm_provider!(MyProvider)`.
pub trait Provider: Send + Sync + Sized + 'static {
    /// The provider's name, `[a-z0-9-]+`: the host loads `<plugin-dir>/<NAME>.so`.
    const NAME: &'static str;
    /// The plugin's own semver.
    const VERSION: &'static str;
    /// The providerID prefix it owns, e.g. "my-cloud://" (ABI 1.1; empty: not declared).
    const PROVIDER_ID_PREFIX: &'static str = "";
    /// The DNS subdomain under which it writes Service annotations (ABI 1.1; empty: none).
    const ANNOTATION_DOMAIN: &'static str = "";
    /// Its own metric prefix, `[a-z][a-z0-9]*` (ABI 1.1; empty: every metric under
    /// `ccm_provider_`).
    const METRIC_NAMESPACE: &'static str = "";
    /// Whether `reconfigure` is implemented (ABI 1.1). When false the host is told there is no
    /// reconfigure, and a changed config takes effect at the next restart.
    const RECONFIGURABLE: bool = false;

    /// Creates the provider from the bytes of `--cloud-config` (empty when none was given).
    /// Refuse bad input with `Status::invalid_argument` naming what is wrong and where.
    fn create(call: &Call, config: &[u8]) -> Result<Self>;

    /// Applies new config bytes without a restart (only called when `RECONFIGURABLE`). On
    /// error the provider must keep its old settings in full.
    fn reconfigure(&self, _call: &Call, _config: &[u8]) -> Result<()> {
        Err(Status::unimplemented("this provider cannot be reconfigured"))
    }

    /// `ccm.instances/1`, when offered.
    fn instances(&self) -> Option<&dyn Instances> {
        None
    }
    /// `ccm.instances.batch/1`, when offered.
    fn instances_batch(&self) -> Option<&dyn InstancesBatch> {
        None
    }
    /// `ccm.loadbalancer/1`, when offered.
    fn load_balancer(&self) -> Option<&dyn LoadBalancer> {
        None
    }
    /// `ccm.routes/1`, when offered.
    fn routes(&self) -> Option<&dyn Routes> {
        None
    }
}

/// `ccm.instances/1`: what the cloud knows about the machine behind a Node.
pub trait Instances: Send + Sync {
    /// How many calls may run at once (0 = no limit).
    fn max_concurrency(&self) -> u32 {
        0
    }
    /// Ask the host for `Node::object_json` (it costs the host memory).
    fn wants_object_json(&self) -> bool {
        false
    }
    /// Does the instance exist? `Existence::NotFound` only when the cloud positively says so.
    fn instance_exists(&self, call: &Call, node: &Node) -> Result<Existence>;
    /// Is it shut down? `Err(Status::unimplemented(..))` means "never shut down".
    fn instance_shutdown(&self, call: &Call, node: &Node) -> Result<Power>;
    /// Its metadata; `Ok(None)` means "not yet" (the node stays uninitialised), NOT_FOUND that
    /// the instance does not exist.
    fn instance_metadata(&self, call: &Call, node: &Node) -> Result<Option<InstanceMetadata>>;
}

/// `ccm.instances.batch/1`: metadata for many nodes in one call.
pub trait InstancesBatch: Send + Sync {
    fn max_concurrency(&self) -> u32 {
        0
    }
    fn wants_object_json(&self) -> bool {
        false
    }
    /// The most nodes per call (0 = no limit; the host splits bigger sets).
    fn max_batch_size(&self) -> u32 {
        0
    }
    /// One result per node, in the order of `nodes`. A node without a result (a shorter
    /// vector) reads as UNAVAILABLE for that node; `Err` fails every node.
    fn instance_metadata_batch(
        &self,
        call: &Call,
        nodes: &[Node],
    ) -> Result<Vec<Result<InstanceMetadata>>>;
}

/// `ccm.loadbalancer/1`: load balancers for Services of type LoadBalancer. Ensure, update and
/// delete must be idempotent: the host retries them.
pub trait LoadBalancer: Send + Sync {
    fn max_concurrency(&self) -> u32 {
        0
    }
    /// Ask the host for `Node::object_json` of the nodes passed in.
    fn wants_object_json(&self) -> bool {
        false
    }
    /// `Some(status)` while any part of the load balancer exists, `None` when nothing does.
    fn get_load_balancer(
        &self,
        call: &Call,
        cluster: &str,
        service: &Service,
    ) -> Result<Option<LbStatus>>;
    /// The cloud name of the Service's load balancer.
    fn get_load_balancer_name(
        &self,
        call: &Call,
        cluster: &str,
        service: &Service,
    ) -> Result<String>;
    /// Create or update it so the Service is served on `nodes`; its status. While the cloud is
    /// busy, return `Status::throttled` (or FAILED_PRECONDITION with a retry-after) rather
    /// than block for minutes.
    fn ensure_load_balancer(
        &self,
        call: &Call,
        cluster: &str,
        service: &Service,
        nodes: &[Node],
    ) -> Result<LbStatus>;
    /// Change only the backend hosts.
    fn update_load_balancer(
        &self,
        call: &Call,
        cluster: &str,
        service: &Service,
        nodes: &[Node],
    ) -> Result<()>;
    /// Delete everything created for the Service; `Ok` also when nothing existed.
    fn ensure_load_balancer_deleted(
        &self,
        call: &Call,
        cluster: &str,
        service: &Service,
    ) -> Result<()>;
}

/// `ccm.routes/1`: routes that send each node's pod CIDR to that node.
pub trait Routes: Send + Sync {
    fn max_concurrency(&self) -> u32 {
        0
    }
    /// Every route of the cluster.
    fn list_routes(&self, call: &Call, cluster: &str) -> Result<Vec<Route>>;
    /// Create `route` (its name is ignored); `name_hint` is the node's UID. ALREADY_EXISTS is
    /// taken as success.
    fn create_route(
        &self,
        call: &Call,
        cluster: &str,
        name_hint: &str,
        route: &Route,
    ) -> Result<()>;
    /// Delete `route` as `list_routes` returned it; NOT_FOUND is taken as success.
    fn delete_route(&self, call: &Call, cluster: &str, route: &Route) -> Result<()>;
}
