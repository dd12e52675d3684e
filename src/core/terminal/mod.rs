//! Terminal mode (API.md §6.5): a task's command runs with a
//! pseudo-terminal as its stdin, stdout and stderr; a terminal emulator keeps
//! its screen; the caller writes to its input and resizes it.
//!
//! The pieces, each usable on its own:
//! * [`TerminalSize`]: the size a task asks for (`SpawnRequest::terminal`),
//!   defined in `process` (a terminal is made at spawn) and re-exported here;
//! * [`Screen`] (screen/): the screen model, fed the bytes read from the
//!   terminal, answering [`Screen::snapshot`] and judging *visible* change;
//! * [`Settle`] (`core::wait`): the settle judgement of API.md §6.2 as pure
//!   logic with an injected clock, for terminal tasks (activity = a visible
//!   change of the screen) and for the others (activity = any byte);
//! * [`ScreenWatch`] (watch.rs): a terminal's `Screen` and `Settle`
//!   together, with one deadline for the integrator's timer;
//! * [`TerminalHandle`] (`process/terminal_handle/`, re-exported here): the
//!   terminal's input and size, from the
//!   spawned process (`SpawnedProcess::terminal`): a pseudo-terminal master
//!   on Unix, a pseudo console (ConPTY) on Windows; elsewhere a terminal
//!   spawn fails with [`UNSUPPORTED_MESSAGE`] and no handle exists.
//!
//! How the integrator wires them (monitor or background shell):
//! 1. the child environment gets `TERM=`[`TERMINAL_TERM`] unless the
//!    caller's `env` sets it (`EnvOptions::term`);
//! 2. `process::spawn(SpawnRequest { terminal: Some(size), .. })` gives
//!    `stdout` = the terminal (read it with the reactor as before) and
//!    `stderr` = a pipe already at EOF (so "two EOFs" still ends the task),
//!    plus `terminal: Some(handle)`;
//! 3. every read: `watch.feed(bytes, now_ms)` (a [`ScreenWatch`]) and the
//!    same bytes into the usual line pipeline (which must treat the
//!    terminal's `\r\n`, from `ONLCR`, as one line end);
//!    `watch.take_replies()`, when not empty, goes to `handle.write`
//!    (answers to cursor-position and device-attribute queries); keep a
//!    timer for `watch.next_deadline()` (see watch.rs);
//! 4. `write(data)` → `handle.write`; `resize(c, r)` → `handle.resize` and
//!    `watch.resize`; at the task's end `handle.close()` (later writes fail
//!    with [`TerminalError::Ended`]) and `watch.finish()`; `screen()` keeps
//!    answering from `watch.snapshot()` after the end.

mod screen;
mod task;
mod watch;

#[cfg(test)]
mod tests;

pub use crate::process::{
  TerminalError, TerminalHandle, TerminalSize, INPUT_QUEUE_LIMIT, UNSUPPORTED_MESSAGE,
};
pub use crate::wait::{Settle, SettlePoll};
pub use screen::{
  settled_text, CursorPosition, Screen, ScreenSnapshot, CHECK_INTERVAL_MS, SETTLED_TEXT_MAX_UNITS,
};
pub use task::{TaskTerminal, TerminalTick};
pub use watch::ScreenWatch;

/// Why `write()`/`resize()` (or `screen()`) of a task cannot reach its terminal; the same rule
/// for monitors and shells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TerminalRefusal {
  /// No such entry.
  Unknown,
  /// The task had a terminal and it ended (or its entry settled while it closes).
  Ended,
  /// The task never had one.
  NoTerminal,
}

impl TerminalRefusal {
  /// Which task takes `write()`/`resize()`, by the one rule of both hubs: `known`, whether the
  /// entry exists; `running`, whether it runs; `task`, its task with a live terminal, if any;
  /// `had_one`, whether it left a screen behind (its terminal ended).
  pub fn check<T>(known: bool, running: bool, task: Option<T>, had_one: bool) -> Result<T, Self> {
    match task {
      _ if !known => Err(Self::Unknown),
      // A settled task whose terminal is still closing: it ended.
      Some(_) if !running => Err(Self::Ended),
      Some(task) => Ok(task),
      None if had_one => Err(Self::Ended),
      None => Err(Self::NoTerminal),
    }
  }
}

/// Input for a task's terminal (API.md §6.5): `write()`'s bytes or `resize()`'s size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TerminalInput {
  Write(Vec<u8>),
  Resize(TerminalSize),
}

/// Why input did not reach a task's terminal.
#[derive(Debug)]
pub enum InputError {
  /// The call cannot reach a terminal (the rule of [`TerminalRefusal`]).
  Refused(TerminalRefusal),
  /// The terminal refused it (closed, or its input queue is full).
  Failed(TerminalError),
}

impl TerminalInput {
  /// Hands the input to a live terminal through `write` or `resize`, each
  /// `None` when the task has no terminal after all.
  pub fn deliver(
    self,
    write: impl FnOnce(&[u8]) -> Option<Result<(), TerminalError>>,
    resize: impl FnOnce(TerminalSize) -> Option<Result<(), TerminalError>>,
  ) -> Result<(), InputError> {
    let sent = match self {
      Self::Write(bytes) => write(&bytes),
      Self::Resize(size) => resize(size),
    };
    match sent {
      Some(result) => result.map_err(InputError::Failed),
      None => Err(InputError::Refused(TerminalRefusal::NoTerminal)),
    }
  }
}

/// The terminal calls a hub answers (API.md §6.5), one rule for monitors and shells.
pub trait TerminalTasks {
  /// The screen of `id`'s terminal, kept after it ended until its entry
  /// leaves; `None` for a task without one.
  fn screen(&self, id: &str) -> Result<Option<ScreenSnapshot>, TerminalRefusal>;
  /// Hands `input` to the live terminal of `id`.
  fn send_input(&self, id: &str, input: TerminalInput) -> Result<(), InputError>;
}

/// `TERM` of a terminal-mode child unless the caller's `env` sets it.
pub const TERMINAL_TERM: &str = "xterm-256color";
