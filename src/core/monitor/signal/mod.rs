//! Signal per token (API.md §6.7): batch windows, the importance lane and digests of dropped
//! lines, as pure pieces the native pipeline drives with its own clock.
//!
//! * [`config`]: the validated options ([`SignalConfig`]).

pub mod config;

pub use config::{SignalConfig, SignalConfigError, SignalOptions};
