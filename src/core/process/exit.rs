//! How a child ended, in the terms of CONTRACT.md §1.6 (`exitCode`, numeric
//! `signal`) and §2.10 (`Killed by signal <SIGNAME>`).

use std::process::ExitStatus;

/// Exit code, or the number of the signal that killed the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitStatusInfo {
  pub code: Option<i32>,
  pub signal: Option<i32>,
}

impl From<ExitStatus> for ExitStatusInfo {
  fn from(status: ExitStatus) -> Self {
    ExitStatusInfo {
      code: status.code(),
      signal: terminating_signal(status),
    }
  }
}

#[cfg(unix)]
fn terminating_signal(status: ExitStatus) -> Option<i32> {
  std::os::unix::process::ExitStatusExt::signal(&status)
}

#[cfg(not(unix))]
fn terminating_signal(_status: ExitStatus) -> Option<i32> {
  None
}

/// `"SIGTERM"`, `"SIGKILL"`, … for this platform's numbering; `"SIG<n>"` for a
/// number the platform does not name (CONTRACT.md §2.10 `settleFromExit`).
pub fn signal_name(sig: i32) -> String {
  platform_signal_name(sig).map_or_else(|| format!("SIG{sig}"), str::to_string)
}

#[cfg(unix)]
fn platform_signal_name(sig: i32) -> Option<&'static str> {
  use nix::sys::signal::Signal;
  Signal::try_from(sig).ok().map(Signal::as_str)
}

#[cfg(not(unix))]
fn platform_signal_name(_sig: i32) -> Option<&'static str> {
  None
}

/// The number of a signal named as [`signal_name`] names it (`"SIGTERM"` → 15 on Linux);
/// `None` for a name this platform does not know (Windows knows none).
pub fn signal_number(name: &str) -> Option<i32> {
  #[cfg(unix)]
  return name
    .parse::<nix::sys::signal::Signal>()
    .ok()
    .map(|signal| signal as i32);
  #[cfg(not(unix))]
  {
    let _ = name;
    None
  }
}
