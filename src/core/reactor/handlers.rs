//! What a task gives the reactor: its handlers for a pipe's bytes and for its leader's exit.
//! A leaf, used by the reactor thread (`mod.rs`) and the exit watch (`exit_watch.rs`).

use std::io;
use std::process::ExitStatus;

/// What a task does with its pipes' bytes. Called on the reactor thread.
pub trait PipeHandler: Send + Sync {
  /// One read of the pipe registered with `tag`.
  fn data(&self, tag: u8, bytes: &[u8]);
  /// The pipe reached EOF (`None`), failed (the error), or was closed by
  /// [`Reactor::close_pipe`](super::Reactor::close_pipe) (not called then).
  fn closed(&self, tag: u8, error: Option<io::Error>);
}

/// What a task does when its leader exits. Called on the reactor thread (or
/// on the fallback waiter thread).
pub trait ExitHandler: Send + Sync {
  fn exited(&self, status: io::Result<ExitStatus>);
}
