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
#[cfg(target_os = "linux")]
const READER_NICENESS: i32 = 15;

/// A reader's time slice: longer than any default slice (0.75 ms times at
/// most 4), within the kernel's 0.1-100 ms range for custom slices, and short
/// enough that other work on the same CPU is not held up much longer.
#[cfg(target_os = "linux")]
const READER_SLICE_NS: u64 = 4_000_000;

/// Lowers the calling thread's scheduling priority (Linux: per-thread nice and
/// time slice; macOS: the `utility` QoS class, below the JavaScript thread's
/// default class but without the I/O throttling of `background`; Windows:
/// `THREAD_PRIORITY_BELOW_NORMAL`). Best effort; elsewhere a no-op.
pub fn lower_current_thread_priority() {
  #[cfg(windows)]
  // SAFETY: changes the calling thread's priority only (a pseudo-handle).
  unsafe {
    use windows_sys::Win32::System::Threading::{
      GetCurrentThread, SetThreadPriority, THREAD_PRIORITY_BELOW_NORMAL,
    };
    SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_BELOW_NORMAL);
  }
  #[cfg(target_vendor = "apple")]
  // SAFETY: changes the calling thread's QoS class only; no memory is passed.
  unsafe {
    libc::pthread_set_qos_class_self_np(libc::qos_class_t::QOS_CLASS_UTILITY, 0);
  }
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

/// How many pipes are enlarged at a time, process-wide. One firehose streams
/// fastest, with the event loop least delayed, through a 1 MiB pipe; sixteen
/// at once do better with the default 64 KiB each (16 MiB of pipe pages in
/// flight thrash the caches, and the writers run longer between blocks):
/// `bench/monitor.mjs` (f) went from 3.0-4.6 ms to 0.5-1.1 ms event-loop p99
/// with unenlarged pipes, while (a) went from 0.3-1.3 ms to 2.8-3.3 ms.
const MAX_ENLARGED_PIPES: usize = 4;

static ENLARGED_PIPES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Holds one of the [`MAX_ENLARGED_PIPES`] slots while a reader runs; the slot
/// is given back on drop (the pipe itself keeps its size until it closes).
#[derive(Debug)]
pub struct EnlargedPipe {
  holds_slot: bool,
}

impl EnlargedPipe {
  /// True when this pipe got the larger size.
  pub fn is_enlarged(&self) -> bool {
    self.holds_slot
  }
}

impl Drop for EnlargedPipe {
  fn drop(&mut self) {
    if self.holds_slot {
      ENLARGED_PIPES.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
  }
}

/// Enlarges the pipe behind `file` to 1 MiB (Linux; the system maximum
/// applies) when fewer than [`MAX_ENLARGED_PIPES`] readers hold an enlarged
/// pipe: a fast writer then blocks less often and each read carries more.
/// Keep the returned value while reading. Best effort; elsewhere a no-op.
pub fn enlarge_pipe(file: &std::fs::File) -> EnlargedPipe {
  use std::sync::atomic::Ordering;
  let took_slot = ENLARGED_PIPES
    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
      (n < MAX_ENLARGED_PIPES).then_some(n + 1)
    })
    .is_ok();
  let pipe = EnlargedPipe {
    holds_slot: took_slot,
  };
  if took_slot && !resize_pipe(file) {
    drop(pipe);
    return EnlargedPipe { holds_slot: false };
  }
  pipe
}

fn resize_pipe(file: &std::fs::File) -> bool {
  #[cfg(target_os = "linux")]
  {
    use std::os::fd::AsRawFd;
    const PIPE_CAPACITY: libc::c_int = 1 << 20;
    // SAFETY: F_SETPIPE_SZ on a descriptor we own; a failure changes nothing.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_CAPACITY) >= 0 }
  }
  #[cfg(not(target_os = "linux"))]
  {
    let _ = file;
    false
  }
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

  #[test]
  fn at_most_a_few_pipes_are_enlarged_at_a_time() {
    let pipe_size = |file: &std::fs::File| {
      use std::os::fd::AsRawFd;
      unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETPIPE_SZ) }
    };
    let pipes: Vec<(std::fs::File, std::fs::File)> = (0..super::MAX_ENLARGED_PIPES + 2)
      .map(|_| {
        let (r, w) = std::io::pipe().unwrap();
        (
          std::fs::File::from(std::os::fd::OwnedFd::from(r)),
          std::fs::File::from(std::os::fd::OwnedFd::from(w)),
        )
      })
      .collect();
    // Other tests may hold slots too: count what this test got.
    let guards: Vec<_> = pipes.iter().map(|(r, _)| super::enlarge_pipe(r)).collect();
    let enlarged = guards.iter().filter(|g| g.is_enlarged()).count();
    assert!(enlarged <= super::MAX_ENLARGED_PIPES);
    assert!(guards
      .iter()
      .skip(super::MAX_ENLARGED_PIPES)
      .all(|g| !g.is_enlarged()));
    for ((r, _), g) in pipes.iter().zip(&guards) {
      assert_eq!(pipe_size(r) >= 1 << 20, g.is_enlarged());
    }
    drop(guards);
    // Slots come back: a new pipe is enlarged again (unless other tests hold them all).
    let (r, _w) = std::io::pipe().unwrap();
    let r = std::fs::File::from(std::os::fd::OwnedFd::from(r));
    let again = super::enlarge_pipe(&r);
    assert_eq!(pipe_size(&r) >= 1 << 20, again.is_enlarged());
  }
}
