//! The process table, one API on every Unix (CONTRACT.md §4 item 5): parent
//! links, process groups, start times (to tell a reused pid apart), zombies
//! and the task's environment tag. `tree.rs`, `kill.rs`, `tracker.rs` and
//! `spawn.rs` use only this module; no platform `cfg` is needed in them.
//!
//! A backend supplies four primitives: [`available`], [`list_pids`],
//! [`stat`] and `env_tags_with`, plus `START_TIME_SLACK` and `WATCHDOG_PS`
//! (the `ps` the watchdog reads the table with, or "" when it reads procfs).
//! Everything else here is built on them, the same way on every platform.
//!
//! * Linux (and other Unixes, where nothing is found): `procfs.rs` reads
//!   `/proc/<pid>/stat` and `/proc/<pid>/environ`.
//! * macOS: `proc_darwin.rs` uses libproc (`proc_listallpids`, `proc_pidinfo`
//!   `PROC_PIDTBSDINFO`) and `sysctl` `KERN_PROCARGS2`.
//!
//! Where the backend finds nothing (no procfs), every reader returns `None`,
//! `false` or nothing, [`available`] is false, and callers fall back to the
//! process group.

use std::collections::{HashMap, HashSet, VecDeque};

#[cfg(target_os = "macos")]
use super::proc_darwin as os;
#[cfg(not(target_os = "macos"))]
use super::procfs as os;

pub use super::proc_stat::ProcStat;
/// The process's short command name (for tests).
#[cfg(test)]
pub(crate) use os::name;
pub use os::{available, list_pids, stat};
pub(super) use os::{env_tags_with, WATCHDOG_PS};

/// The values of every `<name>=` entry of the environment the process was
/// started with (for example a persisted task's keeper tag). Empty if
/// unreadable.
pub fn env_values(pid: u32, name: &str) -> Vec<String> {
  os::env_values(pid, name)
}

/// The process's start time (see [`ProcStat::start_time`]), zombies included.
pub fn start_time(pid: u32) -> Option<u64> {
  stat(pid).map(|s| s.start_time)
}

/// Whether `pid` is a live process (a zombie is gone), and its start time.
pub fn liveness(pid: u32) -> crate::process::Liveness {
  match stat(pid) {
    Some(s) if !s.zombie => crate::process::Liveness::Live {
      start_time: Some(s.start_time),
    },
    _ => crate::process::Liveness::Gone,
  }
}

/// The parent pid.
pub fn ppid(pid: u32) -> Option<u32> {
  stat(pid).map(|s| s.ppid)
}

/// The process group id.
pub fn pgid(pid: u32) -> Option<u32> {
  stat(pid).map(|s| s.pgid)
}

/// The process exists, is not a zombie, and is the one that started at
/// `start_time` (not a later process that reused the pid).
pub fn is_running(pid: u32, start_time: u64) -> bool {
  stat(pid).is_some_and(|s| s.start_time == start_time && !s.zombie)
}

/// Whether a process that started at `start_time` may have been started by a
/// process that started at `host_start` or by its descendants. Tagged
/// processes are never older than the host, so older processes' environments
/// need not be read. The backend's `START_TIME_SLACK` absorbs clocks that can
/// step back (macOS start times are wall-clock times).
pub(super) fn may_descend_from(start_time: u64, host_start: u64) -> bool {
  start_time.saturating_add(os::START_TIME_SLACK) >= host_start
}

/// The values of every `TASKSTREAM_TASK_ID=` entry of the environment the
/// process was started with. Empty if unreadable.
pub fn env_tags(pid: u32) -> Vec<String> {
  env_tags_with(pid, &mut Vec::new())
}

/// The environment holds the exact entry `TASKSTREAM_TASK_ID=<tag>`.
pub fn has_env_tag(pid: u32, tag: &str) -> bool {
  env_tags(pid).iter().any(|t| t == tag)
}

/// One scan of every process.
pub fn all_stats() -> Vec<ProcStat> {
  list_pids().into_iter().filter_map(stat).collect()
}

/// `(pid, start_time)` of every descendant of `roots`, by parent links, from
/// one scan. The roots themselves are not included.
pub fn descendants(roots: &[u32]) -> Vec<(u32, u64)> {
  descendants_in(&all_stats(), roots)
}

/// [`descendants`] over a given scan: breadth-first, iterative (no recursion
/// depth limit), each pid visited once even if the scan holds a cycle.
pub fn descendants_in(stats: &[ProcStat], roots: &[u32]) -> Vec<(u32, u64)> {
  let mut children: HashMap<u32, Vec<&ProcStat>> = HashMap::new();
  for s in stats {
    children.entry(s.ppid).or_default().push(s);
  }
  let mut seen: HashSet<u32> = roots.iter().copied().collect();
  let mut queue: VecDeque<u32> = roots.iter().copied().collect();
  let mut found = Vec::new();
  while let Some(parent) = queue.pop_front() {
    for child in children.get(&parent).into_iter().flatten() {
      if seen.insert(child.pid) {
        found.push((child.pid, child.start_time));
        queue.push_back(child.pid);
      }
    }
  }
  found
}
