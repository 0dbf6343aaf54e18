//! # ccm-provider: write ccm cloud-provider plugins in Rust
//!
//! A ccm provider is a shared library behind the C ABI of `ccm/provider_abi.h` (ABI 1.1).
//! This crate mirrors that header (`abi`) and puts safe types on top: implement [`Provider`]
//! and the capability traits you offer ([`Instances`], [`InstancesBatch`], [`LoadBalancer`],
//! [`Routes`]), then export the plugin with [`ccm_provider!`]:
//!
//! ```
//! use ccm_provider::{ccm_provider, Call, Provider, Result};
//!
//! struct MyCloud;
//! impl Provider for MyCloud {
//!     const NAME: &'static str = "my-cloud";
//!     const VERSION: &'static str = "0.1.0";
//!     fn create(_call: &Call, _config: &[u8]) -> Result<Self> { Ok(MyCloud) }
//! }
//! ccm_provider!(MyCloud);
//! ```
//!
//! Build it as a `cdylib` and install `lib<crate>.so` as `<plugin-dir>/<NAME>.so`.
//!
//! What the SDK does for you: negotiation (refuses another ABI major with a message naming
//! both versions; answers minor = min(host's, 1)); `struct_size` handling in both directions;
//! copying inputs into owned values and laying outputs out for the host's emit services;
//! turning a returned [`Status`] into the ABI code plus `set_error` with message and
//! retry-after; and the panic barrier: every entry point runs under `catch_unwind`, a panic is
//! answered as INTERNAL with its message, and a panic hook writes the report to the host's log
//! instead of stderr. Profiles must keep `panic = "unwind"` (the default).

pub mod abi;
mod boundary;
mod convert;
#[doc(hidden)]
pub mod export;
mod host;
mod provider;
mod status;
mod types;

pub use host::{Call, Host, LogLevel};
pub use provider::{Instances, InstancesBatch, LoadBalancer, Provider, Routes};
pub use status::{Code, Result, Status};
pub use types::{
    AddressType, Existence, InstanceMetadata, LbIngress, LbStatus, Node, NodeAddress, NodeInfo,
    PortStatus, Power, Route, Service, ServicePort,
};

/// Exports `ccm_provider_entry_v1` for a [`Provider`] type: the one symbol a plugin exports.
/// Use it once, in the `cdylib` crate.
#[macro_export]
macro_rules! ccm_provider {
    ($provider:ty) => {
        /// The plugin's entry point (ccm plugin ABI, major 1).
        ///
        /// # Safety
        /// Called by the ccm host with the pointers `ccm/provider_abi.h` describes.
        #[no_mangle]
        pub unsafe extern "C" fn ccm_provider_entry_v1(
            info: *const $crate::abi::ccm_host_info,
            call: *const $crate::abi::ccm_call,
            out: *mut *const $crate::abi::ccm_plugin,
        ) -> $crate::abi::ccm_status {
            static TABLES: [$crate::export::PluginTable; $crate::export::MINORS] =
                $crate::export::plugin_tables::<$provider>();
            $crate::export::negotiate::<$provider>(info, call, out, &TABLES)
        }
    };
}
