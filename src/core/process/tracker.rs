//! Every process group taskstream created, settled or not (CONTRACT.md §2.15
//! item 12, §4 items 6 and 22), for the synchronous kill at host exit and for
//! the watchdog.

use std::sync::{Mutex, MutexGuard};

use nix::sys::signal::Signal;

use super::group::ProcessGroup;
use super::kill::signal_trees;
use super::tree::Snapshot;
use super::watchdog::Link;

struct State {
  groups: Vec<ProcessGroup>,
  watchdog: Link,
  /// Prune (one `/proc` scan) only once this many groups are tracked, so a
  /// spawn costs no scan in the common case; the bound doubles with the live set.
  prune_at: usize,
}

/// The fewest tracked groups that trigger a prune.
const MIN_PRUNE_AT: usize = 32;

static STATE: Mutex<State> = Mutex::new(State {
  groups: Vec::new(),
  watchdog: Link::new(),
  prune_at: MIN_PRUNE_AT,
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

/// Tracks a new group and tells the watchdog. Once the set has grown to
/// `prune_at`, groups whose tree is verified dead are pruned first (one `/proc`
/// scan), so the set stays small while most spawns pay no scan.
pub(super) fn register(group: ProcessGroup) {
  let mut state = state();
  let State {
    groups,
    watchdog,
    prune_at,
  } = &mut *state;
  if groups.len() >= *prune_at {
    prune(groups, watchdog);
    *prune_at = (groups.len() * 2).max(MIN_PRUNE_AT);
  }
  groups.push(group);
  let group = groups.last().expect("just pushed");
  watchdog.added(group, groups);
}

fn prune(groups: &mut Vec<ProcessGroup>, watchdog: &mut Link) {
  if groups.is_empty() {
    return;
  }
  let snapshot = Snapshot::take();
  let protected = snapshot.protected();
  let (alive, dead): (Vec<_>, Vec<_>) = groups
    .drain(..)
    .partition(|g| snapshot.tree_alive(g, &protected));
  *groups = alive;
  for group in &dead {
    watchdog.removed(group, groups);
  }
}

/// Stops tracking `group` if no process of its tree is alive; returns whether
/// it is dead. Call it after a task settled to keep the set small.
pub fn forget_if_dead(group: &ProcessGroup) -> bool {
  let snapshot = Snapshot::take();
  if snapshot.tree_alive(group, &snapshot.protected()) {
    return false;
  }
  let mut state = state();
  let State {
    groups, watchdog, ..
  } = &mut *state;
  if let Some(index) = groups.iter().position(|g| g == group) {
    groups.remove(index);
    watchdog.removed(group, groups);
  }
  true
}

/// SIGKILL to every tracked tree, synchronously and without grace
/// (CONTRACT.md §4 item 4): for `process.on('exit')`. It never waits for the
/// processes to die.
pub fn kill_all_sync() {
  let groups = state().groups.clone();
  signal_trees(&groups, Signal::SIGKILL);
}

/// The groups tracked now (dead ones may linger until the next prune).
pub fn tracked_groups() -> Vec<ProcessGroup> {
  state().groups.clone()
}
