//! Reader threads yield to the JavaScript thread: under CPU contention (many
//! chatty children on few cores) the event loop must stay responsive, and a
//! reader that falls behind only makes its child block on a full pipe.
//!
//! Two settings, both allowed without privileges and both per thread:
//! - nice 15, so a reader gets a small share of a contended CPU;
//! - on Linux 6.12 and later, a custom time slice (`sched_attr.sched_runtime`
//!   for `SCHED_OTHER`) longer than the default one. The EEVDF scheduler lets
//!   a task that wakes with a shorter slice than the running one preempt it at
//!   once (`PREEMPT_SHORT`) instead of waiting until the running task used up
//!   its protected slice: the event loop's timer wakeups then no longer queue
//!   behind a reader that streams a firehose. Earlier kernels ignore it.
//!
//! Measured with `bench/monitor.mjs` (a) and `bench/shells.mjs` (a), A/B on
//! the same binary otherwise: a single firehose's event-loop p99 went from
//! 0.2-1.6 ms above idle (nice alone) to -0.1-0.6 ms with a 4 ms slice; a
//! 20 ms slice helped the firehose as much but left the JS thread waiting
//! longer next to a shell writing 1 GiB.

/// Niceness of a pipe reader thread (a host that runs nicer keeps its own).
const READER_NICENESS: i32 = 15;

/// A reader's time slice: longer than any default slice (0.75 ms times at
/// most 4), within the kernel's 0.1-100 ms range for custom slices, and short
/// enough that other work on the same CPU is not held up much longer.
#[cfg(target_os = "linux")]
const READER_SLICE_NS: u64 = 4_000_000;

/// Lowers the calling thread's scheduling priority (Linux: per-thread nice and
/// time slice). Best effort; elsewhere a no-op.
pub fn lower_current_thread_priority() {
  #[cfg(target_os = "linux")]
  {
    // SAFETY: gettid and getpriority have no memory-safety preconditions.
    let (tid, current) = unsafe {
      let tid = libc::gettid();
      (
        tid,
        libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t),
      )
    };
    let nice = current.max(READER_NICENESS);
    // SAFETY: sched_attr is plain data; sched_setattr reads `size` bytes of it
    // and changes only the calling thread (pid 0). A failure changes nothing.
    let with_slice = unsafe {
      let mut attr: libc::sched_attr = std::mem::zeroed();
      attr.size = std::mem::size_of::<libc::sched_attr>() as u32;
      attr.sched_policy = libc::SCHED_OTHER as u32;
      attr.sched_nice = nice;
      attr.sched_runtime = READER_SLICE_NS;
      libc::syscall(
        libc::SYS_sched_setattr,
        0,
        &attr as *const libc::sched_attr,
        0,
      ) == 0
    };
    if !with_slice {
      // SAFETY: gettid and setpriority have no memory-safety preconditions; a
      // failure only leaves the priority unchanged.
      unsafe {
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
      }
    }
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
  /// The calling thread's (nice, custom slice in ns); the slice is 0 where the
  /// kernel has no custom slices.
  fn current_thread_scheduling() -> (i32, u64) {
    // SAFETY: sched_getattr writes at most `size` bytes into `attr`.
    unsafe {
      let mut attr: libc::sched_attr = std::mem::zeroed();
      let size = std::mem::size_of::<libc::sched_attr>() as libc::c_uint;
      let r = libc::syscall(
        libc::SYS_sched_getattr,
        0,
        &mut attr as *mut libc::sched_attr,
        size,
        0,
      );
      assert_eq!(r, 0, "sched_getattr: {}", std::io::Error::last_os_error());
      (attr.sched_nice, attr.sched_runtime)
    }
  }

  fn kernel_has_custom_slices() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut parts = release
      .trim()
      .split(['.', '-'])
      .map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap(), parts.next().unwrap()) >= (6, 12)
  }

  #[test]
  fn lowers_only_the_calling_thread() {
    let (main_nice, main_slice) = current_thread_scheduling();
    let (thread_nice, thread_slice) = std::thread::spawn(|| {
      super::lower_current_thread_priority();
      current_thread_scheduling()
    })
    .join()
    .unwrap();
    assert_eq!(thread_nice, main_nice.max(super::READER_NICENESS));
    if kernel_has_custom_slices() {
      assert_eq!(thread_slice, super::READER_SLICE_NS);
    }
    assert_eq!(current_thread_scheduling(), (main_nice, main_slice));
  }
}
