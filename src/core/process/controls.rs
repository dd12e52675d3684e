//! What API.md §6.8 asks of a task's tree, with the same questions on every platform family:
//! the TCP ports it listens on, whether `limits` can be enforced, and what the limits saw.

#[cfg(any(target_os = "linux", target_os = "macos"))]
use super::unix;
#[cfg(windows)]
use super::windows;
use super::{Limits, ProcessGroup, Usage};

/// The TCP ports a task's tree listens on (API.md §6.8), sorted; `None` where this platform
/// has no way to tell (the BSDs).
pub fn listening_ports(group: &ProcessGroup) -> Option<std::io::Result<Vec<u16>>> {
  #[cfg(any(target_os = "linux", target_os = "macos"))]
  return Some(unix::listening_ports(group));
  #[cfg(windows)]
  return Some(windows::listening_ports(group));
  #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
  {
    let _ = group;
    None
  }
}

/// Whether [`listening_ports`] works on this platform.
pub const PORTS_SUPPORTED: bool = cfg!(any(target_os = "linux", target_os = "macos", windows));

/// Whether `limits` can be enforced on this host; the error says why not, for the Error that
/// `start()` and `executeBackground()` throw before anything starts.
pub fn check_limits(limits: &Limits) -> Result<(), String> {
  if limits.is_empty() {
    return Ok(());
  }
  #[cfg(target_os = "linux")]
  return unix::cgroup_limits::check_supported(limits);
  #[cfg(windows)]
  return windows::job::check_limits_supported(limits);
  #[cfg(not(any(target_os = "linux", windows)))]
  Err(LIMITS_UNSUPPORTED.to_owned())
}

/// The refusal on platforms with no container for a tree (macOS).
#[cfg(not(any(target_os = "linux", windows)))]
pub const LIMITS_UNSUPPORTED: &str = "limits are not supported on this platform: nothing bounds a \
  process tree's memory, CPU share or process count here (macOS has no cgroups or Job Objects, \
  and its rlimits are per process or per user)";

/// The tree's `memoryBytes` when the kernel (or the Job Object) stopped it there; `None` while
/// it has not, or for a task without a memory limit.
pub fn memory_limit_hit(group: &ProcessGroup) -> Option<u64> {
  #[cfg(target_os = "linux")]
  return group.limits.as_ref().and_then(|task| {
    let bytes = task.limits.memory_bytes?;
    unix::cgroup_limits::memory_limit_hit(&task.dirs).then_some(bytes)
  });
  #[cfg(windows)]
  return group.job().memory_limit_hit();
  #[cfg(not(any(target_os = "linux", windows)))]
  {
    let _ = group;
    None
  }
}

/// The `memoryBytes` the tree of `group` runs under, if any: whether its run must watch for
/// [`memory_limit_hit`].
pub fn memory_limit_of(group: &ProcessGroup) -> Option<u64> {
  #[cfg(windows)]
  return group.job().limits().memory_bytes;
  #[cfg(not(windows))]
  return group
    .limits
    .as_ref()
    .and_then(|task| task.limits.memory_bytes);
}

/// What the tree of `group` used so far; `None` for a task without limits.
pub fn tree_usage(group: &ProcessGroup) -> Option<Usage> {
  #[cfg(target_os = "linux")]
  return group
    .limits
    .as_ref()
    .map(|task| unix::cgroup_limits::usage(&task.dirs));
  #[cfg(windows)]
  return group.job().usage();
  #[cfg(not(any(target_os = "linux", windows)))]
  {
    let _ = group;
    None
  }
}
