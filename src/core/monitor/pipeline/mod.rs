//! The native monitor's byte-to-event pipeline (CONTRACT.md §2.3 layers 1–5,
//! §2.10 "Reading", "throttledEmit", "flushPartialLineBuffers"): per stream a
//! streaming UTF-8 decoder, a streaming ANSI stripper and a line splitter; one
//! token bucket shared by both streams, or, with the options of API.md §6.7,
//! one [`SignalLane`] (batch windows, the importance lane, digests) in its place.
//!
//! `sink.rs`: what the caller hears; `admission.rs`: who decides which lines pass;
//! `stream.rs`: one stream's read loop, fast paths and exact path.

mod admission;
mod sink;
mod stream;
#[cfg(test)]
mod tests;

use super::signal::{DigestNote, SignalConfig, SignalLane};
use super::throttle::{ThrottleConfig, TokenBucket};

use admission::{admit, Admission, ReadDecider};
use stream::StreamState;

pub use crate::task::Stream;
pub use sink::{LineSink, Observe};

pub struct LinePipeline {
  streams: [StreamState; 2],
  admission: Admission,
  closed: bool,
  /// Build every line, dropped ones included, and show it to [`LineSink::seen`].
  observing: Observe,
  /// Terminal output: each line keeps the last frame of its `\r` redraws.
  frames: bool,
  /// Take the fast paths ([`StreamState::feed`]); off only in tests that
  /// compare them with the exact path.
  fast_paths: bool,
}

impl LinePipeline {
  /// `throttle: None` turns throttling off.
  pub fn new(throttle: Option<ThrottleConfig>, start_mono_ms: i64) -> Self {
    Self {
      streams: Default::default(),
      admission: Admission::Bucket(throttle.map(|c| TokenBucket::new(c, start_mono_ms))),
      closed: false,
      observing: Observe::Off,
      frames: false,
      fast_paths: true,
    }
  }

  /// With §6.7 options (`signal` not [`SignalConfig::is_default`]), a
  /// [`SignalLane`] takes the token bucket's place; `max_events` is the
  /// entry's `maxEvents`. With default options, [`Self::new`].
  pub fn with_signal(
    throttle: Option<ThrottleConfig>,
    signal: SignalConfig,
    max_events: u64,
    start_mono_ms: i64,
  ) -> Self {
    let mut pipeline = Self::new(throttle, start_mono_ms);
    if !signal.is_default() {
      pipeline.admission = Admission::Lane(Box::new(SignalLane::new(
        signal,
        throttle,
        max_events,
        start_mono_ms,
      )));
    }
    pipeline
  }

  /// Turns the fast paths off (on by default): every byte then takes the exact path, which
  /// defines what the fast paths must give. For comparing the two (tests, fuzzing).
  pub fn set_fast_paths(&mut self, on: bool) {
    self.fast_paths = on;
  }

  /// True when a [`SignalLane`] decides (§6.7 options were given).
  pub fn has_lane(&self) -> bool {
    matches!(self.admission, Admission::Lane(_))
  }

  /// With a lane: closes the open window if it is due at `now_mono_ms` (the
  /// window timer fired). Ignored once the pipeline is closed.
  pub fn poll(&mut self, now_mono_ms: i64, sink: &mut impl LineSink) {
    if let (Admission::Lane(lane), false) = (&mut self.admission, self.closed) {
      lane.poll(now_mono_ms, &mut |out| sink.out(out));
      sink.dropped_many(lane.take_dropped());
    }
  }

  /// With a lane: when the open window is due, for a timer that then calls
  /// [`Self::poll`]; `None` when no delivered window is open.
  pub fn deadline(&self) -> Option<i64> {
    match &self.admission {
      Admission::Lane(lane) if !self.closed => lane.deadline(),
      _ => None,
    }
  }

  /// With a lane: closes the open window whatever its age (before a settled
  /// notification; [`Self::flush`] does it at stop). Partial lines stay.
  pub fn flush_windows(&mut self, sink: &mut impl LineSink) {
    if let (Admission::Lane(lane), false) = (&mut self.admission, self.closed) {
      lane.flush_all(&mut |out| sink.out(out));
    }
  }

  /// With a lane and `digest`: the lines dropped since the previous
  /// notification, for a settled or terminal one (after [`Self::flush_windows`]
  /// or [`Self::flush`]).
  pub fn take_digest(&mut self) -> Option<DigestNote> {
    match &mut self.admission {
      Admission::Lane(lane) => lane.take_digest(),
      Admission::Bucket(_) => None,
    }
  }

  /// Pieces produced by both splitters (`linesSeen`).
  pub fn lines_seen(&self) -> u64 {
    self.streams.iter().map(|s| s.splitter.pieces()).sum()
  }

  /// Bytes of over-long lines cut off by both splitters (`truncatedBytes`).
  pub fn truncated_bytes(&self) -> u64 {
    self
      .streams
      .iter()
      .map(|s| s.splitter.truncated_bytes())
      .sum()
  }

  pub fn is_closed(&self) -> bool {
    self.closed
  }

  /// Which lines are built and sanitised and shown to the sink before the
  /// throttle decides (waits with `match`, `settleMs`); see [`Observe`].
  pub fn set_observing(&mut self, observe: Observe) {
    self.observing = observe;
  }

  /// Terminal output (API.md §6.5): a `\r` redraw keeps only its last frame
  /// and `\r\n` ends a line, as a person reads the screen. Reads then take the
  /// exact path.
  pub fn set_frames(&mut self, on: bool) {
    self.frames = on;
  }

  /// Processes one read. Ignored once the pipeline is closed.
  pub fn feed(&mut self, stream: Stream, bytes: &[u8], now_mono_ms: i64, sink: &mut impl LineSink) {
    if self.closed {
      return;
    }
    let state = &mut self.streams[stream as usize];
    let admission = &mut self.admission;
    let observing = self.observing.sees_lines();
    if let Admission::Lane(lane) = admission {
      // A window due by now closes before this read's lines are decided.
      lane.poll(now_mono_ms, &mut |out| sink.out(out));
    }
    if self.frames {
      let text = state.text.push(bytes).to_owned();
      let mut emit = |line: &str| admit(admission, line, now_mono_ms, observing, sink);
      state.push_frames(&text, &mut emit);
      state.splitter.end_read(&mut emit);
      admission.end_read(0, now_mono_ms, sink);
      return;
    }
    if !self.fast_paths {
      let text = state.text.push(bytes);
      state.splitter.push(text, &mut |line| {
        admit(admission, line, now_mono_ms, observing, sink)
      });
      admission.end_read(0, now_mono_ms, sink);
      return;
    }
    let mut decide = ReadDecider::new(admission, now_mono_ms, &self.observing, sink);
    state.feed(bytes, &mut decide);
    decide.end_read();
  }

  /// Finishes decoding (an incomplete UTF-8 sequence becomes U+FFFD) and
  /// releases a still-held escape sequence as unterminated, as `stripAnsi`
  /// resolves the end of a text (CONTRACT.md §3.17: the text after an
  /// unterminated `ESC ]` is never swallowed), then passes on stdout's and
  /// stderr's partial lines; with a lane, the open window then closes.
  /// Idempotent. Does not close the pipeline.
  pub fn flush(&mut self, now_mono_ms: i64, sink: &mut impl LineSink) {
    if self.closed {
      return;
    }
    let admission = &mut self.admission;
    let observing = self.observing.sees_lines();
    let frames = self.frames;
    for state in &mut self.streams {
      let text = state.text.finish().to_owned();
      let mut emit = |line: &str| admit(admission, line, now_mono_ms, observing, sink);
      if frames {
        state.push_frames(&text, &mut emit);
        state.frames.finish();
      } else {
        state.splitter.push_text(&text, &mut emit);
      }
      state.splitter.end_read(&mut emit);
      state
        .splitter
        .flush(&mut |line| admit(admission, line, now_mono_ms, observing, sink));
    }
    if let Admission::Lane(lane) = admission {
      // The partial lines joined the open window, which closes now.
      lane.flush_all(&mut |out| sink.out(out));
      sink.dropped_many(lane.take_dropped());
    }
  }

  /// Stops processing: later reads are discarded, pending partial lines dropped.
  pub fn close(&mut self) {
    self.closed = true;
    for state in &mut self.streams {
      state.splitter.discard();
      state.text.discard_pending();
    }
  }
}
