//! The napi layer: argument checking, type mapping and callbacks, nothing else.

mod args;
pub mod guards;
pub mod js;
pub mod lifecycle;
pub mod monitor;
#[cfg(unix)]
pub mod monitor_native;
pub mod monitor_types;
pub mod shell;
#[cfg(unix)]
pub mod shell_execute;
pub mod shell_types;
pub mod text;
