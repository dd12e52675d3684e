//! The reading core on Windows: the same API as the Unix reactor
//! (`reactor/unix.rs`), built the simplest correct way, with threads.
//!
//! * a pipe: one reader thread, blocking `ReadFile`s of up to
//!   [`READ_CHUNK`] bytes handed to the handler in order, then `closed` at
//!   EOF (`ERROR_BROKEN_PIPE`: every writer closed its end) or on an error;
//! * a leader's exit: one waiter thread blocked in `WaitForSingleObject` on
//!   its process handle;
//! * timers ([`Reactor::after`]): the process layer's one timer thread.
//!
//! Cost: three threads per running task (two readers and a waiter), each
//! with a 256 KiB stack reservation, blocked in the kernel and so using no
//! CPU while the task is quiet; they end when their pipe closes or their
//! process exits. Reader threads run at `THREAD_PRIORITY_BELOW_NORMAL`, so
//! a firehose yields to the JavaScript thread. A pool waiting on many
//! handles (`WaitForMultipleObjects`, 64 at a time) or overlapped reads on
//! an I/O completion port would keep the count flat, as epoll does on
//! Linux; not needed for the tens of tasks an agent runs.
//!
//! A task's handlers may run on its three threads at once (the Unix reactor
//! runs them one at a time); every handler here locks what it shares, as it
//! already must for the Unix fallback waiter thread.
//!
//! [`Reactor::close_pipe`] marks the pipe closed (its handler hears nothing
//! more) and cancels the reader's blocked `ReadFile` (`CancelSynchronousIo`);
//! the reader then closes our end, so the writer sees a broken pipe.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, ErrorKind, Read};
use std::os::windows::io::AsRawHandle;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use once_cell::sync::Lazy;
use windows_sys::Win32::System::IO::CancelSynchronousIo;

use super::handlers::{ExitHandler, PipeHandler, PipeKey, READ_CHUNK};
use crate::process::{self, Child};
use crate::sync::lock;

/// A reader or waiter thread's stack: handlers decode, split and match
/// lines, nothing deep.
const THREAD_STACK: usize = 256 * 1024;

/// A pipe being read: the flag [`Reactor::close_pipe`] sets, and the reader
/// thread (to cancel its blocked read).
struct Reading {
  closed: Arc<AtomicBool>,
  thread: std::thread::JoinHandle<()>,
}

/// The reading side's handle. There is one: threads are per source, so
/// there is nothing to balance.
pub struct Reactor {
  pipes: Mutex<HashMap<u64, Reading>>,
}

static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

static REACTOR: Lazy<Arc<Reactor>> = Lazy::new(|| {
  Arc::new(Reactor {
    pipes: Mutex::new(HashMap::new()),
  })
});

impl Reactor {
  /// The reactor, for all the sources of one new task.
  pub fn pick() -> io::Result<Arc<Reactor>> {
    Ok(Arc::clone(&REACTOR))
  }

  /// Reads `file` (a pipe's read end) on a thread of its own until EOF,
  /// handing every read to `handler` with `tag`. If no thread can be
  /// started, `handler.closed` hears the error at once.
  pub fn watch_pipe(&self, file: File, tag: u8, handler: Arc<dyn PipeHandler>) -> PipeKey {
    let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
    let closed = Arc::new(AtomicBool::new(false));
    // The entry exists before the thread can remove it.
    let mut pipes = lock(&self.pipes);
    let reader = {
      let (closed, handler) = (Arc::clone(&closed), Arc::clone(&handler));
      move || {
        read_pipe(file, tag, &*handler, &closed);
        lock(&REACTOR.pipes).remove(&key);
      }
    };
    match std::thread::Builder::new()
      .name("taskstream-pipe".into())
      .stack_size(THREAD_STACK)
      .spawn(reader)
    {
      Ok(thread) => {
        pipes.insert(key, Reading { closed, thread });
      }
      Err(error) => {
        drop(pipes);
        guarded(|| handler.closed(tag, Some(error)));
      }
    }
    PipeKey(key)
  }

  /// Stops reading a pipe and closes it (its handler hears no more of it).
  pub fn close_pipe(&self, key: PipeKey) {
    let pipes = lock(&self.pipes);
    if let Some(reading) = pipes.get(&key.0) {
      reading.closed.store(true, Ordering::Release);
      // SAFETY: the thread's handle is open while its JoinHandle lives (the
      // entry, held under the lock). A thread not in a read yet sees the flag.
      unsafe { CancelSynchronousIo(reading.thread.as_raw_handle() as _) };
    }
  }

  /// Waits for `child` on a thread of its own and tells `handler`.
  pub fn watch_exit(&self, mut child: Child, handler: Arc<dyn ExitHandler>) -> io::Result<()> {
    std::thread::Builder::new()
      .name("taskstream-wait".into())
      .stack_size(THREAD_STACK)
      .spawn(move || {
        let status = child.wait();
        guarded(|| handler.exited(status));
      })
      .map(|_| ())
  }

  /// Runs `job` on the timer thread once `delay` has passed.
  pub fn after(&self, delay: Duration, job: impl FnOnce() + Send + 'static) {
    process::schedule_timer(delay, job);
  }
}

/// The reader loop of one pipe.
fn read_pipe(mut file: File, tag: u8, handler: &dyn PipeHandler, closed: &AtomicBool) {
  process::lower_current_thread_priority();
  let mut buffer = vec![0u8; READ_CHUNK];
  let end = loop {
    if closed.load(Ordering::Acquire) {
      return;
    }
    match file.read(&mut buffer) {
      // std reads ERROR_BROKEN_PIPE (every writer gone) as 0 bytes.
      Ok(0) => break None,
      Ok(n) => {
        if closed.load(Ordering::Acquire) {
          return;
        }
        let bytes = &buffer[..n];
        guarded(|| handler.data(tag, bytes));
      }
      Err(e) if e.kind() == ErrorKind::Interrupted => {}
      Err(e) => break Some(e),
    }
  };
  if !closed.load(Ordering::Acquire) {
    guarded(|| handler.closed(tag, end));
  }
}

/// Runs a handler; a panic is logged and does not end the thread silently.
fn guarded(f: impl FnOnce()) {
  if catch_unwind(AssertUnwindSafe(f)).is_err() {
    tracing::error!("taskstream: a reactor handler panicked");
  }
}

/// The number of reactor threads (none of its own on Windows: threads are
/// per source).
pub fn reactor_count() -> usize {
  0
}
