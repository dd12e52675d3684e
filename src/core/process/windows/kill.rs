//! Stopping a task's tree on Windows, and the set of every job taskstream
//! made (the tracker), for the kill at host exit.
//!
//! A stop is `TerminateJobObject` on the task's job: every member dies,
//! whatever its parent chain (Git Bash's exec hops, `start`, daemons), and
//! nothing outside the job can be hit, so no pid is ever used. There is no
//! graceful step (the Unix SIGTERM and its 200 ms grace): Windows has no
//! signal for "please exit" that reaches a console process group through
//! anything but a console the sender shares, and each task runs in a hidden
//! console of its own (`CREATE_NO_WINDOW`) that Node does not share and
//! cannot attach to without giving up its own. So `terminate` kills at once
//! (a program sees the same as `taskkill /f` or the Task Manager's "End
//! task"); it still runs on the timer thread, batched like the Unix kills,
//! so `cancel()` and `abortAll()` do no system call on the JavaScript thread.

use std::sync::Mutex;
use std::time::Duration;

use super::job::ProcessGroup;
use crate::process::timer;
use crate::sync::lock;

/// How long queued stops wait for others before the timer thread makes them
/// (a burst of cancels costs one wake-up of the timer thread).
const BATCH_WINDOW: Duration = Duration::from_millis(5);

/// Unix escalates SIGTERM to SIGKILL after this grace; Windows kills at once
/// (see the module documentation), so it is zero here.
pub const SIGKILL_GRACE: Duration = Duration::ZERO;

struct Tracked {
  groups: Vec<ProcessGroup>,
  /// Prune (a query per job, on the timer thread) once this many are tracked.
  prune_at: usize,
  pruning: bool,
}

const MIN_PRUNE_AT: usize = 32;

/// Every job whose tree is not known dead. Holding a clone keeps the job
/// open, so no task's processes are killed early by a handle closing; a job
/// is dropped from here only once it has no live member.
static TRACKED: Mutex<Tracked> = Mutex::new(Tracked {
  groups: Vec::new(),
  prune_at: MIN_PRUNE_AT,
  pruning: false,
});

static TERMINATING: Mutex<Vec<ProcessGroup>> = Mutex::new(Vec::new());
static SETTLED: Mutex<Vec<ProcessGroup>> = Mutex::new(Vec::new());

/// Tracks a new task's job.
pub(crate) fn register(group: ProcessGroup) {
  let prune_due = {
    let mut tracked = lock(&TRACKED);
    let due = tracked.groups.len() >= tracked.prune_at && !tracked.pruning;
    tracked.pruning |= due;
    tracked.groups.push(group);
    due
  };
  if prune_due {
    timer::schedule(Duration::ZERO, prune);
  }
}

fn alive(group: &ProcessGroup) -> bool {
  // A job that cannot be queried is kept (and killed at host exit).
  group.job.active_processes().map_or(true, |n| n > 0)
}

fn prune() {
  let candidates = lock(&TRACKED).groups.clone();
  let dead: Vec<ProcessGroup> = candidates.into_iter().filter(|g| !alive(g)).collect();
  forget(&dead);
  let mut tracked = lock(&TRACKED);
  tracked.prune_at = (tracked.groups.len() * 2).max(MIN_PRUNE_AT);
  tracked.pruning = false;
}

fn forget(dead: &[ProcessGroup]) {
  if dead.is_empty() {
    return;
  }
  lock(&TRACKED).groups.retain(|g| !dead.contains(g));
}

fn push(queue: &Mutex<Vec<ProcessGroup>>, group: &ProcessGroup) -> bool {
  let mut queue = lock(queue);
  queue.push(group.clone());
  queue.len() == 1
}

fn kill(group: &ProcessGroup) {
  if let Err(error) = group.job.terminate() {
    tracing::warn!(pid = group.pid, %error, "taskstream: TerminateJobObject failed");
  }
}

/// When a stop is checked again (after the first `TerminateJobObject`).
/// Windows kills every member and refuses new ones once a job terminates,
/// but Wine's job code skips a member that is still being created (no
/// thread running yet), which then starts outside the kill; so, as the Unix
/// kill scans until a scan finds nobody new, the job is checked again and
/// terminated again while any member lives.
const RECHECKS: [Duration; 4] = [
  Duration::from_millis(20),
  Duration::from_millis(100),
  Duration::from_millis(500),
  Duration::from_millis(2000),
];

/// `kill` now, then again from the timer thread at each of [`RECHECKS`]
/// while the job still has a live member.
fn kill_and_recheck(group: ProcessGroup) {
  kill(&group);
  recheck(group, 0);
}

fn recheck(group: ProcessGroup, round: usize) {
  let Some(&delay) = RECHECKS.get(round) else {
    return;
  };
  timer::schedule(delay, move || {
    if alive(&group) {
      kill(&group);
      recheck(group, round + 1);
    }
  });
}

/// Stops the task's whole tree: `TerminateJobObject` from the timer thread
/// within a few milliseconds (see the module documentation). Returns at once.
pub fn terminate(group: &ProcessGroup) {
  if push(&TERMINATING, group) {
    timer::schedule(BATCH_WINDOW, || {
      for group in std::mem::take(&mut *lock(&TERMINATING)) {
        kill_and_recheck(group);
      }
    });
  }
}

/// After a task settled: forgets its job if no member is alive, else kills
/// what is left, on the timer thread.
pub fn terminate_leftovers(group: &ProcessGroup) {
  if push(&SETTLED, group) {
    timer::schedule(BATCH_WINDOW, || {
      let batch = std::mem::take(&mut *lock(&SETTLED));
      let (alive, dead): (Vec<_>, Vec<_>) = batch.into_iter().partition(alive);
      forget(&dead);
      for group in alive {
        kill_and_recheck(group);
      }
    });
  }
}

/// Kills the tree now, synchronously (and checks again later, see [`RECHECKS`]).
pub fn kill_now(group: &ProcessGroup) {
  kill_and_recheck(group.clone());
}

/// Kills every tree of `groups` that is still tracked, synchronously.
pub fn kill_now_all(groups: &[ProcessGroup]) {
  let tracked = tracked_groups();
  for group in groups.iter().filter(|g| tracked.contains(g)) {
    kill(group);
  }
}

/// Kills every tracked tree, synchronously: for `process.on('exit')`. (A
/// death of Node that runs no JavaScript closes every job handle instead,
/// and the kernel kills the members: kill-on-close.)
pub fn kill_all_sync() {
  for group in tracked_groups() {
    kill(&group);
  }
}

/// The jobs tracked now (dead ones may linger until the next prune).
pub fn tracked_groups() -> Vec<ProcessGroup> {
  lock(&TRACKED).groups.clone()
}

/// Stops tracking `group` if none of its processes is alive; whether it is dead.
pub fn forget_if_dead(group: &ProcessGroup) -> bool {
  if alive(group) {
    return false;
  }
  forget(std::slice::from_ref(group));
  true
}

/// Whether any process of the task's job is alive.
pub fn tree_alive(group: &ProcessGroup) -> bool {
  alive(group)
}
