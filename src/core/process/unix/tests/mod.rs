//! The Unix process layer on real processes: one file per topic.

mod darwin;
mod host;
mod kill;
#[cfg(target_os = "linux")]
mod limits;
mod pty;
mod spawn;
mod tree;
mod watchdog;
