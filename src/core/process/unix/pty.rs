//! Pseudo-terminals for terminal-mode tasks (API.md §6.5): opening a pair,
//! and what the parent hands the caller.
//!
//! Both descriptors are close-on-exec from the start on Linux
//! (`posix_openpt(O_CLOEXEC)`, the slave opened `O_CLOEXEC`), so no child
//! spawned meanwhile by another thread inherits them. Elsewhere `openpty`
//! gives them without the flag and it is set right after; the fork path
//! opens them on the spawner thread, which forks nothing meanwhile (a
//! `child_process` spawn of Node's could still inherit one in that window).
//!
//! The slave is given to the child as fds 0, 1 and 2 and as its
//! **controlling terminal**; the parent closes its own slave descriptor
//! right after the spawn, so the terminal hangs up (reads of the master
//! fail with `EIO`, which the reactor takes as EOF) once every process of
//! the task closed it.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::process::terminal_handle::{self as terminal, TerminalHandle};
use crate::process::terminal_size::TerminalSize;

/// A new terminal pair.
pub(super) struct Pty {
  /// Non-blocking, close-on-exec.
  pub master: OwnedFd,
  /// Close-on-exec (the child gets copies as 0, 1 and 2).
  pub slave: OwnedFd,
  /// The slave's path (`/dev/pts/N`), for `posix_spawn`'s `addopen`.
  #[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
  pub slave_path: CString,
}

/// Opens a pair of `size`, with the terminal's default settings plus
/// `IUTF8` (so erasing a typed multibyte character erases all of it).
pub(super) fn open(size: TerminalSize) -> io::Result<Pty> {
  let pty = open_pair()?;
  terminal::set_window_size(pty.master.as_raw_fd(), size)?;
  enable_utf8_input(&pty.slave);
  terminal::set_flags(pty.master.as_raw_fd(), libc::O_NONBLOCK, libc::FD_CLOEXEC)?;
  Ok(pty)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_pair() -> io::Result<Pty> {
  let flags = libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC;
  // SAFETY: posix_openpt opens /dev/ptmx; a non-negative result is a new
  // descriptor that only we own.
  let master = unsafe { libc::posix_openpt(flags) };
  if master == -1 {
    return Err(io::Error::last_os_error());
  }
  // SAFETY: see above.
  let master = unsafe { OwnedFd::from_raw_fd(master) };
  // SAFETY: grantpt and unlockpt take the master descriptor only.
  unsafe {
    if libc::grantpt(master.as_raw_fd()) == -1 || libc::unlockpt(master.as_raw_fd()) == -1 {
      return Err(io::Error::last_os_error());
    }
  }
  let mut name = [0 as libc::c_char; 128];
  // SAFETY: ptsname_r writes a NUL-terminated path of at most `len` bytes.
  let code = unsafe { libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()) };
  if code != 0 {
    return Err(io::Error::from_raw_os_error(code));
  }
  // SAFETY: ptsname_r succeeded, so `name` holds a NUL-terminated string.
  let slave_path = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_owned();
  // SAFETY: open with a NUL-terminated path; the result is checked.
  let slave = unsafe { libc::open(slave_path.as_ptr(), flags) };
  if slave == -1 {
    return Err(io::Error::last_os_error());
  }
  Ok(Pty {
    master,
    // SAFETY: a new descriptor that only we own.
    slave: unsafe { OwnedFd::from_raw_fd(slave) },
    slave_path,
  })
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open_pair() -> io::Result<Pty> {
  let (mut master, mut slave) = (-1, -1);
  let mut name = [0 as libc::c_char; 128];
  // SAFETY: openpty writes two descriptors and the slave's NUL-terminated
  // name (at most 128 bytes on the BSDs and macOS) to valid pointers.
  let code = unsafe {
    libc::openpty(
      &mut master,
      &mut slave,
      name.as_mut_ptr(),
      std::ptr::null_mut(),
      std::ptr::null_mut(),
    )
  };
  if code == -1 {
    return Err(io::Error::last_os_error());
  }
  // SAFETY: openpty succeeded: two new descriptors that only we own, and a
  // NUL-terminated name.
  let (master, slave, slave_path) = unsafe {
    (
      OwnedFd::from_raw_fd(master),
      OwnedFd::from_raw_fd(slave),
      std::ffi::CStr::from_ptr(name.as_ptr()).to_owned(),
    )
  };
  terminal::set_flags(slave.as_raw_fd(), 0, libc::FD_CLOEXEC)?;
  Ok(Pty {
    master,
    slave,
    slave_path,
  })
}

/// Best effort: the terminal works without it.
fn enable_utf8_input(slave: &OwnedFd) {
  #[cfg(any(target_os = "linux", target_os = "android", target_os = "macos"))]
  {
    let mut termios = std::mem::MaybeUninit::<libc::termios>::uninit();
    // SAFETY: tcgetattr fills `termios` on success, which is checked
    // before it is read; tcsetattr reads it.
    unsafe {
      if libc::tcgetattr(slave.as_raw_fd(), termios.as_mut_ptr()) == 0 {
        let mut termios = termios.assume_init();
        termios.c_iflag |= libc::IUTF8;
        libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &termios);
      }
    }
  }
  #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos")))]
  let _ = slave;
}

/// What the caller gets for a terminal task: the master to read as
/// `stdout`, a pipe already at EOF as `stderr` (the terminal carries both
/// streams), and the handle for input and size.
/// Each gets its own descriptor (copies of the master, close-on-exec).
pub(super) fn caller_side(
  pty: &Pty,
  size: TerminalSize,
) -> io::Result<(File, File, TerminalHandle)> {
  let reader = pty.master.try_clone()?;
  let writer = pty.master.try_clone()?;
  let (empty_read, empty_write) = terminal::cloexec_pipe()?;
  drop(empty_write);
  Ok((
    File::from(reader),
    File::from(empty_read),
    terminal::new_handle(writer, size),
  ))
}

/// In the forked child, after `setsid`: makes fd 0 (the slave) the
/// controlling terminal. Async-signal-safe (one `ioctl`).
pub(super) fn take_controlling_terminal() -> io::Result<()> {
  // SAFETY: TIOCSCTTY with an integer argument on fd 0.
  if unsafe { libc::ioctl(0, libc::TIOCSCTTY as _, 0) } == -1 {
    return Err(io::Error::last_os_error());
  }
  Ok(())
}
