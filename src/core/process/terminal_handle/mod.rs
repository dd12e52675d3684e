//! A terminal task's input and size: [`TerminalHandle`], made by the spawn
//! (`SpawnedProcess::terminal`) around the pseudo-terminal's master side.
//! It lives in `process`, which makes it, and `terminal` re-exports it.
//!
//! **Writing never blocks the caller** (the JavaScript thread). The master
//! is non-blocking. `write` appends to the terminal's queue, bounded by
//! [`INPUT_QUEUE_LIMIT`]; when the queue was empty it first writes what the
//! kernel takes at once, on the calling thread (one non-blocking `write`,
//! the usual case: a prompt's answer fits the terminal's input buffer).
//! What is left waits for **one writer thread shared by every terminal**
//! (`taskstream-pty-writer`, started on first need): it `poll`s the masters
//! with queued bytes for room, and a self-pipe for new work. So there is no
//! thread per terminal, and none at all while every write fits.
//!
//! A write that would take the queue past the limit is refused whole
//! ([`TerminalError::QueueFull`]): the program is not reading its input.
//! After [`TerminalHandle::close`], or once the terminal hung up (every
//! process closed it) or failed, writes fail with [`TerminalError::Ended`]
//! and queued bytes are dropped.

use std::fmt;
use std::io;

/// Most bytes a terminal's input queue holds (1 MiB).
pub const INPUT_QUEUE_LIMIT: usize = 1 << 20;

/// Why a write or resize did not happen.
#[derive(Debug)]
pub enum TerminalError {
  /// The write would take the queue past [`INPUT_QUEUE_LIMIT`]; nothing of
  /// it was queued.
  QueueFull { queued: usize, limit: usize },
  /// The terminal was closed or hung up: the task's program no longer
  /// reads its input.
  Ended,
  /// The resize failed (the OS error).
  Io(io::Error),
}

impl fmt::Display for TerminalError {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match self {
      TerminalError::QueueFull { queued, limit } => write!(
        f,
        "the terminal's input queue is full ({queued} bytes waiting, limit {limit}): \
         the program is not reading its input"
      ),
      TerminalError::Ended => write!(f, "the terminal has ended: the task no longer takes input"),
      TerminalError::Io(error) => write!(f, "terminal error: {error}"),
    }
  }
}

impl std::error::Error for TerminalError {}

#[cfg(unix)]
pub use unix::TerminalHandle;
#[cfg(unix)]
pub(crate) use unix::{cloexec_pipe, new_handle, set_flags, set_window_size};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::new_handle;
#[cfg(windows)]
pub use windows::TerminalHandle;

/// No terminal exists on this platform: a terminal spawn fails with
/// [`super::UNSUPPORTED_MESSAGE`](crate::process::UNSUPPORTED_MESSAGE), so no value of this type is ever made.
#[cfg(not(any(unix, windows)))]
#[derive(Debug, Clone)]
pub struct TerminalHandle {
  never: std::convert::Infallible,
}

#[cfg(not(any(unix, windows)))]
impl TerminalHandle {
  pub fn write(&self, _bytes: &[u8]) -> Result<(), TerminalError> {
    match self.never {}
  }
  pub fn resize(&self, _size: super::terminal_size::TerminalSize) -> Result<(), TerminalError> {
    match self.never {}
  }
  pub fn size(&self) -> super::terminal_size::TerminalSize {
    match self.never {}
  }
  pub fn queued(&self) -> usize {
    match self.never {}
  }
  pub fn is_ended(&self) -> bool {
    match self.never {}
  }
  pub fn close(&self) {
    match self.never {}
  }
}

#[cfg(unix)]
mod unix {
  use std::collections::VecDeque;
  use std::fs::File;
  use std::io::{self, ErrorKind, Read, Write};
  use std::os::fd::{AsRawFd, OwnedFd, RawFd};
  use std::sync::{Arc, Mutex};

  use once_cell::sync::Lazy;

  use super::{TerminalError, INPUT_QUEUE_LIMIT};
  use crate::process::terminal_size::TerminalSize;
  use crate::sync::lock;

  /// The terminal's input side. Cheap to share (`Clone`): every clone is
  /// the same terminal. Dropping the last clone is [`TerminalHandle::close`].
  #[derive(Clone)]
  pub struct TerminalHandle {
    shared: Arc<Shared>,
    /// Shared by the clones only (the writer thread holds `shared`).
    _owner: Arc<Owner>,
  }

  /// Closes the terminal when the last handle goes.
  struct Owner(Arc<Shared>);

  impl Drop for Owner {
    fn drop(&mut self) {
      close(&self.0);
    }
  }

  fn close(shared: &Shared) {
    lock(&shared.state).end();
    // The writer, if it holds this terminal, lets it go on its next turn.
    wake_writer();
  }

  impl std::fmt::Debug for TerminalHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
      let state = lock(&self.shared.state);
      f.debug_struct("TerminalHandle")
        .field("size", &state.size)
        .field("queued", &state.queue.len())
        .field("ended", &state.master.is_none())
        .finish()
    }
  }

  struct Shared {
    state: Mutex<State>,
  }

  struct State {
    /// The master (non-blocking, close-on-exec); `None` once ended.
    master: Option<File>,
    queue: VecDeque<u8>,
    /// Whether the writer thread holds this terminal (it has queued bytes).
    with_writer: bool,
    size: TerminalSize,
  }

  impl State {
    fn end(&mut self) {
      self.master = None;
      self.queue = VecDeque::new();
    }

    /// Writes queued bytes until the queue is empty or the terminal has no
    /// room. A failure other than "no room" ends the terminal.
    fn flush(&mut self) {
      while !self.queue.is_empty() {
        let Some(master) = self.master.as_mut() else {
          return;
        };
        let (front, _) = self.queue.as_slices();
        match master.write(front) {
          // No room (a terminal stopped by flow control may say so).
          Ok(0) => return,
          Ok(n) => {
            self.queue.drain(..n);
          }
          Err(e) if e.kind() == ErrorKind::Interrupted => {}
          Err(e) if e.kind() == ErrorKind::WouldBlock => return,
          Err(_) => {
            // EIO: the terminal hung up.
            self.end();
            return;
          }
        }
      }
    }
  }

  /// Wraps a pseudo-terminal master (the spawn makes it non-blocking and
  /// close-on-exec) whose size is `size`.
  pub(crate) fn new_handle(master: OwnedFd, size: TerminalSize) -> TerminalHandle {
    let shared = Arc::new(Shared {
      state: Mutex::new(State {
        master: Some(File::from(master)),
        queue: VecDeque::new(),
        with_writer: false,
        size,
      }),
    });
    TerminalHandle {
      _owner: Arc::new(Owner(Arc::clone(&shared))),
      shared,
    }
  }

  impl TerminalHandle {
    /// Sends `bytes` to the terminal's input (what a person would type;
    /// the terminal echoes it and turns `\r` into `\n` as usual). Never
    /// blocks. `Ok` means accepted, not yet read by the program.
    pub fn write(&self, bytes: &[u8]) -> Result<(), TerminalError> {
      let mut state = lock(&self.shared.state);
      if state.master.as_ref().is_some_and(hung_up) {
        state.end();
      }
      if state.master.is_none() {
        return Err(TerminalError::Ended);
      }
      let queued = state.queue.len();
      if queued + bytes.len() > INPUT_QUEUE_LIMIT {
        return Err(TerminalError::QueueFull {
          queued,
          limit: INPUT_QUEUE_LIMIT,
        });
      }
      state.queue.extend(bytes);
      if !state.with_writer {
        state.flush();
        if state.master.is_none() {
          return Err(TerminalError::Ended);
        }
        if !state.queue.is_empty() {
          state.with_writer = true;
          drop(state);
          if let Err(error) = hand_to_writer(Arc::clone(&self.shared)) {
            tracing::warn!(%error, "taskstream: no terminal writer thread");
            let mut state = lock(&self.shared.state);
            state.end();
            state.with_writer = false;
            return Err(TerminalError::Ended);
          }
        }
      }
      Ok(())
    }

    /// Sets the terminal's size (`TIOCSWINSZ` on the master): the kernel
    /// sends SIGWINCH to the terminal's foreground process group. The
    /// screen is resized separately (`Screen::resize`).
    pub fn resize(&self, size: TerminalSize) -> Result<(), TerminalError> {
      size.check_not_empty().map_err(TerminalError::Io)?;
      let mut state = lock(&self.shared.state);
      let master = state.master.as_ref().ok_or(TerminalError::Ended)?;
      set_window_size(master.as_raw_fd(), size).map_err(TerminalError::Io)?;
      state.size = size;
      Ok(())
    }

    /// The size last set.
    pub fn size(&self) -> TerminalSize {
      lock(&self.shared.state).size
    }

    /// Bytes accepted and not yet taken by the terminal.
    pub fn queued(&self) -> usize {
      lock(&self.shared.state).queue.len()
    }

    /// Whether writes now fail with [`TerminalError::Ended`].
    pub fn is_ended(&self) -> bool {
      lock(&self.shared.state).master.is_none()
    }

    /// Ends input: queued bytes are dropped, later writes and resizes fail
    /// with [`TerminalError::Ended`], and this handle's descriptor of the
    /// master is closed (the reader's own descriptor keeps the terminal
    /// up until it is closed too; then the program gets SIGHUP).
    pub fn close(&self) {
      close(&self.shared);
    }
  }

  /// Whether the terminal hung up: no process has it open any more (or it
  /// failed), so nothing will ever read what is written to it.
  fn hung_up(master: &File) -> bool {
    let mut pollfd = libc::pollfd {
      fd: master.as_raw_fd(),
      events: 0,
      revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout never blocks.
    let ready = unsafe { libc::poll(&mut pollfd, 1, 0) };
    ready == 1 && pollfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
  }

  /// `TIOCSWINSZ` on a terminal descriptor.
  pub(crate) fn set_window_size(fd: RawFd, size: TerminalSize) -> io::Result<()> {
    let winsize = libc::winsize {
      ws_row: size.rows,
      ws_col: size.cols,
      ws_xpixel: 0,
      ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads a winsize from a valid pointer.
    if unsafe { libc::ioctl(fd, libc::TIOCSWINSZ, &winsize) } == -1 {
      return Err(io::Error::last_os_error());
    }
    Ok(())
  }

  /// The shared writer thread's inbox.
  struct Writer {
    incoming: Mutex<Vec<Arc<Shared>>>,
    /// Self-pipe: a byte written wakes the thread's `poll`.
    wake_read: File,
    wake_write: File,
  }

  static WRITER: Lazy<Result<Arc<Writer>, String>> = Lazy::new(|| {
    let (wake_read, wake_write) = wake_pipe().map_err(|e| e.to_string())?;
    let writer = Arc::new(Writer {
      incoming: Mutex::new(Vec::new()),
      wake_read,
      wake_write,
    });
    let thread_side = Arc::clone(&writer);
    std::thread::Builder::new()
      .name("taskstream-pty-writer".into())
      .spawn(move || run(&thread_side))
      .map_err(|e| e.to_string())?;
    Ok(writer)
  });

  fn wake_pipe() -> io::Result<(File, File)> {
    let (read, write) = cloexec_pipe()?;
    for fd in [&read, &write] {
      set_flags(fd.as_raw_fd(), libc::O_NONBLOCK, 0)?;
    }
    Ok((File::from(read), File::from(write)))
  }

  /// A pipe whose two ends are close-on-exec (atomically where `pipe2`
  /// exists), as (read end, write end).
  pub(crate) fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(any(
      target_os = "linux",
      target_os = "android",
      target_os = "freebsd",
      target_os = "netbsd",
      target_os = "openbsd"
    ))]
    {
      Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
    }
    #[cfg(not(any(
      target_os = "linux",
      target_os = "android",
      target_os = "freebsd",
      target_os = "netbsd",
      target_os = "openbsd"
    )))]
    {
      let (read, write) = nix::unistd::pipe()?;
      for fd in [&read, &write] {
        set_flags(fd.as_raw_fd(), 0, libc::FD_CLOEXEC)?;
      }
      Ok((read, write))
    }
  }

  /// Adds status flags and descriptor flags to `fd`.
  pub(crate) fn set_flags(
    fd: RawFd,
    status: libc::c_int,
    descriptor: libc::c_int,
  ) -> io::Result<()> {
    // SAFETY: fcntl with integer arguments on a descriptor we own.
    unsafe {
      let flags = libc::fcntl(fd, libc::F_GETFL);
      if flags == -1 || libc::fcntl(fd, libc::F_SETFL, flags | status) == -1 {
        return Err(io::Error::last_os_error());
      }
      let flags = libc::fcntl(fd, libc::F_GETFD);
      if flags == -1 || libc::fcntl(fd, libc::F_SETFD, flags | descriptor) == -1 {
        return Err(io::Error::last_os_error());
      }
    }
    Ok(())
  }

  fn hand_to_writer(shared: Arc<Shared>) -> Result<(), String> {
    let writer = WRITER.as_ref().map_err(Clone::clone)?;
    lock(&writer.incoming).push(shared);
    wake(writer);
    Ok(())
  }

  fn wake_writer() {
    // Only if it was ever started: a close needs no thread.
    if let Some(Ok(writer)) = Lazy::get(&WRITER) {
      wake(writer);
    }
  }

  fn wake(writer: &Writer) {
    // A full pipe already holds a wake-up.
    let _ = (&writer.wake_write).write(&[1]);
  }

  /// The writer loop: `poll` the wake pipe and every held master for room,
  /// flush those that have it, let go of those that are empty or ended.
  fn run(writer: &Writer) {
    crate::process::lower_current_thread_priority();
    let mut held: Vec<Arc<Shared>> = Vec::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    let mut drain = [0u8; 64];
    loop {
      held.append(&mut lock(&writer.incoming));
      // Flush everything first: new arrivals, and whatever poll woke.
      held.retain(|shared| {
        let mut state = lock(&shared.state);
        state.flush();
        let keep = state.master.is_some() && !state.queue.is_empty();
        if !keep {
          state.with_writer = false;
        }
        keep
      });
      fds.clear();
      fds.push(libc::pollfd {
        fd: writer.wake_read.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
      });
      for shared in &held {
        let state = lock(&shared.state);
        // `held` keeps only terminals with a master.
        let fd = state.master.as_ref().map_or(-1, |m| m.as_raw_fd());
        fds.push(libc::pollfd {
          fd,
          events: libc::POLLOUT,
          revents: 0,
        });
      }
      // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
      let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
      if ready == -1 {
        let error = io::Error::last_os_error();
        if error.kind() != ErrorKind::Interrupted {
          tracing::warn!(%error, "taskstream: terminal writer poll failed");
          std::thread::sleep(std::time::Duration::from_millis(10));
        }
        continue;
      }
      if fds[0].revents != 0 {
        while matches!((&writer.wake_read).read(&mut drain), Ok(n) if n > 0) {}
      }
      // A master that hung up (every process closed the terminal) or
      // failed will never take the queued bytes: end it.
      for (shared, pollfd) in held.iter().zip(&fds[1..]) {
        if pollfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
          lock(&shared.state).end();
        }
      }
    }
  }
}
