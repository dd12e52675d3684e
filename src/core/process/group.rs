//! The process group a spawned child leads (CONTRACT.md §2.10 "Abort handling
//! and kill", §4 item 5).

/// A process group taskstream created: the child called `setsid`, so its pid
/// is the group id. The leader's start time proves a later process with that
/// pid is someone else; the tag finds descendants that left the group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessGroup {
  pub pgid: u32,
  /// The leader's start time at spawn (`proc_table::start_time`); `None`
  /// without a readable process table.
  pub leader_start_time: Option<u64>,
  /// The value of `TASKSTREAM_TASK_ID` in the children's environment.
  pub task_tag: String,
  /// The task's own cgroup (see `cgroup.rs`), where the host could make one.
  pub cgroup: Option<std::path::PathBuf>,
  /// Where its `limits` live (API.md §6.8; `unix/cgroup_limits.rs`), for a task with limits.
  pub limits: Option<std::sync::Arc<super::limits::TaskLimits>>,
}
