//! What a task gives the reactor, on every platform: its handlers for a
//! pipe's bytes and for its leader's exit, the key of a registered pipe, and
//! the read sizes. A leaf, used by both backends (`unix.rs` with
//! `exit_watch.rs`, `windows.rs`).

use std::io;
use std::process::ExitStatus;

/// One read takes at most this many bytes (CONTRACT.md §2.10 "Reading").
pub const READ_CHUNK: usize = 64 * 1024;
/// Reads one pipe gets before the reactor turns to its other sources (on
/// Windows, kept for parity: each pipe has a thread of its own there).
pub const READS_PER_TURN: usize = 16;

/// What a task does with its pipes' bytes. Called on the reactor thread (on
/// Windows, on the pipe's reader thread).
pub trait PipeHandler: Send + Sync {
  /// One read of the pipe registered with `tag`.
  fn data(&self, tag: u8, bytes: &[u8]);
  /// The pipe reached EOF (`None`), failed (the error), or was closed by
  /// [`Reactor::close_pipe`](super::Reactor::close_pipe) (not called then).
  fn closed(&self, tag: u8, error: Option<io::Error>);
}

/// What a task does when its leader exits. Called on the reactor thread (or
/// on the fallback waiter thread; on Windows, on its waiter thread).
pub trait ExitHandler: Send + Sync {
  fn exited(&self, status: io::Result<ExitStatus>);
}

/// Identifies a registered pipe, to close it early.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PipeKey(pub(super) u64);
