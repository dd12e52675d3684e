//! The napi layer: argument checking, type mapping and callbacks, nothing else.

// Native spawning (`start()`, `executeBackground()`) is compiled for Unix
// only until Windows support lands (issue 11); the helpers it shares with the
// rest of the binding would otherwise be reported as unused on Windows.
#![cfg_attr(not(unix), allow(dead_code))]

mod args;
pub mod guards;
pub mod js;
pub mod lifecycle;
pub mod monitor;
#[cfg(unix)]
pub mod monitor_native;
pub mod monitor_terminal;
pub mod monitor_types;
mod pending;
pub mod read_output;
pub mod shell;
#[cfg(unix)]
pub mod shell_execute;
pub mod shell_types;
pub mod task_types;
mod terminal;
pub mod text;
mod wait;
