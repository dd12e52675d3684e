//! The process trees one owner started, killed together when that owner goes
//! (a Node environment: the main thread or a Worker, whose teardown must take
//! its tasks along while the rest of the process goes on).

use super::{kill_now_all, tracked_groups, ProcessGroup};

/// The trees one owner started. Trees the tracker already forgot (dead ones)
/// are pruned once the list has doubled since the last prune.
#[derive(Default)]
pub struct OwnedTrees {
  groups: Vec<ProcessGroup>,
  prune_at: usize,
}

impl OwnedTrees {
  /// Records a tree this owner started.
  pub fn adopt(&mut self, group: &ProcessGroup) {
    if self.groups.len() >= self.prune_at.max(64) {
      let tracked = tracked_groups();
      self.groups.retain(|g| tracked.contains(g));
      self.prune_at = self.groups.len() * 2;
    }
    self.groups.push(group.clone());
  }

  /// The owner is going: SIGKILL every tree it started (synchronously).
  pub fn kill_all(&mut self) {
    kill_now_all(&std::mem::take(&mut self.groups));
  }
}
