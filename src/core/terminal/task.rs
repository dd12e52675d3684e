//! A running task's terminal, as monitors and background shells hold it: the
//! input [`TerminalHandle`] and the [`ScreenWatch`] fed with every read, with
//! the bookkeeping of one timer for the screen's settle judgement. Times are
//! epoch milliseconds (the screen's `changedAt` is one).

use std::sync::Mutex;

use super::{ScreenSnapshot, ScreenWatch, TerminalError, TerminalHandle, TerminalSize};
use crate::sync::lock;

/// What a timer run decided.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TerminalTick {
  /// The screen settled: send the settled notification with this screen text.
  pub settled_text: Option<String>,
  /// Arm the timer again for this time.
  pub next: Option<u64>,
}

#[derive(Debug)]
struct State {
  watch: ScreenWatch,
  /// The time the timer is armed for, if one is.
  timer_at: Option<u64>,
  ended: bool,
}

/// One task's terminal.
#[derive(Debug)]
pub struct TaskTerminal {
  handle: TerminalHandle,
  state: Mutex<State>,
}

impl TaskTerminal {
  /// `settle_ms`: the task's `settleMs`, judged on the screen.
  pub fn new(handle: TerminalHandle, settle_ms: Option<u64>, now_ms: u64) -> Self {
    let size = handle.size();
    Self {
      handle,
      state: Mutex::new(State {
        watch: ScreenWatch::new(size, settle_ms, now_ms),
        timer_at: None,
        ended: false,
      }),
    }
  }

  /// A read of the terminal: the screen follows it, and the program's
  /// queries (cursor position, device attributes) are answered. Returns the
  /// time to arm the timer for, when none is armed.
  pub fn feed(&self, bytes: &[u8], now_ms: u64) -> Option<u64> {
    let (replies, arm) = {
      let mut state = lock(&self.state);
      state.watch.feed(bytes, now_ms);
      let replies = state.watch.take_replies();
      (replies, Self::arm(&mut state))
    };
    if !replies.is_empty() {
      if let Err(error) = self.handle.write(&replies) {
        tracing::debug!(%error, "taskstream: could not answer a terminal query");
      }
    }
    arm
  }

  fn arm(state: &mut State) -> Option<u64> {
    if state.ended || state.timer_at.is_some() {
      return None;
    }
    let next = state.watch.next_deadline()?;
    state.timer_at = Some(next);
    Some(next)
  }

  /// The timer armed by [`Self::feed`] (or by a previous tick) fired.
  pub fn tick(&self, now_ms: u64) -> TerminalTick {
    let mut state = lock(&self.state);
    state.timer_at = None;
    if state.ended {
      return TerminalTick::default();
    }
    let settled = state.watch.on_timer(now_ms);
    TerminalTick {
      settled_text: settled.then(|| state.watch.settled_text()),
      next: Self::arm(&mut state),
    }
  }

  /// `screen()`.
  pub fn snapshot(&self) -> ScreenSnapshot {
    lock(&self.state).watch.snapshot()
  }

  /// `write()`: queued for the terminal's input, never blocking.
  pub fn write(&self, bytes: &[u8]) -> Result<(), TerminalError> {
    if lock(&self.state).ended {
      return Err(TerminalError::Ended);
    }
    self.handle.write(bytes)
  }

  /// `resize()`: the terminal's size (the kernel sends SIGWINCH) and the screen's.
  pub fn resize(&self, size: TerminalSize, now_ms: u64) -> Result<Option<u64>, TerminalError> {
    let mut state = lock(&self.state);
    if state.ended {
      return Err(TerminalError::Ended);
    }
    self.handle.resize(size)?;
    state.watch.resize(size, now_ms);
    Ok(Self::arm(&mut state))
  }

  /// The task ended: input closes, no settled notification any more; the
  /// screen keeps answering.
  pub fn finish(&self) {
    let mut state = lock(&self.state);
    state.ended = true;
    state.watch.finish();
    drop(state);
    self.handle.close();
  }

  pub fn is_ended(&self) -> bool {
    lock(&self.state).ended
  }
}
