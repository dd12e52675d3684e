//! The portable Unix poller (macOS and the BSDs until they get kqueue):
//! `poll(2)` over every registered descriptor, woken by a self-pipe.

use std::collections::BTreeSet;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

pub(super) struct Poller {
  fds: BTreeSet<RawFd>,
  wake_read: OwnedFd,
  pollfds: Vec<libc::pollfd>,
}

/// Wakes the poller's thread from any thread.
pub(super) struct Waker {
  wake_write: Arc<OwnedFd>,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
  let mut fds = [0; 2];
  // SAFETY: `fds` has room for the two descriptors pipe writes.
  if unsafe { libc::pipe(fds.as_mut_ptr()) } < 0 {
    return Err(io::Error::last_os_error());
  }
  for fd in fds {
    // SAFETY: fcntl on descriptors we just created.
    unsafe {
      libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
      libc::fcntl(
        fd,
        libc::F_SETFL,
        libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
      );
    }
  }
  // SAFETY: pipe succeeded; both descriptors are ours alone.
  Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Poller {
  pub(super) fn new() -> io::Result<(Poller, Waker)> {
    let (wake_read, wake_write) = pipe()?;
    Ok((
      Poller {
        fds: BTreeSet::new(),
        wake_read,
        pollfds: Vec::new(),
      },
      Waker {
        wake_write: Arc::new(wake_write),
      },
    ))
  }

  pub(super) fn add(&mut self, fd: RawFd) -> io::Result<()> {
    self.fds.insert(fd);
    Ok(())
  }

  pub(super) fn remove(&mut self, fd: RawFd) {
    self.fds.remove(&fd);
  }

  pub(super) fn wait(
    &mut self,
    timeout: Option<Duration>,
    ready: &mut Vec<RawFd>,
  ) -> io::Result<()> {
    let wake_fd = self.wake_read.as_raw_fd();
    self.pollfds.clear();
    self.pollfds.push(libc::pollfd {
      fd: wake_fd,
      events: libc::POLLIN,
      revents: 0,
    });
    for &fd in &self.fds {
      self.pollfds.push(libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
      });
    }
    let timeout_ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as libc::c_int);
    // SAFETY: `pollfds` is a valid array of its length.
    let n = unsafe {
      libc::poll(
        self.pollfds.as_mut_ptr(),
        self.pollfds.len() as libc::nfds_t,
        timeout_ms,
      )
    };
    if n < 0 {
      return super::interrupted_is_ok(io::Error::last_os_error());
    }
    for pollfd in &self.pollfds {
      if pollfd.revents == 0 {
        continue;
      }
      if pollfd.fd == wake_fd {
        let mut buf = [0u8; 64];
        // SAFETY: reads into a local buffer from our non-blocking pipe.
        while unsafe { libc::read(wake_fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
      } else {
        ready.push(pollfd.fd);
      }
    }
    Ok(())
  }
}

impl Waker {
  pub(super) fn wake(&self) {
    let byte = 1u8;
    // SAFETY: writes one byte to our non-blocking pipe (a full pipe already wakes).
    unsafe { libc::write(self.wake_write.as_raw_fd(), (&byte as *const u8).cast(), 1) };
  }
}
