//! macOS: the second host-death signal beside the watchdog's pipe.
//!
//! The pipe's EOF comes only once every write end is closed; a copy leaked
//! into a process that another library forked (between `pipe` and the
//! `FD_CLOEXEC` that macOS cannot set atomically, or a fork that never execs)
//! would hold the watchdog back for as long as that process lives. macOS has
//! no `PR_SET_PDEATHSIG`, and polling `getppid()` races with pid reuse; a
//! kqueue `EVFILT_PROC` filter with `NOTE_EXIT` reports the exit of exactly
//! the process it was registered on. bash cannot wait on a kqueue, so the
//! watchdog's `pre_exec` forks a helper before execing bash:
//!
//! * the helper first closes every descriptor but its copy of the pipe's
//!   write end: it must hold nothing of Node's open (sockets, other
//!   children's pipes), and among them is std's exec-report pipe, whose EOF
//!   the host's `spawn` of the watchdog waits for (a few milliseconds at
//!   most, one `close` per possible descriptor);
//! * it registers `NOTE_EXIT` on the host pid and on the watchdog's;
//! * when the host exits (or was already gone at registration), it writes
//!   [`HOST_GONE_LINE`] into the pipe and exits: the script stops reading at
//!   that line exactly as at EOF and kills every group, tree and tagged
//!   process taskstream created, the same code either way;
//! * when the watchdog exits first (an agent killed it; the host starts a new
//!   one with a helper of its own), or the host cannot be watched, it exits
//!   quietly, closing its write end, so the EOF path is never held back by it.
//!
//! The helper holds a write end itself, so the EOF now also waits for it; it
//! exits at the host's exit, so both signals still fire then. Its decisions
//! are pure (watchdog_darwin_events.rs, tested on every Unix); this file is
//! compiled on macOS only, type-checked by `npm run test:targets` and run by
//! the CI workflow's macOS jobs.
//!
//! Everything here runs in a forked child of a multi-threaded process, so it
//! makes only plain system calls (`fork`, `getrlimit`, `close`, `kqueue`,
//! `kevent`, `write`, `_exit`) on stack values: no allocation, no locks.

use super::watchdog_darwin_events::HOST_GONE_LINE;
use super::watchdog_darwin_events::{combine, on_event, on_receipt, Verdict, Watched};

/// The most descriptors the helper closes when the limit is unbounded.
const MAX_FDS: libc::rlim_t = 1 << 20;

/// Called in the watchdog's `pre_exec` (its own session, signals set up):
/// forks the helper, which never returns, and returns at once in the
/// watchdog. `host` is Node's pid, `writer` the pipe's write end (CLOEXEC:
/// bash never sees it). If the fork fails, the pipe alone remains.
pub(super) fn start_host_exit_watch(host: libc::pid_t, writer: libc::c_int) {
  // SAFETY: getpid and fork are async-signal-safe; the child runs only the
  // system calls listed in the module comment and ends in `_exit`.
  unsafe {
    let watchdog = libc::getpid();
    if libc::fork() == 0 {
      let watched = Watched {
        host: host as u32,
        watchdog: watchdog as u32,
      };
      if watch(watched, writer) == Verdict::HostGone {
        libc::write(writer, HOST_GONE_LINE.as_ptr().cast(), HOST_GONE_LINE.len());
      }
      libc::_exit(0);
    }
  }
}

/// Waits until the verdict is no longer [`Verdict::Wait`].
fn watch(watched: Watched, writer: libc::c_int) -> Verdict {
  close_all_but(writer);
  // SAFETY: kqueue takes no arguments; kevent reads `changes` and writes at
  // most `out.len()` entries into `out`, both live arrays on this stack.
  unsafe {
    let kq = libc::kqueue();
    if kq < 0 {
      return Verdict::Stop;
    }
    let mut changes: [libc::kevent; 2] = std::mem::zeroed();
    for (change, pid) in changes.iter_mut().zip([watched.host, watched.watchdog]) {
      change.ident = pid as libc::uintptr_t;
      change.filter = libc::EVFILT_PROC;
      change.flags = libc::EV_ADD | libc::EV_RECEIPT;
      change.fflags = libc::NOTE_EXIT;
    }
    let mut out: [libc::kevent; 2] = std::mem::zeroed();
    let mut verdict = Verdict::Wait;
    let mut pending: &[libc::kevent] = &changes;
    while verdict == Verdict::Wait {
      let n = libc::kevent(
        kq,
        pending.as_ptr(),
        pending.len() as libc::c_int,
        out.as_mut_ptr(),
        out.len() as libc::c_int,
        std::ptr::null(),
      );
      if n < 0 {
        if *libc::__error() == libc::EINTR {
          continue;
        }
        return Verdict::Stop;
      }
      pending = &[];
      for event in &out[..n as usize] {
        let ident = event.ident as u64;
        let next = if event.flags & libc::EV_ERROR != 0 {
          on_receipt(watched, ident, event.data as i64)
        } else {
          on_event(watched, ident, event.fflags & libc::NOTE_EXIT != 0)
        };
        verdict = combine(verdict, next);
      }
    }
    verdict
  }
}

/// Closes every descriptor but `keep`, up to the descriptor limit.
fn close_all_but(keep: libc::c_int) {
  // SAFETY: getrlimit writes into a local; close takes integers.
  unsafe {
    let mut limit: libc::rlimit = std::mem::zeroed();
    let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
      limit.rlim_cur.min(MAX_FDS)
    } else {
      MAX_FDS
    };
    for fd in 0..max as libc::c_int {
      if fd != keep {
        libc::close(fd);
      }
    }
  }
}
