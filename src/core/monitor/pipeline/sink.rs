//! What the pipeline tells its caller about each line ([`LineSink`]), and which lines the
//! caller must see before the throttle decides ([`Observe`]).

use std::sync::Arc;

use crate::monitor::signal::Out;
use crate::text::PlainImportant;

/// Receives what the pipeline decides about each line.
pub trait LineSink {
  /// A sanitised line that passed the throttle: run `emitEvent` with it.
  fn accepted(&mut self, line: &str);
  /// A non-blank line the throttle dropped.
  fn dropped(&mut self);
  /// A sanitised non-blank line, before the throttle decides; called only
  /// while the pipeline observes lines ([`LinePipeline::set_observing`]).
  fn seen(&mut self, _line: &str) {}
  /// The last non-blank line of a run the fast path only counted (sanitised, as
  /// [`Self::seen`] would have shown it); called only with [`Observe::Lines`] `last_line`.
  fn last_line(&mut self, _line: &str) {}
  /// `lines` non-blank lines the throttle dropped.
  fn dropped_many(&mut self, lines: u64) {
    for _ in 0..lines {
      self.dropped();
    }
  }
  /// With a signal lane: a notification the lane lets out (one line, or a
  /// closed window's lines), in order. Lines the lane drops are reported
  /// through [`Self::dropped_many`]. By default each line is [`Self::accepted`].
  fn out(&mut self, out: Out) {
    match out {
      Out::Line { line, .. } => self.accepted(&line),
      Out::Batch { lines, .. } => {
        for line in &lines {
          self.accepted(line);
        }
      }
    }
  }
}

/// Which lines the sink must see before the throttle decides ([`LineSink::seen`]).
#[derive(Clone, Debug, Default)]
pub enum Observe {
  /// None: lines the throttle drops may only be counted.
  #[default]
  Off,
  /// Every line.
  Every,
  /// Runs of plain lines the throttle would only count may still be only counted, but for
  /// the lines `matcher` may match (the pending `waitFor` patterns, see
  /// [`crate::wait::WaitSet::line_matcher`]); every other line is shown to the sink.
  /// With `last_line` (`settleMs` quotes the last line), the last line of each counted run is
  /// passed to [`LineSink::last_line`].
  Lines {
    matcher: Option<Arc<PlainImportant>>,
    last_line: bool,
  },
}

impl Observe {
  /// True when lines on the exact path are built and shown to the sink.
  pub fn sees_lines(&self) -> bool {
    !matches!(self, Self::Off)
  }
}
