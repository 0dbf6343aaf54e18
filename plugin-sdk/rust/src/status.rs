//! Errors as values: `Code` is the ABI's closed status set, `Status` a failed call's code,
//! message and optional retry-after, and `Result<T>` what every provider method returns.

use std::fmt;
use std::time::Duration;

use crate::abi;

/// The ABI's status codes (`ccm_status`), numbered as in the header. What the host does with
/// each is in docs/writing-a-provider.md ("Status codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Code {
    Ok = abi::CCM_STATUS_OK,
    Cancelled = abi::CCM_STATUS_CANCELLED,
    InvalidArgument = abi::CCM_STATUS_INVALID_ARGUMENT,
    DeadlineExceeded = abi::CCM_STATUS_DEADLINE_EXCEEDED,
    NotFound = abi::CCM_STATUS_NOT_FOUND,
    AlreadyExists = abi::CCM_STATUS_ALREADY_EXISTS,
    PermissionDenied = abi::CCM_STATUS_PERMISSION_DENIED,
    ResourceExhausted = abi::CCM_STATUS_RESOURCE_EXHAUSTED,
    FailedPrecondition = abi::CCM_STATUS_FAILED_PRECONDITION,
    Aborted = abi::CCM_STATUS_ABORTED,
    Unimplemented = abi::CCM_STATUS_UNIMPLEMENTED,
    Internal = abi::CCM_STATUS_INTERNAL,
    Unavailable = abi::CCM_STATUS_UNAVAILABLE,
    Unauthenticated = abi::CCM_STATUS_UNAUTHENTICATED,
    ImplementedElsewhere = abi::CCM_STATUS_IMPLEMENTED_ELSEWHERE,
}

impl Code {
    /// Every code, in numeric order.
    pub const ALL: [Code; 15] = [
        Code::Ok,
        Code::Cancelled,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::Unauthenticated,
        Code::ImplementedElsewhere,
    ];

    /// The code for a raw `ccm_status`; a number outside the set reads as `Internal`, as the
    /// host reads it.
    pub fn from_raw(raw: abi::ccm_status) -> Code {
        Code::ALL.iter().copied().find(|c| c.raw() == raw).unwrap_or(Code::Internal)
    }

    /// The raw `ccm_status`.
    pub fn raw(self) -> abi::ccm_status {
        self as abi::ccm_status
    }

    /// The header's name without its prefix, e.g. "NOT_FOUND".
    pub fn name(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::Unauthenticated => "UNAUTHENTICATED",
            Code::ImplementedElsewhere => "IMPLEMENTED_ELSEWHERE",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: its code, the message the host logs (and puts in events), and for
/// throttling or a busy cloud how long the host should wait before retrying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    code: Code,
    message: String,
    retry_after: Option<Duration>,
}

/// What every provider method returns.
pub type Result<T> = std::result::Result<T, Status>;

impl Status {
    /// A status with this code and message. `Code::Ok` is not an error: the SDK answers such
    /// a status as `INTERNAL` and says so in the message.
    pub fn new(code: Code, message: impl Into<String>) -> Status {
        Status { code, message: message.into(), retry_after: None }
    }

    /// Adds a retry-after (honoured for RESOURCE_EXHAUSTED, FAILED_PRECONDITION and
    /// UNAVAILABLE; the host caps it at one hour).
    pub fn with_retry_after(mut self, retry_after: Duration) -> Status {
        self.retry_after = Some(retry_after);
        self
    }

    pub fn cancelled(message: impl Into<String>) -> Status {
        Status::new(Code::Cancelled, message)
    }
    pub fn invalid_argument(message: impl Into<String>) -> Status {
        Status::new(Code::InvalidArgument, message)
    }
    pub fn deadline_exceeded(message: impl Into<String>) -> Status {
        Status::new(Code::DeadlineExceeded, message)
    }
    pub fn not_found(message: impl Into<String>) -> Status {
        Status::new(Code::NotFound, message)
    }
    pub fn already_exists(message: impl Into<String>) -> Status {
        Status::new(Code::AlreadyExists, message)
    }
    pub fn permission_denied(message: impl Into<String>) -> Status {
        Status::new(Code::PermissionDenied, message)
    }
    /// Throttled or out of quota; the host waits `retry_after` before the next try.
    pub fn throttled(message: impl Into<String>, retry_after: Duration) -> Status {
        Status::new(Code::ResourceExhausted, message).with_retry_after(retry_after)
    }
    pub fn resource_exhausted(message: impl Into<String>) -> Status {
        Status::new(Code::ResourceExhausted, message)
    }
    pub fn failed_precondition(message: impl Into<String>) -> Status {
        Status::new(Code::FailedPrecondition, message)
    }
    pub fn aborted(message: impl Into<String>) -> Status {
        Status::new(Code::Aborted, message)
    }
    pub fn unimplemented(message: impl Into<String>) -> Status {
        Status::new(Code::Unimplemented, message)
    }
    pub fn internal(message: impl Into<String>) -> Status {
        Status::new(Code::Internal, message)
    }
    pub fn unavailable(message: impl Into<String>) -> Status {
        Status::new(Code::Unavailable, message)
    }
    pub fn unauthenticated(message: impl Into<String>) -> Status {
        Status::new(Code::Unauthenticated, message)
    }
    /// Load balancers only: another controller owns this Service's load balancer.
    pub fn implemented_elsewhere(message: impl Into<String>) -> Status {
        Status::new(Code::ImplementedElsewhere, message)
    }

    pub fn code(&self) -> Code {
        self.code
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The raw code the SDK returns to the host: `Ok` used as an error becomes `Internal`.
    pub(crate) fn raw_for_host(&self) -> abi::ccm_status {
        if self.code == Code::Ok {
            Code::Internal.raw()
        } else {
            self.code.raw()
        }
    }

    /// The message the SDK passes to the host.
    pub(crate) fn message_for_host(&self) -> String {
        if self.code == Code::Ok {
            format!("provider returned an error with code OK: {}", self.message)
        } else {
            self.message.clone()
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Status {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_reads_as_internal() {
        for code in Code::ALL {
            assert_eq!(Code::from_raw(code.raw()), code);
        }
        assert_eq!(Code::from_raw(2), Code::Internal);
        assert_eq!(Code::from_raw(-1), Code::Internal);
        assert_eq!(Code::from_raw(65), Code::Internal);
    }

    #[test]
    fn ok_as_an_error_is_answered_as_internal() {
        let s = Status::new(Code::Ok, "oops");
        assert_eq!(s.raw_for_host(), abi::CCM_STATUS_INTERNAL);
        assert!(s.message_for_host().contains("code OK: oops"));
    }

    #[test]
    fn throttled_carries_its_retry_after_in_milliseconds() {
        let s = Status::throttled("busy", Duration::from_secs(30));
        assert_eq!(s.code(), Code::ResourceExhausted);
        assert_eq!(s.retry_after(), Some(Duration::from_secs(30)));
        assert_eq!(Status::unavailable("down").retry_after(), None);
        assert_eq!(s.to_string(), "RESOURCE_EXHAUSTED: busy");
    }
}
