//! The panic barrier: nothing unwinds across the C ABI.
//!
//! Every `extern "C"` entry point of the SDK runs its body under `guard`, which catches a
//! panic and answers it as `CCM_STATUS_INTERNAL` with the panic's message passed to the host
//! with `set_error`. A panic hook, installed at negotiation, writes the panic (message,
//! location, thread) to the host's log instead of stderr.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use crate::abi;
use crate::host::{Call, Host, LogLevel};

/// The text of a panic payload (`panic!("...")` carries a `&str` or a `String`).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_string()
    }
}

/// Runs `body`; a panic in it becomes `INTERNAL`, with "panic in <what>: <message>" set as
/// the call's error when there is a call.
pub(crate) fn guard<F>(call: Option<&Call>, what: &str, body: F) -> abi::ccm_status
where
    F: FnOnce() -> abi::ccm_status,
{
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(status) => status,
        Err(payload) => {
            let message = format!("panic in {}: {}", what, panic_message(&*payload));
            // Dropping a payload runs its destructor, which could itself panic.
            let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
            if let Some(call) = call {
                call.set_error(&message, None);
            }
            abi::CCM_STATUS_INTERNAL
        }
    }
}

/// Like `guard` for entry points without a status (destroy) or with another result type.
pub(crate) fn guard_value<T, F>(what: &str, fallback: T, body: F) -> T
where
    F: FnOnce() -> T,
{
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let message = format!("panic in {}: {}", what, panic_message(&*payload));
            let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
            Host::current().error(&message);
            fallback
        }
    }
}

static HOOK: Once = Once::new();

/// Routes panic reports to the host's log (once per process). The hook replaces Rust's
/// default one, which writes to stderr; `guard` still turns the panic into INTERNAL.
pub(crate) fn install_panic_hook() {
    HOOK.call_once(|| {
        panic::set_hook(Box::new(|info| {
            let message = panic_message(info.payload());
            let location =
                info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
            let thread = std::thread::current();
            // The host's threads are not Rust's: their names are only known to the kernel.
            let thread_name = match thread.name() {
                Some(name) => name.to_string(),
                None => std::fs::read_to_string("/proc/thread-self/comm")
                    .map(|s| s.trim_end().to_string())
                    .unwrap_or_else(|_| "unnamed".to_string()),
            };
            Host::current().log_fields(
                LogLevel::Error,
                &format!("provider panicked: {}", message),
                &[("location", location.as_str()), ("thread", thread_name.as_str())],
            );
        }));
    });
}
