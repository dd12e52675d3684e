//! Resource limits of a task's tree (API.md §6.8 `limits`), and what the tree used.
//!
//! The limits apply to the whole tree, every process the command starts included, through the
//! containment each platform already gives a task: a cgroup on Linux (v2 where the host's cgroup
//! delegates the controllers, else the v1 hierarchies; `unix/cgroup_limits.rs`), the Job Object
//! on Windows (`windows/job.rs`). macOS has no such container: no rlimit bounds a tree's memory,
//! CPU share or process count (`RLIMIT_NPROC` counts the user's processes, `RLIMIT_CPU` seconds,
//! and the memory rlimits are per process and not enforced), so a task with limits is refused
//! there. Whatever the platform, a limit that cannot be enforced is an error before anything
//! starts (`process::check_limits`), never a task silently without its limit.
//!
//! This file holds what a limit is; the questions every platform answers about a task's tree
//! (`check_limits`, `memory_limit_of`, `memory_limit_hit`, `tree_usage`) are in the seam,
//! `process/mod.rs`.

use std::path::{Path, PathBuf};

/// What a caller asked for; `None` is no limit of that kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
  /// The tree's memory (swap off for the task where the platform can say so).
  pub memory_bytes: Option<u64>,
  /// The tree's CPU time as a percentage of one core (100: one whole core).
  pub cpu_percent: Option<u32>,
  /// How many processes the tree may have at once.
  pub max_processes: Option<u32>,
}

impl Limits {
  /// The smallest `memoryBytes`: a shell and its first command need more.
  pub const MIN_MEMORY_BYTES: u64 = 1 << 20;
  /// The largest `memoryBytes` (2^53 − 1, JavaScript's largest safe integer).
  pub const MAX_MEMORY_BYTES: u64 = (1 << 53) - 1;
  /// `cpuPercent` may ask for up to 100 cores.
  pub const MAX_CPU_PERCENT: u32 = 10_000;
  /// The largest `maxProcesses` (the kernel's own pid limit is 2^22).
  pub const MAX_PROCESSES: u32 = 1 << 22;

  pub fn is_empty(&self) -> bool {
    self.memory_bytes.is_none() && self.cpu_percent.is_none() && self.max_processes.is_none()
  }
}

/// Where a task's limits live on Linux (`unix/cgroup_limits.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitDirs {
  /// cgroup v2: in the task's own cgroup.
  V2(PathBuf),
  /// cgroup v1: one directory per hierarchy (memory and cpuacct always, for the usage).
  V1(V1Dirs),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct V1Dirs {
  pub memory: Option<PathBuf>,
  pub cpu: Option<PathBuf>,
  pub cpuacct: Option<PathBuf>,
  pub pids: Option<PathBuf>,
}

impl V1Dirs {
  /// Every directory, each once (`cpu` and `cpuacct` may be one hierarchy).
  pub fn all(&self) -> Vec<&Path> {
    let mut dirs: Vec<&Path> = Vec::new();
    for dir in [&self.memory, &self.cpu, &self.cpuacct, &self.pids]
      .into_iter()
      .flatten()
    {
      if !dirs.contains(&dir.as_path()) {
        dirs.push(dir);
      }
    }
    dirs
  }
}

/// What a tree with limits used (`entry.usage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
  /// CPU time of every process of the tree, user and system, in ms.
  pub cpu_ms: Option<u64>,
  /// The tree's peak memory, in bytes.
  pub peak_memory_bytes: Option<u64>,
}

/// A task's limits and where they live (`ProcessGroup::limits`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskLimits {
  pub limits: Limits,
  pub dirs: LimitDirs,
}

/// How often a run with a memory limit looks whether its tree hit it.
pub const MEMORY_LIMIT_POLL: std::time::Duration = std::time::Duration::from_millis(100);
