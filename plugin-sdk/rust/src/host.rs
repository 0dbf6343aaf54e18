//! The host's services, wrapped: `Host` (logs, structured logs, metrics, secrets, clocks) and
//! `Call` (one call into the plugin: its ID, deadline, cancellation and error message).
//!
//! The host hands its service table over once, at negotiation; the SDK copies it into a
//! zeroed table of its own size (so a slot beyond an older host's `struct_size` reads as
//! `None`) and keeps it for the life of the process. Every method here may be called from any
//! thread.

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::abi;
use crate::convert::{kv_array, to_c};

/// A log line's level. `Error` and `Warning` always print, `Info` at the host's default
/// verbosity, `Debug` at `-v=4` and above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Error,
    Warning,
    Info,
    Debug,
}

impl LogLevel {
    fn raw(self) -> abi::ccm_log_level {
        match self {
            LogLevel::Error => abi::CCM_LOG_ERROR,
            LogLevel::Warning => abi::CCM_LOG_WARNING,
            LogLevel::Info => abi::CCM_LOG_INFO,
            LogLevel::Debug => abi::CCM_LOG_DEBUG,
        }
    }
}

/// A table with every slot empty: what `Host` uses before negotiation.
static NO_SERVICES: abi::ccm_host_services = abi::ccm_host_services {
    struct_size: 0,
    log: None,
    is_cancelled: None,
    now_monotonic_ns: None,
    now_unix_ns: None,
    set_error: None,
    metric: None,
    register_secret: None,
    emit_instance_metadata: None,
    emit_item_error: None,
    emit_lb_status: None,
    emit_route: None,
    emit_string: None,
    log_fields: None,
};

// Set once by negotiation (the entry point runs once, before anything else).
static SERVICES: AtomicPtr<abi::ccm_host_services> = AtomicPtr::new(std::ptr::null_mut());
static HANDLE: AtomicU64 = AtomicU64::new(0);
static MINOR: AtomicU32 = AtomicU32::new(0);

/// The host side of this plugin: cheap to copy, valid for the life of the process.
#[derive(Clone, Copy)]
pub struct Host {
    handle: abi::ccm_host_handle,
    services: &'static abi::ccm_host_services,
    minor: u32,
}

impl Host {
    /// The host this plugin negotiated with; before negotiation (in unit tests of provider
    /// code, say) a host whose services do nothing.
    pub fn current() -> Host {
        let ptr = SERVICES.load(Ordering::Acquire);
        // SAFETY: the pointer is either null or a table leaked by `install`, never freed.
        let services = unsafe { ptr.as_ref() }.unwrap_or(&NO_SERVICES);
        Host {
            handle: HANDLE.load(Ordering::Acquire),
            services,
            minor: MINOR.load(Ordering::Acquire),
        }
    }

    /// Records the negotiated host. `services` must be readable for its `struct_size` bytes.
    pub(crate) unsafe fn install(
        handle: abi::ccm_host_handle,
        services: *const abi::ccm_host_services,
        minor: u32,
    ) {
        let copy: abi::ccm_host_services = crate::convert::read_struct(services);
        HANDLE.store(handle, Ordering::Release);
        MINOR.store(minor, Ordering::Release);
        let leaked: &'static mut abi::ccm_host_services = Box::leak(Box::new(copy));
        let old = SERVICES.swap(leaked, Ordering::AcqRel);
        // A second negotiation (the host never does this) leaks the old table: a thread may
        // still hold a Host that points at it.
        let _ = old;
    }

    /// The ABI minor both sides speak (the lower of the host's and this crate's).
    pub fn abi_minor(&self) -> u32 {
        self.minor
    }

    pub(crate) fn handle(&self) -> abi::ccm_host_handle {
        self.handle
    }

    pub(crate) fn services(&self) -> &'static abi::ccm_host_services {
        self.services
    }

    /// Writes one log line through the host's logger (never to stdout or stderr).
    pub fn log(&self, level: LogLevel, message: &str) {
        if let Some(log) = self.services.log {
            // SAFETY: the slot is the host's; the string is borrowed for the call.
            unsafe { log(self.handle, level.raw(), to_c(message)) }
        }
    }

    pub fn error(&self, message: &str) {
        self.log(LogLevel::Error, message);
    }
    pub fn warning(&self, message: &str) {
        self.log(LogLevel::Warning, message);
    }
    pub fn info(&self, message: &str) {
        self.log(LogLevel::Info, message);
    }
    pub fn debug(&self, message: &str) {
        self.log(LogLevel::Debug, message);
    }

    /// A log line with structured fields. On a host that speaks ABI 1.0 (no `log_fields`),
    /// the fields are appended to the message as `key="value"` instead.
    pub fn log_fields(&self, level: LogLevel, message: &str, fields: &[(&str, &str)]) {
        match self.services.log_fields {
            Some(log_fields) if self.minor >= 1 => {
                let kvs = kv_array(fields.iter().map(|(k, v)| (*k, *v)));
                // SAFETY: the slot exists (minor >= 1 and inside struct_size); all borrowed.
                unsafe {
                    log_fields(self.handle, level.raw(), to_c(message), kvs.as_ptr(), kvs.len())
                }
            }
            _ => {
                let mut line = message.to_string();
                for (k, v) in fields {
                    line.push_str(&format!(" {}={:?}", k, v));
                }
                self.log(level, &line);
            }
        }
    }

    fn metric(
        &self,
        kind: abi::ccm_metric_kind,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        if let Some(metric) = self.services.metric {
            let kvs = kv_array(labels.iter().map(|(k, v)| (*k, *v)));
            // SAFETY: the slot is the host's; everything is borrowed for the call.
            unsafe {
                metric(self.handle, kind, to_c(name), to_c(help), kvs.as_ptr(), kvs.len(), value)
            }
        }
    }

    /// Adds `value` to a counter, exposed as `ccm_provider_<name>` (or as `<name>` when it
    /// starts with the provider's `METRIC_NAMESPACE` and an underscore).
    pub fn counter(&self, name: &str, help: &str, labels: &[(&str, &str)], value: f64) {
        self.metric(abi::CCM_METRIC_COUNTER, name, help, labels, value);
    }
    /// Sets a gauge.
    pub fn gauge(&self, name: &str, help: &str, labels: &[(&str, &str)], value: f64) {
        self.metric(abi::CCM_METRIC_GAUGE, name, help, labels, value);
    }
    /// Observes a duration in a histogram (host-chosen buckets, seconds).
    pub fn histogram(&self, name: &str, help: &str, labels: &[(&str, &str)], value: Duration) {
        self.metric(abi::CCM_METRIC_HISTOGRAM, name, help, labels, value.as_secs_f64());
    }

    /// Declares a secret: the host redacts it from every log line from now on. Values shorter
    /// than 4 bytes are ignored by the host.
    pub fn register_secret(&self, value: &str) {
        if let Some(register) = self.services.register_secret {
            // SAFETY: the slot is the host's; the value is borrowed for the call.
            unsafe { register(self.handle, to_c(value)) }
        }
    }

    /// The host's monotonic clock (deadlines are on it), in nanoseconds.
    pub fn now_monotonic_ns(&self) -> i64 {
        match self.services.now_monotonic_ns {
            // SAFETY: the slot is the host's.
            Some(now) => unsafe { now(self.handle) },
            None => 0,
        }
    }

    /// The host's wall clock, in nanoseconds since the Unix epoch.
    pub fn now_unix_ns(&self) -> i64 {
        match self.services.now_unix_ns {
            // SAFETY: the slot is the host's.
            Some(now) => unsafe { now(self.handle) },
            None => 0,
        }
    }
}

/// One call into the plugin. Outputs are emitted by the SDK from the method's return value;
/// the call itself tells the method its deadline and whether it should stop.
pub struct Call {
    host: Host,
    id: u64,
    deadline_ns: i64,
}

impl Call {
    /// Reads the host's `ccm_call` (NULL reads as a call without ID or deadline).
    pub(crate) unsafe fn from_raw(call: *const abi::ccm_call) -> Call {
        let host = Host::current();
        if call.is_null() {
            return Call { host, id: 0, deadline_ns: 0 };
        }
        let raw: abi::ccm_call = crate::convert::read_struct(call);
        Call { host, id: raw.call_id, deadline_ns: raw.deadline_monotonic_ns }
    }

    /// A call with this ID and deadline (0 = none), for unit tests of provider code.
    pub fn for_test(id: u64, deadline_monotonic_ns: i64) -> Call {
        Call { host: Host::current(), id, deadline_ns: deadline_monotonic_ns }
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The call's ID, as the host's services know it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The instant on the host's monotonic clock by which the call must return; `None` when
    /// the call has no deadline.
    pub fn deadline_monotonic_ns(&self) -> Option<i64> {
        if self.deadline_ns == 0 {
            None
        } else {
            Some(self.deadline_ns)
        }
    }

    /// Time left before the deadline (zero once it has passed); `None` without a deadline.
    pub fn remaining(&self) -> Option<Duration> {
        let deadline = self.deadline_monotonic_ns()?;
        let left = deadline.saturating_sub(self.host.now_monotonic_ns());
        Some(Duration::from_nanos(u64::try_from(left).unwrap_or(0)))
    }

    /// True once the call should stop (deadline passed, shutdown, lost leadership). Poll it
    /// between cloud requests.
    pub fn is_cancelled(&self) -> bool {
        match self.host.services.is_cancelled {
            // SAFETY: the slot is the host's.
            Some(is_cancelled) => unsafe { is_cancelled(self.host.handle, self.id) },
            None => false,
        }
    }

    /// `Err(CANCELLED)` (or `DEADLINE_EXCEEDED` when the deadline has passed) once the call
    /// should stop, for use with `?` between cloud requests.
    pub fn check(&self) -> crate::Result<()> {
        if !self.is_cancelled() {
            return Ok(());
        }
        if self.remaining() == Some(Duration::ZERO) {
            Err(crate::Status::deadline_exceeded("the call's deadline passed"))
        } else {
            Err(crate::Status::cancelled("the host cancelled the call"))
        }
    }

    /// Attaches a message (and a retry-after) to the call's error. The SDK does this for the
    /// `Status` a method returns; returns false when the host no longer knows the call.
    pub fn set_error(&self, message: &str, retry_after: Option<Duration>) -> bool {
        let ms = retry_after.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        match self.host.services.set_error {
            // SAFETY: the slot is the host's; the message is borrowed for the call.
            Some(set_error) => unsafe { set_error(self.host.handle, self.id, to_c(message), ms) },
            None => false,
        }
    }
}
