//! The background-shell tests, by topic: the capped output writer, the registry, the runner with
//! real processes (Linux), and Windows' owner-only files.

mod hub;
mod output;
mod registry;
#[cfg(target_os = "linux")]
mod runner;
#[cfg(windows)]
mod windows;
