//! How a reactor learns that a leader exited: a pidfd where Linux gives one,
//! else a waiter thread for that child alone.

use std::fs::File;
use std::io;
use std::sync::Arc;

use super::handlers::ExitHandler;
use crate::process::Child;

/// A pidfd for `pid` (our unreaped child, so the pid cannot be reused
/// meanwhile); readable once it exits. `None` before Linux 5.3, in sandboxes
/// that refuse the call, and on other systems.
pub(super) fn pidfd(pid: u32) -> Option<File> {
  #[cfg(target_os = "linux")]
  {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
      return None;
    }
    // pidfd_open descriptors are close-on-exec.
    // SAFETY: the syscall returned a new descriptor that nothing else owns.
    Some(unsafe { File::from_raw_fd(fd as i32) })
  }
  #[cfg(not(target_os = "linux"))]
  {
    let _ = pid;
    None
  }
}

/// The fallback: a thread that waits for `child` and then calls `handler`.
pub(super) fn on_thread(mut child: Child, handler: Arc<dyn ExitHandler>) -> io::Result<()> {
  std::thread::Builder::new()
    .name("taskstream-wait".into())
    .spawn(move || {
      let status = child.wait();
      handler.exited(status);
    })
    .map(|_| ())
}
