//! The keeper's life (docs/persistence.md "The keeper"): the process that
//! runs one persisted task for as long as its lease holds. The host starts it
//! with `core::persist::launch_keeper`; the keeper executable (`src/keeper/`)
//! runs [`keeper_main`].
//!
//! It reads its `KeeperConfig` from stdin, spawns the task with the standard
//! containment (`core::process::spawn`: session, group, tag, cgroup and the
//! keeper's own watchdog, so the task dies with its keeper however the keeper
//! dies), writes `<id>.task.json`, answers the handshake, and then writes the
//! output (monitors: the raw `<id>.log`; shells: the normal output file
//! through `OutputWriter`) until the task ends, is cancelled through
//! `<id>.cancel`, its lease expires, or the keeper is told to stop by
//! SIGTERM, SIGINT or SIGHUP (Unix). Its last act is `<id>.end.json`.
//!
//! It sits above `monitor/` and `shell/` (it writes a shell's output file
//! with the shell's own writer); nothing in the core uses it.

mod pace;
mod run;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as platform;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as platform;

pub use run::keeper_main;
