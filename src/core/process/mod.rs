//! The process layer (CONTRACT.md §1.5, §2.10, §2.15 items 6 and 12, §4 items
//! 4–6, 21 and 22): shell selection, the child environment, spawning into a
//! new session, tree kills, and the guarantees that every child dies with its
//! task and with the host process, however the host ends.
//!
//! Unix only for now; on Windows `spawn` returns an `Unsupported` error until
//! Job Objects exist. Tree tracking reads the process table through
//! `proc_table` (procfs on Linux, libproc and `sysctl` on macOS).

#[cfg(unix)]
pub mod cgroup;
mod env;
mod exit;
mod group;
mod priority;
mod shell;
mod spawn;
mod tag;

#[cfg(unix)]
mod kill;
#[cfg(unix)]
mod pre_exec;
#[cfg(target_os = "macos")]
mod proc_darwin;
#[cfg(any(target_os = "macos", all(test, unix)))]
mod proc_darwin_parse;
#[cfg(unix)]
pub mod proc_table;
#[cfg(all(unix, not(target_os = "macos")))]
pub mod procfs;
#[cfg(unix)]
mod timer;
#[cfg(unix)]
mod tracker;
#[cfg(unix)]
mod tree;
#[cfg(unix)]
mod watchdog;

pub use env::{child_env, EnvOptions, DEFAULT_REMOVE_ENV};
pub use exit::{signal_name, ExitStatusInfo};
pub use group::ProcessGroup;
pub use priority::{enlarge_pipe, lower_current_thread_priority, EnlargedPipe};
pub use shell::{resolve_program, shell_config, shell_config_for, ShellConfig, ShellKind};
pub use spawn::{spawn, Child, SpawnRequest, SpawnedProcess};
pub use tag::{is_valid_task_tag, new_task_tag, TASK_TAG_VAR};

#[cfg(unix)]
pub use kill::{
  kill_now, kill_now_all, signal_tree, terminate, terminate_leftovers, tree_alive, SIGKILL_GRACE,
};
#[cfg(unix)]
pub use nix::sys::signal::Signal;
#[cfg(unix)]
pub use tracker::{forget_if_dead, kill_all_sync, tracked_groups, watchdog_pid};

#[cfg(all(test, unix))]
mod tests_darwin;
#[cfg(all(test, unix))]
mod tests_host;
#[cfg(all(test, unix))]
mod tests_kill;
#[cfg(test)]
mod tests_pure;
#[cfg(all(test, unix))]
mod tests_spawn;
#[cfg(all(test, unix))]
mod tests_support;
#[cfg(all(test, unix))]
mod tests_tree;
#[cfg(all(test, unix))]
mod tests_watchdog;
