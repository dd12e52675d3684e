//! The Linux poller: level-triggered epoll, woken by an eventfd.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

/// Most events one wait returns.
const MAX_EVENTS: usize = 256;

pub(super) struct Poller {
  epoll: OwnedFd,
  wake: Arc<OwnedFd>,
  events: Vec<libc::epoll_event>,
}

/// Wakes the poller's thread from any thread.
pub(super) struct Waker {
  wake: Arc<OwnedFd>,
}

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
  if result < 0 {
    Err(io::Error::last_os_error())
  } else {
    Ok(result)
  }
}

impl Poller {
  pub(super) fn new() -> io::Result<(Poller, Waker)> {
    // SAFETY: plain syscalls; the descriptors returned are owned from here on.
    let (epoll, wake) = unsafe {
      let epoll = OwnedFd::from_raw_fd(check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?);
      let wake = OwnedFd::from_raw_fd(check(libc::eventfd(
        0,
        libc::EFD_CLOEXEC | libc::EFD_NONBLOCK,
      ))?);
      (epoll, wake)
    };
    let wake = Arc::new(wake);
    let mut poller = Poller {
      epoll,
      wake: Arc::clone(&wake),
      events: vec![libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS],
    };
    poller.add(wake.as_raw_fd())?;
    Ok((poller, Waker { wake }))
  }

  pub(super) fn add(&mut self, fd: RawFd) -> io::Result<()> {
    let mut event = libc::epoll_event {
      events: (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32,
      u64: fd as u64,
    };
    // SAFETY: `event` is valid for the call; `fd` is open.
    check(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) })
      .map(|_| ())
  }

  pub(super) fn remove(&mut self, fd: RawFd) {
    // SAFETY: a null event is allowed for EPOLL_CTL_DEL since Linux 2.6.9.
    unsafe {
      libc::epoll_ctl(
        self.epoll.as_raw_fd(),
        libc::EPOLL_CTL_DEL,
        fd,
        std::ptr::null_mut(),
      );
    }
  }

  /// Waits for readiness (or `timeout`), appending ready descriptors other
  /// than the waker's to `ready`.
  pub(super) fn wait(
    &mut self,
    timeout: Option<Duration>,
    ready: &mut Vec<RawFd>,
  ) -> io::Result<()> {
    let timeout_ms = match timeout {
      None => -1,
      Some(t) => t
        .as_millis()
        .saturating_add(u128::from(t.subsec_nanos() % 1_000_000 != 0))
        .min(i32::MAX as u128) as i32,
    };
    // SAFETY: `events` has room for MAX_EVENTS entries.
    let n = unsafe {
      libc::epoll_wait(
        self.epoll.as_raw_fd(),
        self.events.as_mut_ptr(),
        MAX_EVENTS as libc::c_int,
        timeout_ms,
      )
    };
    if n < 0 {
      return super::interrupted_is_ok(io::Error::last_os_error());
    }
    let wake_fd = self.wake.as_raw_fd();
    for event in &self.events[..n as usize] {
      let fd = event.u64 as RawFd;
      if fd == wake_fd {
        let mut value = 0u64;
        // SAFETY: reads 8 bytes into `value` from our eventfd.
        unsafe { libc::read(wake_fd, (&mut value as *mut u64).cast(), 8) };
      } else {
        ready.push(fd);
      }
    }
    Ok(())
  }
}

impl Waker {
  pub(super) fn wake(&self) {
    let one = 1u64;
    // SAFETY: writes 8 bytes from `one` to our eventfd.
    unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
  }
}
