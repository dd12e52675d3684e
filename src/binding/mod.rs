//! The napi layer: argument checking, type mapping and callbacks, nothing else.

// Native spawning (`start()`, `executeBackground()`) is compiled for Unix
// and Windows; elsewhere the helpers it shares with the rest of the binding
// would be reported as unused.
#![cfg_attr(not(any(unix, windows)), allow(dead_code))]

mod anchor;
mod args;
mod environment_tasks;
pub mod guards;
pub mod js;
pub mod layer;
pub mod lifecycle;
pub mod monitor;
#[cfg(any(unix, windows))]
pub mod monitor_native;
mod monitor_options;
#[cfg(any(unix, windows))]
pub mod monitor_persist;
pub mod monitor_terminal;
#[cfg(any(unix, windows))]
pub mod persist;
pub mod read_output;
mod registry;
pub mod shell;
#[cfg(any(unix, windows))]
pub mod shell_execute;
mod side;
mod terminal;
pub mod text;
mod wait;
