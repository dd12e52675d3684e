//! Steps that run in the forked child between `fork` and `exec` (the
//! watchdog, and task children where `posix_spawn` cannot be used; see
//! spawn.rs). Everything here must be async-signal-safe: plain system calls
//! on stack values, no allocation, no locks (another thread may have held one
//! at fork time).

use std::io;

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// Moves the calling (just forked) process into the cgroup whose
/// `cgroup.procs` is open as `fd`: `0` names the writer. One `write`, which
/// is async-signal-safe; a failure leaves the task to the other mechanisms.
pub(super) fn enter_cgroup(fd: libc::c_int) {
  // SAFETY: writes one byte from a static buffer to a descriptor we own.
  unsafe {
    libc::write(fd, b"0".as_ptr().cast(), 1);
  }
}

/// Moves the calling process into a cgroup of its `limits` (fd: its `cgroup.procs`); unlike
/// [`enter_cgroup`], a failure is the spawn's error (a task never runs without its limits).
pub(super) fn enter_limit_cgroup(fd: libc::c_int) -> io::Result<()> {
  // SAFETY: as in `enter_cgroup`; `last_os_error` reads errno only.
  if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } == 1 {
    Ok(())
  } else {
    Err(io::Error::last_os_error())
  }
}

/// `setsid()`: a new session and process group led by the child, with no
/// controlling terminal (CONTRACT.md §2.10 step 3).
pub(super) fn new_session() -> io::Result<()> {
  nix::unistd::setsid()?;
  Ok(())
}

/// Every catchable signal back to its default action and an empty signal mask.
/// Node ignores SIGPIPE, and an ignored disposition survives `exec`.
pub(super) fn reset_signals() {
  set_disposition(
    Signal::iterator().filter(|s| !matches!(s, Signal::SIGKILL | Signal::SIGSTOP)),
    SigHandler::SigDfl,
  );
  reset_realtime_signals();
  // Best effort: the mask only delays signals, it never stops a SIGKILL.
  let _ = SigSet::empty().thread_set_mask();
}

/// The real-time signals, which [`Signal`] does not cover. libc keeps the
/// first two or three for itself and refuses them; the `posix_spawn` path
/// resets those too.
#[cfg(target_os = "linux")]
fn reset_realtime_signals() {
  // SAFETY: a zeroed sigaction is a valid SIG_DFL action with an empty mask;
  // SIGRTMIN/SIGRTMAX only read a libc variable and sigaction is
  // async-signal-safe.
  unsafe {
    let mut action: libc::sigaction = std::mem::zeroed();
    action.sa_sigaction = libc::SIG_DFL;
    for signal in libc::SIGRTMIN()..=libc::SIGRTMAX() {
      libc::sigaction(signal, &action, std::ptr::null_mut());
    }
  }
}

#[cfg(not(target_os = "linux"))]
fn reset_realtime_signals() {}

/// `SIG_IGN` for `signals`; an ignored disposition survives `exec`, and a
/// non-interactive bash cannot trap or reset a signal ignored at entry.
pub(super) fn ignore_signals(signals: &[Signal]) {
  set_disposition(signals.iter().copied(), SigHandler::SigIgn);
}

fn set_disposition(signals: impl Iterator<Item = Signal>, handler: SigHandler) {
  let action = SigAction::new(handler, SaFlags::empty(), SigSet::empty());
  for signal in signals {
    // SAFETY: the action is SIG_DFL or SIG_IGN, never a handler function, so
    // no code of ours can run in signal context; sigaction is async-signal-safe.
    let _ = unsafe { sigaction(signal, &action) };
  }
}

/// Marks every descriptor above stderr close-on-exec, so the exec'd program
/// inherits nothing but its stdio (in particular no write end of the
/// watchdog's pipe, whose EOF must mean the host is gone). Best effort: needs
/// Linux 5.11; on older kernels std's own descriptors are CLOEXEC anyway.
#[cfg(target_os = "linux")]
pub(super) fn close_inherited_fds_on_exec() {
  // SAFETY: close_range only sets a flag on descriptors of this (forked)
  // process; it takes plain integers and touches no memory of ours.
  unsafe {
    libc::syscall(
      libc::SYS_close_range,
      3 as libc::c_uint,
      libc::c_uint::MAX,
      libc::CLOSE_RANGE_CLOEXEC,
    );
  }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn close_inherited_fds_on_exec() {}

/// `PR_SET_PDEATHSIG(SIGKILL)` (CONTRACT.md §4 item 6, backstop of the fork
/// path): the kernel kills the child when the thread that forked it exits, so
/// only the dedicated spawner thread may fork task children. If `parent`
/// already died before the call, `getppid()` differs and the child gives up
/// instead of running orphaned.
#[cfg(target_os = "linux")]
pub(super) fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
  // SAFETY: prctl with integer arguments only changes this process's
  // parent-death signal.
  if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) } == -1 {
    return Err(io::Error::last_os_error());
  }
  if nix::unistd::getppid().as_raw() != parent {
    return Err(io::Error::from_raw_os_error(libc::ESRCH));
  }
  Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(super) fn die_with_parent(_parent: libc::pid_t) -> io::Result<()> {
  Ok(())
}
