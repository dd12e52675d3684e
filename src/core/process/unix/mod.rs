//! Containment on Unix (Linux and macOS), the whole story in this folder:
//!
//! * **spawn contained** (spawn.rs, pre_exec.rs, pty.rs): every task's
//!   leader starts in a new session and process group of its own (`setsid`:
//!   pgid = pid, no controlling terminal, or a pseudo-terminal as its own in
//!   terminal mode), with default signal dispositions, an empty mask, stdin
//!   from `/dev/null`, stdout and stderr as pipes and no other inherited
//!   descriptor; on Linux also in a cgroup v2 of its own where the host's
//!   cgroup is writable (cgroup.rs), entered before the command runs. Every
//!   child carries `TASKSTREAM_TASK_ID=<tag>` in its environment. The group
//!   is tracked (tracker.rs) and known to the watchdog before the caller
//!   sees the child.
//! * **the tree** (`../group.rs`, tree.rs, proc_table.rs): the group, plus every
//!   process that left it but is reachable by parent links or carries the
//!   task's tag, read from the process table: procfs on Linux (procfs.rs),
//!   libproc and `sysctl KERN_PROCARGS2` on macOS (proc_darwin.rs, its pure
//!   parsing in proc_darwin_parse.rs). A pid is checked against its start
//!   time before any signal, so a reused pid is never hit; a task's cgroup,
//!   where there is one, holds every process whatever it did.
//! * **stop** (kill.rs): SIGTERM to the group and the tree (the cgroup's
//!   `cgroup.kill` last), SIGKILL 200 ms later from the timer thread, and
//!   rescans until no new member appears; after a task settled, whatever it
//!   left behind is killed too.
//! * **host death** (tracker.rs, watchdog.rs): a normal exit kills every
//!   tracked group and tree from `process.on('exit')`. Deaths that run no
//!   JavaScript (SIGKILL, the OOM killer, a crash) are covered by the
//!   watchdog: a small `bash` process in its own session that reads the
//!   tracked groups on a pipe whose only write end is in the host, and kills
//!   every group, tree and cgroup taskstream created when that pipe reaches
//!   EOF. On macOS a second signal stands beside the pipe: a helper of the
//!   watchdog waits on kqueue `EVFILT_PROC`/`NOTE_EXIT` for the host pid
//!   (watchdog_darwin.rs, its pure decisions in watchdog_darwin_events.rs),
//!   so a write end leaked into another process cannot keep the watchdog
//!   waiting. The fork path adds `PR_SET_PDEATHSIG` on
//!   Linux as a backstop. A watchdog that dies is replaced at once.

pub mod cgroup;
#[cfg(target_os = "linux")]
pub(crate) mod cgroup_limits;
mod kill;
#[cfg(target_os = "linux")]
mod ports;
#[cfg(target_os = "macos")]
mod ports_darwin;
mod pre_exec;
#[cfg(target_os = "macos")]
mod proc_darwin;
#[cfg(any(target_os = "macos", test))]
mod proc_darwin_parse;
mod proc_stat;
pub mod proc_table;
#[cfg(not(target_os = "macos"))]
pub mod procfs;
mod pty;
mod spawn;
mod tracker;
mod tree;
pub(super) mod wait;
mod watchdog;
#[cfg(target_os = "macos")]
mod watchdog_darwin;
#[cfg(any(target_os = "macos", test))]
mod watchdog_darwin_events;

use super::spawn::{SpawnRequest, SpawnedProcess};
use super::{shell, tag, timer};

pub use kill::{
  kill_all_sync, kill_now, kill_now_all, signal_tree, terminate, terminate_leftovers, tree_alive,
  SIGKILL_GRACE,
};
pub use nix::sys::signal::Signal;
#[cfg(target_os = "linux")]
pub(super) use ports::listening_ports;
#[cfg(target_os = "macos")]
pub(super) use ports_darwin::listening_ports;
pub use spawn::spawn;
pub use tracker::{forget_if_dead, tracked_groups, watchdog_pid};

#[cfg(test)]
#[allow(unused_imports)]
use super::*;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
