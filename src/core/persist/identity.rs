//! Proving that a recorded process is still the one recorded, not a later
//! process that reused its pid: its process-table start time and its
//! environment tag, as the kill path checks them (procfs `environ` on Linux,
//! `KERN_PROCARGS2` on macOS, the PEB on Windows). A [`Identity::Stranger`] is never signalled.

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

/// The proof, the same on both families: `proc_table` gives liveness, start time and the
/// environment (procfs `environ` on Linux, `KERN_PROCARGS2` on macOS, the process's PEB on
/// Windows).
mod imp {
  use super::Identity;
  use crate::process::{proc_table, Liveness};

  pub(super) fn prove_with(pid: u32, start_time: Option<u64>, var: &str, tag: &str) -> Identity {
    if !proc_table::available() || pid == 0 || tag.is_empty() {
      return Identity::Stranger;
    }
    let Liveness::Live { start_time: now } = proc_table::liveness(pid) else {
      return Identity::Gone;
    };
    if start_time.is_some_and(|t| Some(t) != now) {
      return Identity::Stranger;
    }
    // A process in the middle of an exec shows an empty environment for a
    // moment (its new image's is not set up yet), and a loaded machine can
    // keep it there for a while: look again before calling a process with
    // the recorded start time a stranger.
    let same_process = || proc_table::liveness(pid) == Liveness::Live { start_time: now };
    let mut tagged = false;
    for wait_ms in [0, 1, 2, 4, 8, 16, 32, 64] {
      std::thread::sleep(std::time::Duration::from_millis(wait_ms));
      tagged = proc_table::env_values(pid, var).iter().any(|v| v == tag);
      if tagged || !same_process() {
        break;
      }
    }
    // The environment was read after the first look: the same start time after it proves the
    // environment was that process's.
    match (tagged, same_process()) {
      (true, true) => Identity::Same,
      (_, false) if proc_table::liveness(pid) == Liveness::Gone => Identity::Gone,
      _ => Identity::Stranger,
    }
  }
}
