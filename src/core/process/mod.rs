//! The process layer (CONTRACT.md §1.5, §2.10, §2.15 items 6 and 12, §4 items
//! 4–6, 21 and 22): shell selection, the child environment, spawning into a
//! new session, tree kills, and the guarantees that every child dies with its
//! task and with the host process, however the host ends.
//!
//! The platform seam: every platform provides the same five things under the
//! same names, re-exported below, and nothing above this module knows which
//! one runs:
//! * **spawn contained**: [`spawn`] starts a task's leader already inside its
//!   containment, with stdin from the null device and stdout/stderr pipes;
//! * **the tree**: [`ProcessGroup`], what a stop reaches ([`tree_alive`]);
//! * **stop**: [`terminate`] (graceful where the platform has a way, then
//!   hard), [`terminate_leftovers`] after a task settled, [`kill_now`];
//! * **host death**: [`kill_all_sync`] from `process.on('exit')`, and what
//!   covers deaths that run no JavaScript;
//! * **the tracked set**: [`tracked_groups`], [`forget_if_dead`].
//!
//! Unix (Linux and macOS): the files at this level; a new session and group
//! per task, a cgroup where possible, tree scans through `proc_table`
//! (procfs on Linux, libproc and `sysctl` on macOS), SIGTERM then SIGKILL,
//! and the watchdog process for host deaths. Windows: `windows/`, a Job
//! Object per task with kill-on-close (its `mod.rs` tells the whole story).

#[cfg(unix)]
pub mod cgroup;
mod env;
mod exit;
#[cfg(not(windows))]
mod group;
mod priority;
mod shell;
mod spawn;
mod tag;

#[cfg(unix)]
mod kill;
#[cfg(unix)]
mod pre_exec;
#[cfg(unix)]
mod pty;
#[cfg(target_os = "macos")]
mod proc_darwin;
#[cfg(any(target_os = "macos", all(test, unix)))]
mod proc_darwin_parse;
#[cfg(unix)]
pub mod proc_table;
#[cfg(all(unix, not(target_os = "macos")))]
pub mod procfs;
#[cfg(any(unix, windows))]
mod timer;
#[cfg(unix)]
mod tracker;
#[cfg(unix)]
mod tree;
#[cfg(unix)]
mod watchdog;
#[cfg(windows)]
mod windows;

pub use env::{child_env, EnvOptions, DEFAULT_REMOVE_ENV};
pub use exit::{signal_name, ExitStatusInfo};
#[cfg(not(windows))]
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
/// The timer thread (the reactor's timers on Windows run there too).
#[cfg(windows)]
pub(crate) use timer::schedule as schedule_timer;
#[cfg(windows)]
pub use windows::{
  forget_if_dead, kill_all_sync, kill_now, kill_now_all, terminate, terminate_leftovers,
  tracked_groups, tree_alive, Job, ProcessGroup, SIGKILL_GRACE,
};

#[cfg(all(test, unix))]
mod tests_darwin;
#[cfg(all(test, unix))]
mod tests_host;
#[cfg(all(test, unix))]
mod tests_kill;
#[cfg(test)]
mod tests_pure;
#[cfg(all(test, unix))]
mod tests_pty;
#[cfg(all(test, unix))]
mod tests_spawn;
#[cfg(all(test, unix))]
mod tests_support;
#[cfg(all(test, unix))]
mod tests_tree;
#[cfg(all(test, unix))]
mod tests_watchdog;
// The Windows command line and environment block are pure: checked everywhere.
#[cfg(all(test, not(windows)))]
#[path = "windows/cmdline.rs"]
mod windows_cmdline;
