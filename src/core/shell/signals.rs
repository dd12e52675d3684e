//! What a background shell's run tells JavaScript while it runs (API.md §6.1,
//! §6.2): its waits (`match` against the sanitised lines of its output,
//! `quiet`, `timeout`) and its settled notifications, judged in Rust where
//! the bytes are read. The `exit` of a wait is resolved by the binding at the
//! settle, with the status the registry settled the shell with.

use crate::task::Stream;
use crate::text::{ecma_trim, sanitize_monitor_line, LineSplitter};
use crate::wait::{Settle, WaitOutcome, WaitSet, WaitSpec};

/// One thing to tell JavaScript, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum RunSignal {
  /// Resolve the wait with this id.
  Wait(u64, WaitOutcome),
  /// No output byte for `settle_ms`: send the settled notification.
  Settled { settle_ms: u64 },
  /// A terminal shell's screen did not change for `settle_ms`: send the
  /// settled notification with the screen's text.
  ScreenSettled { settle_ms: u64, screen: String },
}

/// The waits and settle timer of one run.
#[derive(Default)]
pub struct RunSignals {
  waits: WaitSet,
  settle: Option<Settle>,
  /// Lines of each stream's cleaned text, for `match` (only while a wait needs them).
  splitters: [LineSplitter; 2],
  /// The run settled: nothing more is judged.
  stopped: bool,
}

impl RunSignals {
  pub fn new(settle_ms: Option<u64>) -> Self {
    Self {
      settle: settle_ms.map(Settle::new),
      ..Self::default()
    }
  }

  /// Whether reads must be split into lines (a wait with `match` is pending).
  pub fn observes_lines(&self) -> bool {
    !self.stopped && self.waits.wants_lines()
  }

  /// A wait from now on.
  pub fn add_wait(&mut self, id: u64, spec: WaitSpec, now_ms: i64) {
    if !self.stopped {
      self.waits.add(id, spec, now_ms);
    }
  }

  /// A wait's signal fired: `aborted`, if it was still pending here.
  pub fn abort_wait(&mut self, id: u64, now_ms: i64) -> Option<WaitOutcome> {
    self
      .waits
      .abort(id, crate::task::TaskStatus::Running, now_ms)
  }

  /// A read arrived. True when it armed a settled notification that was not
  /// armed (the caller schedules the timer).
  pub fn on_read(&mut self, now_ms: i64) -> bool {
    if self.stopped {
      return false;
    }
    self.waits.on_activity(now_ms);
    let Some(settle) = self.settle.as_mut() else {
      return false;
    };
    let was_armed = settle.is_armed();
    settle.note_activity(mono(now_ms));
    !was_armed
  }

  /// Cleaned text of one read of `stream` (see `OutputWriter::write_tapped`):
  /// its complete lines are matched against the waits.
  pub fn on_text(&mut self, stream: Stream, text: &str, now_ms: i64, out: &mut Vec<RunSignal>) {
    let waits = &mut self.waits;
    let splitter = &mut self.splitters[stream as usize];
    let mut emit = |line: &str| {
      let clean = sanitize_monitor_line(line);
      if ecma_trim(&clean).is_empty() {
        return;
      }
      for (id, outcome) in waits.on_line(&clean, now_ms) {
        out.push(RunSignal::Wait(id, outcome));
      }
    };
    splitter.push_text(text, &mut emit);
    splitter.end_read(&mut emit);
  }

  /// Quiet periods, timeouts and the settle timer at `now_ms`.
  pub fn take_due(&mut self, now_ms: i64, out: &mut Vec<RunSignal>) {
    if self.stopped {
      return;
    }
    for (id, outcome) in self.waits.take_due(now_ms) {
      out.push(RunSignal::Wait(id, outcome));
    }
    if let Some(settle) = self.settle.as_mut() {
      if settle.take_fired(mono(now_ms)) {
        out.push(RunSignal::Settled {
          settle_ms: settle.settle_ms(),
        });
      }
    }
  }

  /// The next time [`Self::take_due`] has something to do.
  pub fn next_deadline(&self) -> Option<i64> {
    if self.stopped {
      return None;
    }
    [
      self.waits.next_deadline(),
      self.settle.as_ref().and_then(Settle::due).map(|d| d as i64),
    ]
    .into_iter()
    .flatten()
    .min()
  }

  /// Whether the ports of the tree are due to be read for a `port` wait (API.md §6.8).
  pub fn ports_due(&self, now_ms: i64) -> bool {
    !self.stopped && self.waits.ports_due(now_ms)
  }

  /// The ports the tree listens on, read at `now_ms`: the `port` waits they satisfy resolve.
  pub fn on_ports(&mut self, ports: &[u16], now_ms: i64, out: &mut Vec<RunSignal>) {
    if self.stopped {
      return;
    }
    for (id, outcome) in self.waits.on_ports(ports, now_ms) {
      out.push(RunSignal::Wait(id, outcome));
    }
  }

  /// The run settled: nothing more fires (the binding resolves what is left with `exit`).
  pub fn stop(&mut self) {
    self.stopped = true;
  }
}

/// Monotonic milliseconds (never negative) as the settle judgement's clock.
fn mono(now_ms: i64) -> u64 {
  now_ms.max(0) as u64
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::wait::WaitReason;
  use regex::Regex;

  #[test]
  fn lines_split_across_reads_are_matched_once_whole() {
    let mut signals = RunSignals::new(None);
    let spec = WaitSpec {
      matcher: Some(Regex::new("^Local: +http://\\S+$").unwrap()),
      ..WaitSpec::default()
    };
    signals.add_wait(7, spec, 0);
    assert!(signals.observes_lines());
    let mut out = Vec::new();
    signals.on_text(
      Stream::Stdout,
      "building\n  Local:   http://loc",
      5,
      &mut out,
    );
    assert!(out.is_empty());
    signals.on_text(Stream::Stderr, "Local: http://other\n", 6, &mut out);
    signals.on_text(Stream::Stdout, "alhost:5173/\n", 7, &mut out);
    let got: Vec<_> = out
      .iter()
      .map(|s| match s {
        RunSignal::Wait(id, o) => (*id, o.reason, o.line.clone().unwrap()),
        other => panic!("{other:?}"),
      })
      .collect();
    assert_eq!(
      got,
      [(7, WaitReason::Match, "Local: http://other".to_owned())],
      "the first complete matching line wins"
    );
    assert!(!signals.observes_lines());
  }

  #[test]
  fn settle_fires_once_after_reads_stop_and_not_after_the_run_ended() {
    let mut signals = RunSignals::new(Some(200));
    assert!(signals.on_read(10));
    assert!(!signals.on_read(50));
    assert_eq!(signals.next_deadline(), Some(250));
    let mut out = Vec::new();
    signals.take_due(250, &mut out);
    signals.take_due(900, &mut out);
    assert_eq!(out, [RunSignal::Settled { settle_ms: 200 }]);
    assert!(signals.on_read(1000));
    signals.stop();
    out.clear();
    signals.take_due(5000, &mut out);
    assert!(out.is_empty());
    assert_eq!(signals.next_deadline(), None);
  }
}
