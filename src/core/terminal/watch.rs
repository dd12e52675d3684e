//! [`ScreenWatch`]: a terminal task's [`Screen`] with its settle judgement
//! (API.md §6.2 for a terminal: "no visible change for `settleMs`"), giving
//! the integrator one deadline to keep a timer for.
//!
//! ```text
//! on every read:   watch.feed(bytes, now); replies = watch.take_replies();
//!                  arm a timer for watch.next_deadline() if none is pending
//! when it runs:    if watch.on_timer(now) { send the settled notification
//!                  with watch.settled_text() }; re-arm for next_deadline()
//! screen():        watch.snapshot()
//! at the end:      watch.finish()   (no settled notification after it)
//! ```

use super::screen::{Screen, ScreenSnapshot};
use super::TerminalSize;
use crate::wait::Settle;

#[derive(Debug)]
pub struct ScreenWatch {
  screen: Screen,
  settle: Option<Settle>,
}

impl ScreenWatch {
  /// A blank screen of `size` at `now_ms`; `settle_ms` when the task asked
  /// for settled notifications.
  pub fn new(size: TerminalSize, settle_ms: Option<u64>, now_ms: u64) -> ScreenWatch {
    ScreenWatch {
      screen: Screen::new(size, now_ms),
      settle: settle_ms.map(Settle::new),
    }
  }

  pub fn screen(&self) -> &Screen {
    &self.screen
  }

  /// Parses a read; a visible change found arms the settle judgement.
  pub fn feed(&mut self, bytes: &[u8], now_ms: u64) {
    if self.screen.feed(bytes, now_ms) {
      self.note_change();
    }
  }

  /// After `TerminalHandle::resize` succeeded.
  pub fn resize(&mut self, size: TerminalSize, now_ms: u64) {
    if self.screen.resize(size, now_ms) {
      self.note_change();
    }
  }

  fn note_change(&mut self) {
    if let Some(settle) = &mut self.settle {
      settle.note_activity(self.screen.changed_at());
    }
  }

  /// When [`ScreenWatch::on_timer`] has something to do: the settle
  /// deadline, or a pending check of the screen (which may arm it). `None`
  /// without `settle_ms`: snapshots run pending checks themselves.
  pub fn next_deadline(&self) -> Option<u64> {
    let settle = self.settle.as_ref()?;
    match (self.screen.check_due(), settle.due()) {
      (Some(a), Some(b)) => Some(a.min(b)),
      (a, b) => a.or(b),
    }
  }

  /// Runs what is due at `now_ms`. Returns `true` when the screen has now
  /// settled: send one settled notification (it fires once per quiet
  /// spell). A pending check always runs before the settle is judged, so a
  /// change in the last reads is never missed.
  pub fn on_timer(&mut self, now_ms: u64) -> bool {
    let settle_due = self
      .settle
      .as_ref()
      .and_then(Settle::due)
      .is_some_and(|due| due <= now_ms);
    let check_due = self.screen.check_due().is_some_and(|due| due <= now_ms);
    if (settle_due || check_due) && self.screen.refresh() {
      self.note_change();
    }
    self
      .settle
      .as_mut()
      .is_some_and(|settle| settle.take_fired(now_ms))
  }

  /// `screen()`: the snapshot, after any pending check (whose change then
  /// arms the settle judgement like any other).
  pub fn snapshot(&mut self) -> ScreenSnapshot {
    if self.screen.refresh() {
      self.note_change();
    }
    self.screen.snapshot()
  }

  /// The screen text for the settled notification.
  pub fn settled_text(&mut self) -> String {
    self.screen.settled_text()
  }

  /// See [`Screen::take_replies`].
  pub fn take_replies(&mut self) -> Vec<u8> {
    self.screen.take_replies()
  }

  /// The task ended: no settled notification any more. The screen still
  /// answers snapshots.
  pub fn finish(&mut self) {
    if let Some(settle) = &mut self.settle {
      settle.disarm();
    }
    self.settle = None;
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::terminal::CHECK_INTERVAL_MS;

  /// Drives a watch like the integrator: frames at the given times, a
  /// timer at every `next_deadline`, until `end`; returns the firing times.
  fn run(frames: &[(u64, &[u8])], end: u64) -> (Vec<u64>, ScreenWatch) {
    let mut watch = ScreenWatch::new(TerminalSize::DEFAULT, Some(100), 0);
    let mut fired = Vec::new();
    let mut frames = frames.iter().peekable();
    let mut timer: Option<u64> = None;
    for now in 0..=end {
      if let Some(at) = timer.filter(|&at| at <= now) {
        let _ = at;
        timer = None;
        if watch.on_timer(now) {
          fired.push(now);
        }
      }
      while let Some((_, bytes)) = frames.next_if(|(at, _)| *at == now) {
        watch.feed(bytes, now);
      }
      if timer.is_none() {
        timer = watch.next_deadline().map(|at| at.max(now + 1));
      }
    }
    (fired, watch)
  }

  #[test]
  fn a_burst_inside_one_check_interval_is_judged_by_its_end() {
    // Three reads within the interval: the last one's change is found by
    // the timer, dated to that read; it settles 100 ms after it.
    let frames: [(u64, &[u8]); 3] = [(5, b"a"), (7, b"b"), (9, b"c")];
    let (fired, mut watch) = run(&frames, 400);
    assert_eq!(fired, [109]);
    let snapshot = watch.snapshot();
    assert_eq!(snapshot.text, "abc");
    assert_eq!(snapshot.changed_at, 9);
  }

  #[test]
  fn an_identical_redraw_loop_settles_once_a_moving_bar_when_it_stops() {
    let spinner: Vec<(u64, &[u8])> = std::iter::once((10, &b"working"[..]))
      .chain((1..60).map(|i| (10 + i * 7, &b"\rworking"[..])))
      .collect();
    let (fired, _) = run(&spinner, 800);
    assert_eq!(fired, [110]);

    let bars: Vec<Vec<u8>> = (0..60).map(|i| format!("\r{i:>3}%").into_bytes()).collect();
    let frames: Vec<(u64, &[u8])> = bars
      .iter()
      .enumerate()
      .map(|(i, bar)| (10 + i as u64 * 7, bar.as_slice()))
      .collect();
    let (fired, watch) = run(&frames, 800);
    let last = 10 + 59 * 7;
    assert_eq!(watch.screen().changed_at(), last);
    assert_eq!(fired.len(), 1);
    assert!(
      (last + 100..last + 100 + CHECK_INTERVAL_MS).contains(&fired[0]),
      "{fired:?}"
    );
  }

  #[test]
  fn fires_again_after_the_next_change_and_never_after_finish() {
    let frames: [(u64, &[u8]); 2] = [(10, b"one"), (300, b" two")];
    let (fired, mut watch) = run(&frames, 600);
    assert_eq!(fired, [110, 400]);
    watch.feed(b" three", 700);
    assert!(watch.next_deadline().is_some());
    watch.finish();
    assert!(!watch.on_timer(10_000));
    assert_eq!(watch.snapshot().text, "one two three");
  }

  #[test]
  fn a_snapshot_counts_a_pending_change() {
    let mut watch = ScreenWatch::new(TerminalSize::DEFAULT, Some(100), 0);
    watch.feed(b"a", 10);
    watch.feed(b"b", 12);
    assert_eq!(watch.snapshot().changed_at, 12);
    // The settle was pushed to 112.
    assert_eq!(watch.next_deadline(), Some(112));
    assert!(!watch.on_timer(111));
    assert!(watch.on_timer(112));
  }

  #[test]
  fn without_settle_ms_nothing_fires() {
    let mut watch = ScreenWatch::new(TerminalSize::DEFAULT, None, 0);
    watch.feed(b"x", 1);
    watch.feed(b"y", 2);
    assert_eq!(watch.next_deadline(), None);
    assert_eq!(watch.screen().changed_at(), 1);
    assert_eq!(watch.snapshot().changed_at, 2);
    assert!(!watch.on_timer(10_000));
  }

  #[test]
  fn replies_and_resize_pass_through() {
    let mut watch = ScreenWatch::new(TerminalSize::DEFAULT, Some(100), 0);
    watch.feed(b"\x1b[6n", 1);
    assert_eq!(watch.take_replies(), b"\x1b[1;1R");
    watch.resize(TerminalSize { cols: 80, rows: 24 }, 50);
    assert_eq!(watch.next_deadline(), Some(150));
    let snapshot = watch.snapshot();
    assert_eq!(
      (snapshot.cols, snapshot.rows, snapshot.changed_at),
      (80, 24, 50)
    );
  }
}
