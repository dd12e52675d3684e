//! Waiting for a leader: `waitpid`, the Unix side of `windows/wait.rs`. A leaf that
//! `process::spawn`'s `Child` uses without reaching into the spawn code.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// `waitpid(pid)`, retried on `EINTR`; `None` when `no_hang` and it still runs.
pub(in crate::process) fn waitpid(pid: u32, no_hang: bool) -> io::Result<Option<ExitStatus>> {
  let flags = if no_hang { libc::WNOHANG } else { 0 };
  let mut status = 0;
  loop {
    // SAFETY: `status` is a valid out-pointer for the duration of the call.
    match unsafe { libc::waitpid(pid as libc::pid_t, &mut status, flags) } {
      -1 => {
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
          return Err(error);
        }
      }
      0 => return Ok(None),
      _ => return Ok(Some(ExitStatus::from_raw(status))),
    }
  }
}
