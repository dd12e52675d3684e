//! Reader threads yield to the JavaScript thread: under CPU contention (many
//! chatty children on few cores) the event loop must stay responsive, and a
//! reader that falls behind only makes its child block on a full pipe.

/// Niceness added to a pipe reader thread.
const READER_NICENESS: i32 = 15;

/// Lowers the calling thread's scheduling priority (Linux: per-thread nice).
/// Best effort; elsewhere a no-op.
pub fn lower_current_thread_priority() {
  #[cfg(target_os = "linux")]
  // SAFETY: gettid and setpriority have no memory-safety preconditions; a
  // failure only leaves the priority unchanged.
  unsafe {
    let tid = libc::gettid();
    libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, READER_NICENESS);
  }
}

/// Enlarges the pipe behind `file` to 1 MiB (Linux; the system maximum
/// applies): a fast writer then blocks less often and each read carries more.
/// Best effort; elsewhere a no-op.
pub fn enlarge_pipe(file: &std::fs::File) {
  #[cfg(target_os = "linux")]
  {
    use std::os::fd::AsRawFd;
    const PIPE_CAPACITY: libc::c_int = 1 << 20;
    // SAFETY: F_SETPIPE_SZ on a descriptor we own; a failure changes nothing.
    unsafe {
      libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_CAPACITY);
    }
  }
  #[cfg(not(target_os = "linux"))]
  let _ = file;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
  #[test]
  fn lowers_only_the_calling_thread() {
    let main_nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
    let thread_nice = std::thread::spawn(|| {
      super::lower_current_thread_priority();
      unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    })
    .join()
    .unwrap();
    assert_eq!(thread_nice, (main_nice + super::READER_NICENESS).min(19));
    let after = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
    assert_eq!(after, main_nice);
  }
}
