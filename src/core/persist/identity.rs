//! Proving that a recorded process is still the one recorded, not a later
//! process that reused its pid: its process-table start time and its
//! environment tag, as the kill path checks them (procfs `environ` on Linux,
//! `KERN_PROCARGS2` on macOS). A [`Identity::Stranger`] is never signalled.

use crate::process::TASK_TAG_VAR;

/// What [`prove`] found at a recorded pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
  /// The recorded process, alive.
  Same,
  /// No live process has the pid (it exited; a zombie counts as gone).
  Gone,
  /// A live process with that pid whose start time or tag differ, or one
  /// that cannot be proved (no readable process table, an unreadable
  /// environment). Never signalled.
  Stranger,
}

/// Proves the task leader recorded as (`pid`, `start_time`) with
/// `TASKSTREAM_TASK_ID=<tag>` in its environment.
pub fn prove(pid: u32, start_time: Option<u64>, tag: &str) -> Identity {
  prove_with(pid, start_time, TASK_TAG_VAR, tag)
}

/// [`prove`] with the tag in the environment variable `var` (the keeper
/// carries `TASKSTREAM_KEEPER_ID`, see [`super::KEEPER_TAG_VAR`]). A
/// recorded start time of `None` (no process table when it was recorded)
/// leaves the tag alone to prove it.
pub fn prove_with(pid: u32, start_time: Option<u64>, var: &str, tag: &str) -> Identity {
  imp::prove_with(pid, start_time, var, tag)
}

#[cfg(unix)]
mod imp {
  use super::Identity;
  use crate::process::proc_table;

  pub(super) fn prove_with(pid: u32, start_time: Option<u64>, var: &str, tag: &str) -> Identity {
    if !proc_table::available() || pid == 0 || tag.is_empty() {
      return Identity::Stranger;
    }
    let Some(stat) = proc_table::stat(pid) else {
      return Identity::Gone;
    };
    if stat.zombie {
      return Identity::Gone;
    }
    if start_time.is_some_and(|t| t != stat.start_time) {
      return Identity::Stranger;
    }
    // A process in the middle of an exec shows an empty environment for a
    // moment (its new image's is not set up yet), and a loaded machine can
    // keep it there for a while: look again before calling a process with
    // the recorded start time a stranger.
    let mut tagged = false;
    for wait_ms in [0, 1, 2, 4, 8, 16, 32, 64] {
      std::thread::sleep(std::time::Duration::from_millis(wait_ms));
      tagged = proc_table::env_values(pid, var).iter().any(|v| v == tag);
      if tagged || proc_table::start_time(pid) != Some(stat.start_time) {
        break;
      }
    }
    // The environment was read after the stat: the same start time after it
    // proves the environment was that process's.
    let still = proc_table::start_time(pid) == Some(stat.start_time);
    match (tagged, still) {
      (true, true) => Identity::Same,
      (_, false) if proc_table::stat(pid).is_none() => Identity::Gone,
      _ => Identity::Stranger,
    }
  }
}

#[cfg(not(unix))]
mod imp {
  use super::Identity;

  pub(super) fn prove_with(
    _pid: u32,
    _start_time: Option<u64>,
    _var: &str,
    _tag: &str,
  ) -> Identity {
    Identity::Stranger
  }
}
