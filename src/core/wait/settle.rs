//! The settle judgement of API.md §6.2 as pure logic with an injected
//! clock (epoch ms or any monotonic ms; one kind per `Settle`), for every
//! task: monitors and shells (activity = a byte) and terminals (activity = a
//! visible change of the screen).
//!
//! Activity arms it; once no activity was noted for `settle_ms` it fires,
//! once; the next activity arms it again. Nothing fires before the first
//! activity (a task that printed nothing gets no notification). What counts
//! as activity is the caller's: any output byte for a task without a
//! terminal, a visible change of the screen ([`crate::terminal::Screen::feed`]
//! returning `true`) for a terminal task.
//!
//! Driving it from a timer: after `note_activity`, make sure a timer is
//! pending for [`Settle::due`]; when it runs, [`Settle::poll`] says `Fired`
//! (notify), `Pending` (activity came meanwhile: wait again until the new
//! deadline) or `Idle`. One timer at a time is enough.

/// The shortest and longest `settleMs`.
pub const MIN_SETTLE_MS: u64 = 100;
pub const MAX_SETTLE_MS: u64 = 3_600_000;

/// What [`Settle::poll`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettlePoll {
  /// Not armed: no activity since the last firing (or ever).
  Idle,
  /// Armed; fires at `deadline` unless activity comes first.
  Pending { deadline: u64 },
  /// The deadline passed: notify now. The judgement is disarmed.
  Fired,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settle {
  settle_ms: u64,
  /// The last activity while armed.
  last_activity: Option<u64>,
}

impl Settle {
  pub fn new(settle_ms: u64) -> Settle {
    Settle {
      settle_ms,
      last_activity: None,
    }
  }

  pub fn settle_ms(&self) -> u64 {
    self.settle_ms
  }

  /// Activity at `now`: arms, or pushes the deadline to `now + settle_ms`.
  /// A clock that went back never moves the deadline earlier.
  pub fn note_activity(&mut self, now: u64) {
    self.last_activity = Some(self.last_activity.map_or(now, |last| last.max(now)));
  }

  /// The deadline when armed.
  pub fn due(&self) -> Option<u64> {
    self
      .last_activity
      .map(|last| last.saturating_add(self.settle_ms))
  }

  pub fn is_armed(&self) -> bool {
    self.last_activity.is_some()
  }

  /// `true` once when armed and `now` reached the deadline; it is then
  /// disarmed until the next activity.
  pub fn take_fired(&mut self, now: u64) -> bool {
    self.poll(now) == SettlePoll::Fired
  }

  /// See [`SettlePoll`]; `Fired` disarms.
  pub fn poll(&mut self, now: u64) -> SettlePoll {
    match self.due() {
      None => SettlePoll::Idle,
      Some(deadline) if now >= deadline => {
        self.last_activity = None;
        SettlePoll::Fired
      }
      Some(deadline) => SettlePoll::Pending { deadline },
    }
  }

  /// Forgets any pending firing (the task ended: its terminal notification
  /// says the rest).
  pub fn disarm(&mut self) {
    self.last_activity = None;
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::terminal::{Screen, TerminalSize};

  #[test]
  fn nothing_fires_before_activity() {
    let mut settle = Settle::new(100);
    assert_eq!(settle.due(), None);
    assert_eq!(settle.poll(1_000_000), SettlePoll::Idle);
    assert!(!settle.take_fired(u64::MAX));
  }

  #[test]
  fn fires_once_after_quiet_and_rearms_on_the_next_activity() {
    let mut settle = Settle::new(100);
    settle.note_activity(1000);
    assert_eq!(settle.due(), Some(1100));
    assert_eq!(settle.poll(1099), SettlePoll::Pending { deadline: 1100 });
    assert!(!settle.take_fired(1099));
    assert!(settle.take_fired(1100));
    // Once.
    assert!(!settle.take_fired(1100));
    assert!(!settle.take_fired(5000));
    assert_eq!(settle.poll(5000), SettlePoll::Idle);
    // Re-armed.
    settle.note_activity(6000);
    assert_eq!(settle.due(), Some(6100));
    assert!(settle.take_fired(6150));
  }

  #[test]
  fn activity_pushes_the_deadline() {
    let mut settle = Settle::new(100);
    for now in (0..1000).step_by(50) {
      settle.note_activity(now);
      assert!(!settle.take_fired(now + 99), "at {now}");
    }
    assert_eq!(settle.due(), Some(1050));
    // A timer set for the first deadline finds a later one.
    assert_eq!(settle.poll(100), SettlePoll::Pending { deadline: 1050 });
    assert!(settle.take_fired(1050));
  }

  #[test]
  fn a_clock_going_back_does_not_bring_the_deadline_forward() {
    let mut settle = Settle::new(100);
    settle.note_activity(1000);
    settle.note_activity(900);
    assert_eq!(settle.due(), Some(1100));
  }

  #[test]
  fn disarm_forgets_the_pending_firing() {
    let mut settle = Settle::new(100);
    settle.note_activity(0);
    settle.disarm();
    assert!(!settle.take_fired(1000));
  }

  #[test]
  fn saturates_at_the_end_of_time() {
    let mut settle = Settle::new(3_600_000);
    settle.note_activity(u64::MAX - 1);
    assert_eq!(settle.due(), Some(u64::MAX));
  }

  /// Feeds `frames` to a screen, one every 30 ms, noting visible changes;
  /// returns how often the settle (100 ms) fired, polled every 10 ms until
  /// 200 ms after the last frame.
  fn firings(frames: &[&[u8]]) -> (usize, Settle) {
    let mut screen = Screen::new(TerminalSize::DEFAULT, 0);
    let mut settle = Settle::new(100);
    let mut fired = 0;
    let end = frames.len() as u64 * 30 + 200;
    for now in (0..end).step_by(10) {
      if now % 30 == 0 {
        if let Some(frame) = frames.get((now / 30) as usize) {
          if screen.feed(frame, now) {
            settle.note_activity(now);
          }
        }
      }
      fired += usize::from(settle.take_fired(now));
    }
    (fired, settle)
  }

  #[test]
  fn an_identical_redraw_does_not_rearm_a_moving_bar_does() {
    // `\rworking` again and again: the first frame is the only change, so
    // it fires 100 ms after it although frames keep coming.
    let mut spinner: Vec<&[u8]> = vec![b"\x1b[?25lworking"];
    spinner.extend(std::iter::repeat_n(&b"\rworking"[..], 20));
    // A cursor blink is no change either.
    spinner.extend([&b"\x1b[?25h"[..], b"\x1b[?25l", b"\x1b[?25h"]);
    let (fired, _) = firings(&spinner);
    assert_eq!(fired, 1);

    // A moving bar keeps it armed until it stops, then fires once.
    let bars: Vec<Vec<u8>> = (0..20)
      .map(|i| format!("\r[{}{}]", "#".repeat(i), " ".repeat(19 - i)).into_bytes())
      .collect();
    let bars: Vec<&[u8]> = bars.iter().map(Vec::as_slice).collect();
    let (fired, settle) = firings(&bars);
    assert_eq!(fired, 1);
    assert_eq!(settle.due(), None);

    // The same bar, judged by bytes (a task without a terminal), would
    // behave alike; but the spinner would never settle while it spins:
    let mut by_bytes = Settle::new(100);
    let mut fired = 0;
    for (i, _) in spinner.iter().enumerate() {
      let now = i as u64 * 30;
      by_bytes.note_activity(now);
      fired += usize::from(by_bytes.take_fired(now + 29));
    }
    assert_eq!(fired, 0);
  }

  #[test]
  fn a_spinner_whose_frames_differ_is_a_change() {
    let frames: Vec<&[u8]> = [b"\r|", b"\r/", b"\r-", b"\r\\"]
      .iter()
      .cycle()
      .take(20)
      .map(|f| &f[..])
      .collect();
    let (fired, _) = firings(&frames);
    // Fires only after the spinner stops.
    assert_eq!(fired, 1);
    let mut screen = Screen::new(TerminalSize::DEFAULT, 0);
    assert!(screen.feed(b"\r|", 100));
    assert!(screen.feed(b"\r/", 200));
    assert!(!screen.feed(b"\r/", 300));
    assert_eq!(screen.changed_at(), 200);
  }
}
