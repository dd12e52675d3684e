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
//! One module per platform family behind this seam, each telling its whole
//! containment story in its `mod.rs`:
//! * `unix/` (Linux and macOS): a new session and group per task, a cgroup
//!   where possible, tree scans through the process table (procfs on Linux,
//!   libproc and `sysctl` on macOS), SIGTERM then SIGKILL, and the watchdog
//!   process for host deaths (plus kqueue `NOTE_EXIT` on macOS);
//! * `windows/`: a Job Object per task with kill-on-close.
//!
//! The modules at this level are shared by every platform: the child
//! environment, exit statuses, shell selection, task tags, thread priority
//! and pipe sizes, the timer thread, and the spawn request and result types.

mod env;
mod exit;
pub mod limits;
pub mod liveness;
#[cfg(any(unix, windows))]
mod owned_trees;
mod priority;
mod shell;
mod spawn;
mod tag;
mod terminal_handle;
mod terminal_size;
#[cfg(any(unix, windows))]
mod timer;

// The command line and environment block `CreateProcessW` takes: pure, so
// `cargo test` checks them on every platform.
#[cfg(any(windows, test))]
mod cmdline;
// What API.md §6.8 asks of a tree (ports, limits, usage), the same questions on every family.
mod controls;
/// A process group (Unix; elsewhere but Windows only a record, and `spawn`
/// refuses).
#[cfg(not(windows))]
mod group;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(not(any(target_os = "linux", windows)))]
pub use controls::LIMITS_UNSUPPORTED;
pub use controls::{
  check_limits, listening_ports, memory_limit_hit, memory_limit_of, tree_usage, PORTS_SUPPORTED,
};
pub use env::{child_env, env_name_problem, EnvOptions, DEFAULT_REMOVE_ENV};
pub use exit::{signal_name, signal_number, ExitStatusInfo};
pub use limits::{Limits, Usage, MEMORY_LIMIT_POLL};
pub use liveness::Liveness;
#[cfg(any(unix, windows))]
pub use owned_trees::OwnedTrees;
pub use priority::{enlarge_pipe, lower_current_thread_priority, EnlargedPipe};
pub use shell::{resolve_program, shell_config, shell_config_for, ShellConfig, ShellKind};
pub use spawn::{Child, SpawnRequest, SpawnedProcess};
pub use tag::{is_valid_task_tag, new_task_tag, TASK_TAG_VAR};
pub use terminal_handle::{TerminalError, TerminalHandle, INPUT_QUEUE_LIMIT};
pub use terminal_size::{TerminalSize, UNSUPPORTED_MESSAGE};

#[cfg(not(windows))]
pub use group::ProcessGroup;
#[cfg(not(any(unix, windows)))]
pub use spawn::spawn;

#[cfg(all(unix, not(target_os = "macos")))]
pub use unix::procfs;
#[cfg(unix)]
pub use unix::{
  cgroup, forget_if_dead, kill_all_sync, kill_now, kill_now_all, proc_table, signal_tree, spawn,
  terminate, terminate_leftovers, tracked_groups, tree_alive, watchdog_pid, Signal, SIGKILL_GRACE,
};

/// The timer thread (the reactor's timers on Windows run there too).
#[cfg(windows)]
pub(crate) use timer::schedule as schedule_timer;
#[cfg(windows)]
pub use windows::{
  conpty, forget_if_dead, kill_all_sync, kill_now, kill_now_all, proc_table, spawn,
  spawn_serialized, terminate, terminate_leftovers, tracked_groups, tree_alive, Job, ProcessGroup,
  SIGKILL_GRACE,
};

#[cfg(test)]
mod tests;
