//! Every process group taskstream created, settled or not (CONTRACT.md §2.15
//! item 12, §4 items 6 and 22), for the synchronous kill at host exit and for
//! the watchdog.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::timer;
use super::tree::Snapshot;
use super::watchdog::Link;
use crate::process::group::ProcessGroup;

struct State {
  groups: Vec<ProcessGroup>,
  watchdog: Link,
  /// Prune (one `/proc` scan, on the timer thread) once this many groups are
  /// tracked, so most spawns cause no scan; the bound doubles with the live set.
  prune_at: usize,
  /// A prune is scheduled and has not finished.
  pruning: bool,
}

/// The fewest tracked groups that trigger a prune.
const MIN_PRUNE_AT: usize = 32;

static STATE: Mutex<State> = Mutex::new(State {
  groups: Vec::new(),
  watchdog: Link::new(watchdog_exited),
  prune_at: MIN_PRUNE_AT,
  pruning: false,
});

fn state() -> MutexGuard<'static, State> {
  STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the watchdog before the first child exists, so no child is ever
/// unprotected while the watchdog starts.
pub(super) fn prepare() {
  let mut state = state();
  let State {
    groups, watchdog, ..
  } = &mut *state;
  watchdog.ensure_started(groups);
}

/// Called by the watchdog's guard thread when the watchdog with `pid` exited
/// (the [`Link`]'s exit callback).
fn watchdog_exited(pid: u32) {
  let mut state = state();
  let State {
    groups, watchdog, ..
  } = &mut *state;
  watchdog.exited(pid, groups);
}

/// The running watchdog's pid (for tests that kill it).
pub fn watchdog_pid() -> Option<u32> {
  state().watchdog.pid()
}

/// Tracks a new group and tells the watchdog. Once the set has grown to
/// `prune_at`, groups whose tree is verified dead are pruned (one `/proc`
/// scan) on the timer thread, never on the spawning (JavaScript) thread.
pub(super) fn register(group: ProcessGroup) {
  let prune_due = {
    let mut state = state();
    let State {
      groups,
      watchdog,
      prune_at,
      pruning,
    } = &mut *state;
    let prune_due = groups.len() >= *prune_at && !*pruning;
    *pruning |= prune_due;
    groups.push(group);
    let group = groups.last().expect("just pushed");
    watchdog.added(group, groups);
    prune_due
  };
  if prune_due {
    timer::schedule(Duration::ZERO, prune);
  }
}

/// Drops the groups whose tree is dead. Only groups tracked before the scan
/// are candidates (a group registered during it would look dead), and a tree
/// found dead stays dead: none of its processes is left to fork.
fn prune() {
  let candidates = state().groups.clone();
  let snapshot = Snapshot::take();
  let protected = snapshot.protected();
  let dead: Vec<ProcessGroup> = candidates
    .into_iter()
    .filter(|g| !snapshot.tree_alive(g, &protected))
    .collect();
  forget(&dead);
  let mut state = state();
  state.prune_at = (state.groups.len() * 2).max(MIN_PRUNE_AT);
  state.pruning = false;
}

/// Stops tracking `group` if no process of its tree is alive; returns whether
/// it is dead. Call it after a task settled to keep the set small.
pub fn forget_if_dead(group: &ProcessGroup) -> bool {
  let snapshot = Snapshot::take();
  if snapshot.tree_alive(group, &snapshot.protected()) {
    return false;
  }
  forget(std::slice::from_ref(group));
  true
}

/// Stops tracking `dead`, groups whose tree a scan found dead (a dead tree
/// stays dead: none of its processes is left to fork).
pub(super) fn forget(dead: &[ProcessGroup]) {
  if dead.is_empty() {
    return;
  }
  let mut state = state();
  let State {
    groups, watchdog, ..
  } = &mut *state;
  for group in dead {
    if let Some(index) = groups.iter().position(|g| g == group) {
      groups.remove(index);
      watchdog.removed(group, groups);
    }
    if let Some(dir) = &group.cgroup {
      super::cgroup::remove(dir);
    }
    #[cfg(target_os = "linux")]
    if let Some(task) = &group.limits {
      super::cgroup_limits::remove(&task.dirs);
    }
  }
}

/// The groups tracked now (dead ones may linger until the next prune).
pub fn tracked_groups() -> Vec<ProcessGroup> {
  state().groups.clone()
}
