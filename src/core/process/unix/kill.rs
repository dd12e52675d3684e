//! Killing a task's process tree (CONTRACT.md §2.10 "Abort handling and
//! kill", §4 items 4 and 5): SIGTERM, then SIGKILL after 200 ms from the Rust
//! timer thread. Only processes of that task are signalled, by pid (checked
//! against its start time) or by our verified pgid, never by name.
//!
//! [`terminate`] is called on the JavaScript thread (`cancel`, `abortAll`),
//! so it neither scans nor signals there: it queues the group, and the
//! timer thread sends the SIGTERM (and 200 ms later the SIGKILL) to every
//! group queued meanwhile with one pair of scans. Signalling on the calling
//! thread, even a single `killpg`, would make the children exit and their
//! reader and supervisor threads wake up while the JavaScript thread is still
//! cancelling (measured: `abortAll()` of 16 monitors took 3–5 ms instead of
//! about 1 ms on two cores).

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use super::cgroup;
use super::proc_table::{self, ProcStat};
use super::timer;
use super::tracker;
use super::tree::Snapshot;
use crate::process::group::ProcessGroup;
use crate::sync::lock;

/// Grace between SIGTERM and SIGKILL (CONTRACT.md §1.6 `SIGKILL_TIMEOUT_MS`).
pub const SIGKILL_GRACE: Duration = Duration::from_millis(200);

/// Sends `signal` to `group`'s tree: the process group when its pgid is
/// verified ours, and each member outside it (tagged processes, descendants)
/// by pid after re-checking its start time; then once more to processes that
/// were forked meanwhile. Never the host, its group or its ancestors.
pub fn signal_tree(group: &ProcessGroup, signal: Signal) {
  signal_trees(std::slice::from_ref(group), signal);
}

/// Sends `signal` to the trees of `groups`. One process snapshot finds each
/// tree (group members, tagged processes and their descendants); `killpg`
/// reaches the group when its pgid is verified ours, and every member outside
/// it is signalled by pid after re-checking its start time. Further snapshots
/// then catch processes forked meanwhile (a daemon mid-fork during the scan),
/// until one finds nobody new, at most [`MAX_SCAN_ROUNDS`] in all. Each
/// process is signalled once.
///
/// A task with a cgroup gets SIGKILL through `cgroup.kill`, which reaches
/// every process in it at once, forks in flight included; other signals go
/// to each process listed in it. The scans still run, for what is outside.
pub(super) fn signal_trees(groups: &[ProcessGroup], signal: Signal) {
  if signal == Signal::SIGKILL {
    for dir in groups.iter().filter_map(|g| g.cgroup.as_deref()) {
      cgroup::kill(dir);
    }
  }
  let first = Snapshot::take();
  let protected = first.protected();
  let mut covered: HashSet<(u32, u64)> = HashSet::new();
  for group in groups {
    let plan = first.plan(group, &protected);
    if let Some(pgid) = plan.group {
      let _ = killpg(Pid::from_raw(pgid as i32), signal);
    }
    for member in &plan.members {
      let first_time = covered.insert((member.pid, member.start_time));
      if first_time && Some(member.pgid) != plan.group {
        signal_checked(member, signal);
      }
    }
  }
  signal_cgroup_members(groups, signal, &mut covered);
  for _ in 1..MAX_SCAN_ROUNDS {
    let next = Snapshot::take();
    let mut found_new = signal_cgroup_members(groups, signal, &mut covered);
    for group in groups {
      for member in next.plan(group, &protected).members {
        if covered.insert((member.pid, member.start_time)) {
          found_new = true;
          signal_checked(&member, signal);
        }
      }
    }
    if !found_new {
      break;
    }
  }
}

/// Most process scans one [`signal_trees`] makes: a tree that keeps forking
/// faster than it can be scanned is still reached by the SIGKILL round.
const MAX_SCAN_ROUNDS: usize = 16;

/// Sends `signal` to the processes in the groups' cgroups that are not
/// `covered` yet (SIGKILL went through `cgroup.kill` already); true if any.
fn signal_cgroup_members(
  groups: &[ProcessGroup],
  signal: Signal,
  covered: &mut HashSet<(u32, u64)>,
) -> bool {
  if signal == Signal::SIGKILL {
    return false;
  }
  let mut found_new = false;
  for dir in groups.iter().filter_map(|g| g.cgroup.as_deref()) {
    for pid in cgroup::pids(dir) {
      let Some(stat) = proc_table::stat(pid) else {
        continue;
      };
      if !stat.zombie && covered.insert((stat.pid, stat.start_time)) {
        found_new = true;
        signal_checked(&stat, signal);
      }
    }
  }
  found_new
}

/// Signals `member` only if it is still the process seen in the snapshot.
fn signal_checked(member: &ProcStat, signal: Signal) {
  if proc_table::is_running(member.pid, member.start_time) {
    let _ = kill(Pid::from_raw(member.pid as i32), signal);
  }
}

/// SIGTERM to the tree within [`BATCH_WINDOW`]; SIGKILL to whatever of it
/// is alive [`SIGKILL_GRACE`] after that, both from the timer thread, so the
/// escalation happens even if the JavaScript thread is busy or exiting (and
/// at host exit the exit hook's synchronous kill covers every tracked group).
/// Returns at once: the caller (the JavaScript thread for `cancel` and
/// `abortAll`) does no scan and sends no signal. Groups terminated together
/// share the timer thread's scans.
pub fn terminate(group: &ProcessGroup) {
  if push(&TERMINATING, group.clone()) {
    timer::schedule(BATCH_WINDOW, terminate_batch);
  }
}

/// After a task settled: forgets its group if the tree is dead, else
/// terminates what is left (SIGTERM, then SIGKILL). One scan on the timer
/// thread decides, shared by every group settled within [`BATCH_WINDOW`] (all
/// monitors of an `abortAll` exit together), so the threads that report exits
/// do no scan.
pub fn terminate_leftovers(group: &ProcessGroup) {
  if push(&SETTLED, group.clone()) {
    timer::schedule(BATCH_WINDOW, leftovers_batch);
  }
}

/// How long queued groups wait for others before the timer thread handles
/// them all: a burst of cancels or exits (`abortAll`) then costs one pair of
/// scans, not one each, and none of it competes with the JavaScript thread
/// while it is still in the call.
const BATCH_WINDOW: Duration = Duration::from_millis(5);

/// Groups to terminate.
static TERMINATING: Mutex<Vec<ProcessGroup>> = Mutex::new(Vec::new());

/// Settled groups whose tree is still to be checked.
static SETTLED: Mutex<Vec<ProcessGroup>> = Mutex::new(Vec::new());

/// Queues `item`; true if the queue was empty, so the caller schedules the
/// job that drains it.
fn push<T>(queue: &Mutex<Vec<T>>, item: T) -> bool {
  let mut queue = lock(queue);
  queue.push(item);
  queue.len() == 1
}

/// On the timer thread: SIGTERM to every queued tree, then the SIGKILL of
/// the same trees [`SIGKILL_GRACE`] later.
fn terminate_batch() {
  let batch = std::mem::take(&mut *lock(&TERMINATING));
  terminate_now(batch);
}

/// SIGTERM to `groups`' trees now, SIGKILL [`SIGKILL_GRACE`] later.
fn terminate_now(groups: Vec<ProcessGroup>) {
  if groups.is_empty() {
    return;
  }
  signal_trees(&groups, Signal::SIGTERM);
  timer::schedule(SIGKILL_GRACE, move || {
    signal_trees(&groups, Signal::SIGKILL);
    forget_when_dead(groups, FORGET_CHECKS);
  });
}

/// How often, [`FORGET_INTERVAL`] apart, the trees killed by [`terminate_now`] are checked
/// for death so that they are forgotten (their cgroup and limit directories removed) at once,
/// not at the tracker's next prune. A tree still alive after all of them (a process stuck in
/// an uninterruptible sleep) is left to the prune.
const FORGET_CHECKS: u32 = 50;
const FORGET_INTERVAL: Duration = Duration::from_millis(100);

/// On the timer thread: forgets the groups whose tree is dead now and checks the others again
/// [`FORGET_INTERVAL`] later, `checks` times at most.
fn forget_when_dead(groups: Vec<ProcessGroup>, checks: u32) {
  let alive = forget_dead(groups);
  if !alive.is_empty() && checks > 1 {
    timer::schedule(FORGET_INTERVAL, move || forget_when_dead(alive, checks - 1));
  }
}

/// On the timer thread: one scan sorts the settled groups into dead ones,
/// which are forgotten, and live ones, which are terminated.
fn leftovers_batch() {
  let batch = std::mem::take(&mut *lock(&SETTLED));
  if batch.is_empty() {
    return;
  }
  terminate_now(forget_dead(batch));
}

/// One scan: forgets the groups whose tree is dead and returns the live ones.
fn forget_dead(groups: Vec<ProcessGroup>) -> Vec<ProcessGroup> {
  let snapshot = Snapshot::take();
  let protected = snapshot.protected();
  let (alive, dead): (Vec<_>, Vec<_>) = groups
    .into_iter()
    .partition(|g| snapshot.tree_alive(g, &protected));
  tracker::forget(&dead);
  alive
}

/// SIGKILL to every tracked tree, synchronously and without grace
/// (CONTRACT.md §4 item 4): for `process.on('exit')`. It never waits for the
/// processes to die.
pub fn kill_all_sync() {
  let groups = tracker::tracked_groups();
  signal_trees(&groups, Signal::SIGKILL);
}

/// SIGKILL to the tree, synchronously, without grace.
pub fn kill_now(group: &ProcessGroup) {
  signal_tree(group, Signal::SIGKILL);
}

/// SIGKILL to every tree of `groups` that is still tracked (not yet found
/// dead), synchronously, without grace, sharing the scans.
pub fn kill_now_all(groups: &[ProcessGroup]) {
  let tracked = tracker::tracked_groups();
  let live: Vec<ProcessGroup> = groups
    .iter()
    .filter(|g| tracked.contains(g))
    .cloned()
    .collect();
  if !live.is_empty() {
    signal_trees(&live, Signal::SIGKILL);
  }
}

/// The live processes of the tree (zombies excluded), from one scan.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub fn tree_pids(group: &ProcessGroup) -> Vec<u32> {
  let snapshot = Snapshot::take();
  let protected = snapshot.protected();
  snapshot
    .plan(group, &protected)
    .members
    .iter()
    .map(|s| s.pid)
    .collect()
}

/// Whether any process of the tree is still alive (zombies do not count).
pub fn tree_alive(group: &ProcessGroup) -> bool {
  let snapshot = Snapshot::take();
  snapshot.tree_alive(group, &snapshot.protected())
}
