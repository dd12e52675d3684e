//! Which processes make up a task's tree, from one process scan (CONTRACT.md
//! §4 item 5): the process group (when the pgid is provably still ours), every
//! process carrying the task's environment tag, and all their descendants by
//! parent links. The host, its process group and its ancestors are never part
//! of a tree.

use std::collections::{HashMap, HashSet};

use once_cell::sync::Lazy;

use super::proc_table::{self, ProcStat};
use crate::process::group::ProcessGroup;

/// Our own start time. Tagged processes were started by us or our children, so
/// they are never older than we are; older processes' environments are not read.
static OWN_START_TIME: Lazy<u64> =
  Lazy::new(|| proc_table::start_time(std::process::id()).unwrap_or(0));

/// One scan of every process, with the tags of those younger than the host.
pub(super) struct Snapshot {
  stats: Vec<ProcStat>,
  tags: HashMap<u32, Vec<String>>,
  /// The process table was readable (see `proc_table::available`).
  table: bool,
}

/// Pids and groups that must never receive a signal: 0, 1, the host, its
/// ancestors, their process groups and those groups' leaders.
pub(super) struct Protected {
  pids: HashSet<u32>,
  pgids: HashSet<u32>,
}

/// What to signal for one group.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct KillPlan {
  /// The pgid to `killpg`, if it is verified to be ours and not protected.
  pub(super) group: Option<u32>,
  /// Every live member of the tree (including members of `group`).
  pub(super) members: Vec<ProcStat>,
}

impl Protected {
  /// A protected process, or any process of a protected group: a task's
  /// processes live in sessions our children created, so they can never
  /// share a process group with the host or its ancestors.
  fn covers(&self, stat: &ProcStat) -> bool {
    self.pids.contains(&stat.pid) || self.pgids.contains(&stat.pgid)
  }
}

impl Snapshot {
  /// Scans the process table now. Without one the snapshot is empty.
  pub(super) fn take() -> Snapshot {
    let stats = proc_table::all_stats();
    let mut buf = Vec::new();
    let tags = stats
      .iter()
      .filter(|s| !s.zombie && proc_table::may_descend_from(s.start_time, *OWN_START_TIME))
      .map(|s| (s.pid, proc_table::env_tags_with(s.pid, &mut buf)))
      .filter(|(_, tags)| !tags.is_empty())
      .collect();
    Snapshot {
      stats,
      tags,
      table: proc_table::available(),
    }
  }

  #[cfg(test)]
  pub(super) fn from_parts(stats: Vec<ProcStat>, tags: HashMap<u32, Vec<String>>) -> Snapshot {
    Snapshot {
      stats,
      tags,
      table: true,
    }
  }

  fn stat(&self, pid: u32) -> Option<&ProcStat> {
    self.stats.iter().find(|s| s.pid == pid)
  }

  fn has_tag(&self, pid: u32, tag: &str) -> bool {
    self
      .tags
      .get(&pid)
      .is_some_and(|tags| tags.iter().any(|t| t == tag))
  }

  /// The host's protected set, with its ancestors taken from this scan. The
  /// leaders of the protected groups are protected too.
  pub(super) fn protected(&self) -> Protected {
    let mut pids = HashSet::from([0, 1]);
    let mut pgids = HashSet::from([0, 1, nix::unistd::getpgrp().as_raw() as u32]);
    let mut pid = std::process::id();
    while pids.insert(pid) {
      let Some(stat) = self.stat(pid) else { break };
      pgids.insert(stat.pgid);
      pid = stat.ppid;
    }
    pids.extend(&pgids);
    Protected { pids, pgids }
  }

  /// Whether `group.pgid` still names the group we created. Its leader, if
  /// present, must have the recorded start time. Once the leader is gone the
  /// pgid cannot be reused while one of our processes is in the group, so a
  /// member carrying the task tag proves it. Without a process table nothing
  /// can be checked and the pgid is trusted.
  fn group_is_ours(&self, group: &ProcessGroup) -> bool {
    if !self.table {
      return true;
    }
    match self.stat(group.pgid) {
      Some(leader) => group.leader_start_time == Some(leader.start_time),
      None => self
        .stats
        .iter()
        .any(|s| s.pgid == group.pgid && self.has_tag(s.pid, &group.task_tag)),
    }
  }

  /// The processes of `group`'s tree and whether its pgid may be signalled.
  pub(super) fn plan(&self, group: &ProcessGroup, protected: &Protected) -> KillPlan {
    let ours = self.group_is_ours(group);
    let roots: Vec<u32> = self
      .stats
      .iter()
      .filter(|s| (ours && s.pgid == group.pgid) || self.has_tag(s.pid, &group.task_tag))
      .map(|s| s.pid)
      .collect();
    let mut tree: HashSet<u32> = roots.iter().copied().collect();
    tree.extend(
      proc_table::descendants_in(&self.stats, &roots)
        .into_iter()
        .map(|(pid, _)| pid),
    );
    let members = self
      .stats
      .iter()
      .filter(|s| tree.contains(&s.pid) && !s.zombie && !protected.covers(s))
      .copied()
      .collect();
    let may_killpg = ours && group.pgid > 1 && !protected.pgids.contains(&group.pgid);
    KillPlan {
      group: may_killpg.then_some(group.pgid),
      members,
    }
  }

  /// Whether any process of `group`'s tree is alive (zombies do not count).
  /// Without a process table, whether the process group still has a member.
  pub(super) fn tree_alive(&self, group: &ProcessGroup, protected: &Protected) -> bool {
    if group
      .cgroup
      .as_deref()
      .is_some_and(super::cgroup::populated)
    {
      return true;
    }
    if self.table {
      return !self.plan(group, protected).members.is_empty();
    }
    let pgid = nix::unistd::Pid::from_raw(group.pgid as i32);
    group.pgid > 1 && nix::sys::signal::killpg(pgid, None).is_ok()
  }
}
