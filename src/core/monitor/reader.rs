//! The reading side of a native monitor without processes or threads: its
//! [`LinePipeline`] and the calls that carry the pipeline's decisions into the
//! registry, in the order CONTRACT.md §2.10 and API.md §6.2/§6.7 fix.
//! `native::NativeMonitor` holds one under its pipeline lock and calls it from
//! the reactor (reads, the window timer), the idle watcher (settled) and
//! whoever stops the task (flush); tests drive one with an injected clock.
//!
//! Lock order: the reader, then the registry (inside [`MonitorHub::apply`]).
//!
//! With a signal lane (§6.7):
//! * each read first closes a window that is due, then decides its lines;
//! * a window is closed by time, and important lines held for the next token
//!   leave when the bucket refills, through a timer the caller arms at
//!   [`ReadOutcome::timer`] and that calls [`Reader::on_timer`];
//! * before a settled notification, held lines or the open window are flushed
//!   ([`Reader::settle_due`]), and the settled notification carries the digest;
//! * at stop, [`Reader::flush`] flushes partial lines, then held lines or the
//!   window, and
//!   leaves the digest on the entry for its terminal notification.

use std::sync::Mutex;

use super::hub::MonitorHub;
use super::pipeline::{LinePipeline, LineSink, Observe, Stream};
use super::registry::{Effect, MonitorRegistry};
use super::signal::{Mark, Out, SignalConfig};
use super::throttle::ThrottleConfig;
use crate::sync::lock;

/// What a read (or a timer) decided, collected under the reader lock and
/// applied to the registry at once.
#[derive(Debug, Default)]
pub struct Decisions {
  /// Lines that passed the token bucket, in order (no lane).
  accepted: Vec<String>,
  /// What the lane let out, in order (with a lane).
  outs: Vec<Out>,
  dropped: u64,
  /// Every line, accepted or dropped, while the pipeline observes lines.
  seen: Vec<String>,
  /// The read's last line, seen or the last of a counted run (for `settleMs`).
  last: Option<String>,
}

impl Decisions {
  /// Shows the lines to the entry's waits, runs the accepted lines through
  /// `emitEvent` (or the lane's notifications through their own emits) and
  /// counts the dropped ones.
  pub fn apply(self, r: &mut MonitorRegistry, id: &str, wall_ms: f64, mono_ms: i64) -> Vec<Effect> {
    let mut effects = r.observe_lines(id, &self.seen, mono_ms);
    if let Some(last) = self.last {
      r.record_last_line(id, last);
    }
    for line in &self.accepted {
      effects.extend(r.emit_event(id, line, wall_ms, mono_ms));
    }
    for out in self.outs {
      effects.extend(match out {
        Out::Line { line, digest } => r.emit_event_with_digest(id, &line, digest, wall_ms, mono_ms),
        Out::Batch {
          lines,
          marks,
          digest,
        } => r.emit_batch(id, lines, marks, digest, wall_ms, mono_ms),
      });
    }
    r.record_dropped(id, self.dropped);
    effects
  }
}

impl LineSink for Decisions {
  fn seen(&mut self, line: &str) {
    self.seen.push(line.to_owned());
    self.last = None;
  }
  fn last_line(&mut self, line: &str) {
    self.last = Some(line.to_owned());
  }
  fn accepted(&mut self, line: &str) {
    self.accepted.push(line.to_owned());
  }
  fn dropped(&mut self) {
    self.dropped += 1;
  }
  fn dropped_many(&mut self, lines: u64) {
    self.dropped += lines;
  }
  fn out(&mut self, out: Out) {
    self.outs.push(out);
  }
}

/// What the caller must do after a read, a timer or a settled check.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadOutcome {
  /// The read armed a settled notification that was not armed: poke the idle watcher.
  pub settle_armed: bool,
  /// The entry is no longer running (max events): stop reading and kill now.
  pub settled: bool,
  /// Arm the window timer for this monotonic time and call [`Reader::on_timer`] then.
  pub timer: Option<i64>,
}

pub struct Reader {
  id: String,
  pipeline: LinePipeline,
  /// The window timer armed, for this time; at most one at a time.
  timer_at: Option<i64>,
}

impl Reader {
  /// `signal`: the §6.7 options (their default keeps the token bucket);
  /// `max_events`: the entry's `maxEvents`.
  pub fn new(
    id: &str,
    throttle: Option<ThrottleConfig>,
    signal: SignalConfig,
    max_events: u64,
    start_mono_ms: i64,
  ) -> Self {
    Self {
      id: id.to_owned(),
      pipeline: LinePipeline::with_signal(throttle, signal, max_events, start_mono_ms),
      timer_at: None,
    }
  }

  pub fn is_closed(&self) -> bool {
    self.pipeline.is_closed()
  }

  /// True when a signal lane decides: the reader then sends the entry's
  /// settled notifications ([`Self::settle_due`]).
  pub fn has_lane(&self) -> bool {
    self.pipeline.has_lane()
  }

  /// One read: bytes counted (the idle deadline moves), lines decided, then
  /// their notifications queued, all before the reader lock is released so
  /// the two streams' effects reach the outbox in the order their lines
  /// completed. `observing` is updated under the registry lock (a wait that
  /// resolved may have been the last one that needed lines). `None` once closed.
  pub fn read(
    &mut self,
    hub: &MonitorHub,
    stream: Stream,
    bytes: &[u8],
    observing: &Mutex<Observe>,
    now_mono_ms: i64,
    wall_ms: f64,
  ) -> Option<ReadOutcome> {
    if self.pipeline.is_closed() {
      return None;
    }
    self.pipeline.set_observing(lock(observing).clone());
    let mut decisions = Decisions::default();
    self
      .pipeline
      .feed(stream, bytes, now_mono_ms, &mut decisions);
    let (lines_seen, truncated) = (self.pipeline.lines_seen(), self.pipeline.truncated_bytes());
    let mut outcome = ReadOutcome::default();
    let id = self.id.as_str();
    hub.apply(|r| {
      outcome.settle_armed = r.record_bytes(id, bytes.len() as u64, now_mono_ms);
      r.record_splitter_counts(id, lines_seen, truncated);
      let effects = decisions.apply(r, id, wall_ms, now_mono_ms);
      outcome.settled = !r.is_running(id);
      *lock(observing) = r.observation(id);
      effects
    });
    outcome.timer = self.timer_to_arm();
    Some(outcome)
  }

  /// The lane's timer fired: a window that is due closes and leaves, held
  /// lines leave on the token that refilled.
  /// `armed_at` is the time the timer was armed for ([`ReadOutcome::timer`]):
  /// a timer that is no longer the armed one (an earlier one replaced it) only
  /// polls.
  pub fn on_timer(
    &mut self,
    hub: &MonitorHub,
    armed_at: i64,
    now_mono_ms: i64,
    wall_ms: f64,
  ) -> ReadOutcome {
    if self.timer_at == Some(armed_at) {
      self.timer_at = None;
    }
    let mut outcome = ReadOutcome::default();
    if self.pipeline.is_closed() {
      return outcome;
    }
    let mut decisions = Decisions::default();
    self.pipeline.poll(now_mono_ms, &mut decisions);
    let id = self.id.as_str();
    hub.apply(|r| {
      let effects = decisions.apply(r, id, wall_ms, now_mono_ms);
      outcome.settled = !r.is_running(id);
      effects
    });
    // Whatever is not yet due (the timer's clock rounds otherwise) gets a timer.
    outcome.timer = self.timer_to_arm();
    outcome
  }

  /// At stop, before the pipeline closes: partial lines, then the held lines
  /// or the open window, leave. With a lane (API.md §6.7) what leaves then
  /// rides in the terminal notification (its lines and the lines dropped
  /// since the last notification are left on the entry for it); without, the
  /// partial lines go out as events.
  pub fn flush(&mut self, hub: &MonitorHub, observing: Observe, now_mono_ms: i64, wall_ms: f64) {
    if self.pipeline.is_closed() {
      return;
    }
    let mut decisions = Decisions::default();
    self.pipeline.set_observing(observing);
    self.pipeline.flush(now_mono_ms, &mut decisions);
    let (mut end_lines, mut end_marks, mut digests) = (Vec::new(), Vec::new(), Vec::new());
    for out in std::mem::take(&mut decisions.outs) {
      match out {
        Out::Line { line, digest } => {
          end_lines.push(line);
          end_marks.push(Mark::Ordinary);
          digests.push(digest);
        }
        Out::Batch {
          lines,
          marks,
          digest,
        } => {
          end_lines.extend(lines);
          end_marks.extend(marks);
          digests.push(digest);
        }
      }
    }
    digests.push(self.pipeline.take_digest());
    let (lines_seen, truncated) = (self.pipeline.lines_seen(), self.pipeline.truncated_bytes());
    let id = self.id.as_str();
    hub.apply(|r| {
      r.record_splitter_counts(id, lines_seen, truncated);
      let effects = decisions.apply(r, id, wall_ms, now_mono_ms);
      r.set_end_lines(id, end_lines, end_marks, wall_ms);
      for digest in digests {
        r.set_end_digest(id, digest);
      }
      effects
    });
  }

  /// Stops processing: later reads are discarded, pending partial lines and
  /// the open window dropped.
  pub fn close(&mut self) {
    self.pipeline.close();
  }

  /// With a lane, from the idle watcher: if the entry's settled notification
  /// is due, the open window leaves first, then the settled notification with
  /// the digest. A closed reader (the task is stopping; its terminal
  /// notification follows) disarms it instead.
  pub fn settle_due(&mut self, hub: &MonitorHub, now_mono_ms: i64, wall_ms: f64) -> ReadOutcome {
    let mut outcome = ReadOutcome::default();
    let id = self.id.as_str();
    if self.pipeline.is_closed() {
      hub.apply(|r| {
        r.disarm_settle(id);
        Vec::new()
      });
      return outcome;
    }
    let pipeline = &mut self.pipeline;
    hub.apply(|r| {
      if !r.settle_is_due(id, now_mono_ms) {
        return Vec::new();
      }
      let mut decisions = Decisions::default();
      pipeline.flush_windows(&mut decisions);
      let digest = pipeline.take_digest();
      let mut effects = decisions.apply(r, id, wall_ms, now_mono_ms);
      effects.extend(r.fire_settled(id, now_mono_ms, digest));
      outcome.settled = !r.is_running(id);
      effects
    });
    outcome
  }

  /// A terminal task's screen settled (API.md §6.5): the open window leaves
  /// first, then the settled notification with the screen and the digest.
  pub fn screen_settled(
    &mut self,
    hub: &MonitorHub,
    settle_ms: u64,
    screen: &str,
    now_mono_ms: i64,
    wall_ms: f64,
  ) -> ReadOutcome {
    let mut outcome = ReadOutcome::default();
    if self.pipeline.is_closed() {
      return outcome;
    }
    let id = self.id.as_str();
    let pipeline = &mut self.pipeline;
    hub.apply(|r| {
      if !r.is_running(id) {
        return Vec::new();
      }
      let mut decisions = Decisions::default();
      pipeline.flush_windows(&mut decisions);
      let digest = pipeline.take_digest();
      let mut effects = decisions.apply(r, id, wall_ms, now_mono_ms);
      effects.extend(r.fire_screen_settled(id, settle_ms, screen, digest));
      outcome.settled = !r.is_running(id);
      effects
    });
    outcome
  }

  /// Terminal output: lines keep the last frame of `\r` redraws.
  pub fn set_frames(&mut self, on: bool) {
    self.pipeline.set_frames(on);
  }

  /// The time the armed timer is for, if one is armed.
  pub fn armed_timer(&self) -> Option<i64> {
    self.timer_at
  }

  /// A timer to arm: for the lane's deadline, unless one armed fires by then. A later timer
  /// left armed fires for nothing (a poll with nothing due).
  fn timer_to_arm(&mut self) -> Option<i64> {
    let deadline = self.pipeline.deadline()?;
    if self.timer_at.is_some_and(|at| at <= deadline) {
      return None;
    }
    self.timer_at = Some(deadline);
    Some(deadline)
  }
}
