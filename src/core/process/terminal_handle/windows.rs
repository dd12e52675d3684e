//! [`TerminalHandle`] on Windows: the input and size of a task's pseudo
//! console (`process/windows/conpty.rs`).
//!
//! **Writing never blocks the caller.** The console's input is an anonymous
//! pipe, whose writes block while the console host is not reading. So
//! `write` only appends to the terminal's queue, bounded by
//! [`INPUT_QUEUE_LIMIT`] (a write that would pass it is refused whole), and
//! one writer thread per terminal (`taskstream-conpty-input`, started with
//! the terminal, blocked on a condition variable while there is nothing to
//! send) moves the queue into the pipe. A failed pipe write (the host
//! exited) ends the terminal. After [`TerminalHandle::close`] writes and
//! resizes fail with [`TerminalError::Ended`], queued bytes are dropped, the
//! writer closes our end of the input, and the pseudo console is closed.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex};

use super::{TerminalError, INPUT_QUEUE_LIMIT};
use crate::process::conpty::PseudoConsole;
use crate::process::terminal_size::TerminalSize;
use crate::sync::lock;

/// Most bytes the writer hands to one pipe write.
const WRITE_CHUNK: usize = 64 * 1024;

/// The terminal's input side. Cheap to share (`Clone`): every clone is the
/// same terminal. Dropping the last clone is [`TerminalHandle::close`].
#[derive(Clone)]
pub struct TerminalHandle {
  shared: Arc<Shared>,
  _owner: Arc<Owner>,
}

/// Closes the terminal when the last handle goes.
struct Owner(Arc<Shared>);

impl Drop for Owner {
  fn drop(&mut self) {
    self.0.end();
  }
}

struct Shared {
  state: Mutex<State>,
  /// Signalled when bytes are queued or the terminal ends.
  work: Condvar,
  console: PseudoConsole,
}

struct State {
  queue: VecDeque<u8>,
  ended: bool,
  size: TerminalSize,
}

impl Shared {
  fn end(&self) {
    {
      let mut state = lock(&self.state);
      state.ended = true;
      state.queue = VecDeque::new();
    }
    self.work.notify_all();
    self.console.close();
  }
}

impl std::fmt::Debug for TerminalHandle {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    let state = lock(&self.shared.state);
    f.debug_struct("TerminalHandle")
      .field("size", &state.size)
      .field("queued", &state.queue.len())
      .field("ended", &state.ended)
      .finish()
  }
}

/// Wraps a pseudo console of `size` and our end of its input, and starts the
/// terminal's writer thread.
pub(crate) fn new_handle(
  console: PseudoConsole,
  input: File,
  size: TerminalSize,
) -> io::Result<TerminalHandle> {
  let shared = Arc::new(Shared {
    state: Mutex::new(State {
      queue: VecDeque::new(),
      ended: false,
      size,
    }),
    work: Condvar::new(),
    console,
  });
  let writer_side = Arc::clone(&shared);
  std::thread::Builder::new()
    .name("taskstream-conpty-input".into())
    .stack_size(64 * 1024)
    .spawn(move || run_writer(&writer_side, input))?;
  Ok(TerminalHandle {
    _owner: Arc::new(Owner(Arc::clone(&shared))),
    shared,
  })
}

/// The writer thread: waits for queued bytes, writes them (blocking), until
/// the terminal ends or a write fails. Our end of the input closes with it.
fn run_writer(shared: &Shared, mut input: File) {
  let mut chunk = Vec::with_capacity(WRITE_CHUNK);
  loop {
    {
      let mut state = lock(&shared.state);
      while !state.ended && state.queue.is_empty() {
        state = shared
          .work
          .wait(state)
          .unwrap_or_else(|poisoned| poisoned.into_inner());
      }
      if state.ended {
        return;
      }
      let n = state.queue.len().min(WRITE_CHUNK);
      chunk.clear();
      chunk.extend(state.queue.drain(..n));
    }
    if let Err(error) = input.write_all(&chunk) {
      tracing::debug!(%error, "taskstream: the pseudo console's input failed");
      let mut state = lock(&shared.state);
      state.ended = true;
      state.queue = VecDeque::new();
      return;
    }
  }
}

impl TerminalHandle {
  /// Sends `bytes` to the terminal's input (what a person would type).
  /// Never blocks. `Ok` means accepted, not yet read by the program.
  pub fn write(&self, bytes: &[u8]) -> Result<(), TerminalError> {
    let mut state = lock(&self.shared.state);
    if state.ended || self.shared.console.is_closed() {
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
    drop(state);
    self.shared.work.notify_one();
    Ok(())
  }

  /// Sets the pseudo console's size (`ResizePseudoConsole`: the program gets
  /// a window-size event). The screen is resized separately.
  pub fn resize(&self, size: TerminalSize) -> Result<(), TerminalError> {
    size.check_not_empty().map_err(TerminalError::Io)?;
    let mut state = lock(&self.shared.state);
    if state.ended || self.shared.console.is_closed() {
      return Err(TerminalError::Ended);
    }
    self
      .shared
      .console
      .resize(size)
      .map_err(TerminalError::Io)?;
    state.size = size;
    Ok(())
  }

  /// The size last set.
  pub fn size(&self) -> TerminalSize {
    lock(&self.shared.state).size
  }

  /// Bytes accepted and not yet handed to the pipe.
  pub fn queued(&self) -> usize {
    lock(&self.shared.state).queue.len()
  }

  /// Whether writes now fail with [`TerminalError::Ended`].
  pub fn is_ended(&self) -> bool {
    lock(&self.shared.state).ended || self.shared.console.is_closed()
  }

  /// Ends input and closes the pseudo console (its host writes what it
  /// still has and exits, so the output reaches EOF): queued bytes are
  /// dropped; later writes and resizes fail with [`TerminalError::Ended`].
  pub fn close(&self) {
    self.shared.end();
  }
}
