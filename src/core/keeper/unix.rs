//! What the keeper does differently on Unix: it leaves its host's session first thing, stops
//! on SIGTERM, SIGINT and SIGHUP, and records its task's group, start time and cgroup.

use std::fs::OpenOptions;
use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::persist::records::TaskProcess;
use crate::process::{signal_name, ProcessGroup};

/// The last of SIGTERM, SIGINT, SIGHUP received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
  RECEIVED.store(signal, Ordering::SeqCst);
}

pub(super) fn install_signal_handlers() {
  // SAFETY: the handler only stores into an atomic (async-signal-safe).
  unsafe {
    let mut action: libc::sigaction = std::mem::zeroed();
    action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    libc::sigemptyset(&mut action.sa_mask);
    action.sa_flags = libc::SA_RESTART;
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
      libc::sigaction(signal, &action, std::ptr::null_mut());
    }
    libc::signal(libc::SIGPIPE, libc::SIG_IGN);
  }
}

/// The stop signal received, by name (`None`: none yet).
pub(super) fn received_signal() -> Option<String> {
  match RECEIVED.load(Ordering::SeqCst) {
    0 => None,
    signal => Some(signal_name(signal)),
  }
}

/// First thing in the keeper (the host starts it with a plain posix_spawn): a session of its own
/// (no terminal, out of the host's group, so a signal to the host's group or terminal does not
/// reach it), default signal dispositions (Node ignores SIGPIPE) and an empty mask, and no
/// descriptor but stdio (in particular no pipe of the host's). No parent-death signal.
pub(super) fn detach() -> io::Result<()> {
  // SAFETY: plain system calls on stack values.
  unsafe {
    if libc::setsid() == -1 && libc::getsid(0) != libc::getpid() {
      return Err(io::Error::last_os_error());
    }
    let mut action: libc::sigaction = std::mem::zeroed();
    action.sa_sigaction = libc::SIG_DFL;
    for signal in 1..32 {
      if signal != libc::SIGKILL && signal != libc::SIGSTOP {
        libc::sigaction(signal, &action, std::ptr::null_mut());
      }
    }
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
  }
  close_inherited();
  Ok(())
}

#[cfg(target_os = "linux")]
fn close_inherited() {
  // SAFETY: closes descriptors of this process that nothing in it uses yet (the keeper has
  // opened nothing; std's runtime holds none).
  unsafe {
    libc::syscall(
      libc::SYS_close_range,
      3 as libc::c_uint,
      libc::c_uint::MAX,
      0 as libc::c_uint,
    );
  }
}

#[cfg(not(target_os = "linux"))]
fn close_inherited() {
  // SAFETY: as above; descriptors that are not open fail harmlessly.
  unsafe {
    let max = libc::getdtablesize().clamp(3, 65_536);
    for fd in 3..max {
      libc::close(fd);
    }
  }
}

/// Points stdin and stdout at `/dev/null` (after the handshake).
pub(super) fn close_stdio() {
  if let Ok(null) = OpenOptions::new().read(true).write(true).open("/dev/null") {
    use std::os::fd::AsRawFd;
    // SAFETY: dup2 onto our own standard descriptors.
    unsafe {
      libc::dup2(null.as_raw_fd(), 0);
      libc::dup2(null.as_raw_fd(), 1);
    }
  }
}

/// The task as its record names it: leader, group, start time, tag and cgroup.
pub(super) fn task_process(pid: u32, group: &ProcessGroup) -> TaskProcess {
  TaskProcess {
    pid,
    pgid: group.pgid,
    start_time: group.leader_start_time,
    tag: group.task_tag.clone(),
    cgroup: group
      .cgroup
      .as_ref()
      .map(|c| c.to_string_lossy().into_owned()),
  }
}
