//! Killing a task's process tree (CONTRACT.md §2.10 "Abort handling and
//! kill", §4 items 4 and 5): SIGTERM, then SIGKILL after 200 ms from the Rust
//! timer thread. Only processes of that task are signalled, by pid (checked
//! against its start time) or by our verified pgid, never by name.

use std::collections::HashSet;
use std::time::Duration;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use super::group::ProcessGroup;
use super::procfs::{self, ProcStat};
use super::timer;
use super::tree::Snapshot;

/// Grace between SIGTERM and SIGKILL (CONTRACT.md §1.6 `SIGKILL_TIMEOUT_MS`).
pub const SIGKILL_GRACE: Duration = Duration::from_millis(200);

/// Sends `signal` to `group`'s tree: the process group when its pgid is
/// verified ours, and each member outside it (tagged processes, descendants)
/// by pid after re-checking its start time; then once more to processes that
/// were forked meanwhile. Never the host, its group or its ancestors.
pub fn signal_tree(group: &ProcessGroup, signal: Signal) {
  signal_trees(std::slice::from_ref(group), signal);
}

/// Sends `signal` to the trees of `groups`. One `/proc` snapshot finds each
/// tree (group members, tagged processes and their descendants); `killpg`
/// reaches the group when its pgid is verified ours, and every member outside
/// it is signalled by pid after re-checking its start time. A second snapshot
/// then catches processes forked meanwhile. Each process is signalled once.
pub(super) fn signal_trees(groups: &[ProcessGroup], signal: Signal) {
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
  let second = Snapshot::take();
  for group in groups {
    for member in second.plan(group, &protected).members {
      if covered.insert((member.pid, member.start_time)) {
        signal_checked(&member, signal);
      }
    }
  }
}

/// Signals `member` only if it is still the process seen in the snapshot.
fn signal_checked(member: &ProcStat, signal: Signal) {
  if procfs::is_running(member.pid, member.start_time) {
    let _ = kill(Pid::from_raw(member.pid as i32), signal);
  }
}

/// SIGTERM to the tree now; SIGKILL to whatever of it is alive
/// [`SIGKILL_GRACE`] later, from the timer thread, so it happens even if the
/// JavaScript thread is busy or exiting.
pub fn terminate(group: &ProcessGroup) {
  signal_tree(group, Signal::SIGTERM);
  let group = group.clone();
  timer::schedule(SIGKILL_GRACE, move || signal_tree(&group, Signal::SIGKILL));
}

/// SIGKILL to the tree, synchronously, without grace.
pub fn kill_now(group: &ProcessGroup) {
  signal_tree(group, Signal::SIGKILL);
}

/// Whether any process of the tree is still alive (zombies do not count).
pub fn tree_alive(group: &ProcessGroup) -> bool {
  let snapshot = Snapshot::take();
  snapshot.tree_alive(group, &snapshot.protected())
}
