//! The native monitor's byte-to-event pipeline (CONTRACT.md §2.3 layers 1–5,
//! §2.10 "Reading", "throttledEmit", "flushPartialLineBuffers"): per stream a
//! streaming UTF-8 decoder, a streaming ANSI stripper and a line splitter; one
//! token bucket shared by both streams, or, with the options of API.md §6.7,
//! one [`SignalLane`] (batch windows, the importance lane, digests) in its place.

use std::sync::Arc;

use super::signal::{DigestNote, LineText, Out, SignalConfig, SignalLane};
use super::throttle::{ThrottleConfig, TokenBucket};
use crate::core::text::{
  count_lines, find_either, find_line_end_or_not_plain, incomplete_utf8_tail, is_ecma_whitespace,
  sanitize_monitor_line, scan_discarded, CleanTextStream, FrameCollapser, FramePiece, LineCount,
  Source, MAX_HELD_SEQUENCE_CHARS,
};
use crate::core::text::{first_and_last, plain_lines_counted, PlainImportant};
use crate::core::text::{LineSplitter, PARTIAL_LINE_CAP_UNITS};

pub use crate::core::task::Stream;

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
  /// [`crate::core::wait::WaitSet::line_matcher`]); every other line is shown to the sink.
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

/// Who decides which lines pass.
#[derive(Debug)]
enum Admission {
  /// The TypeScript `throttledEmit`: one token per line (`None`: no throttle).
  Bucket(Option<TokenBucket>),
  /// §6.7 options: batch windows, the importance lane, digests.
  Lane(Box<SignalLane>),
}

/// What the fast paths of a read may do with complete lines ([`StreamState::feed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counting {
  /// Every line takes the exact path.
  Off,
  /// No line of the read can pass and none needs its text: lines are only counted.
  All,
  /// A lane with `important` or `digest` that drops every line `important` does not match:
  /// runs of plain lines none of which may be important are counted (and their first and last
  /// lines quoted), the rest take the exact path; checked again after each exact line.
  Plain { tight: bool },
}

impl Admission {
  /// True when no line of a read at `now_mono_ms` can pass and none needs
  /// its text: the read's lines may only be counted (see [`StreamState::feed`]).
  fn counts_only(&self, now_mono_ms: i64) -> bool {
    match self {
      Self::Bucket(bucket) => bucket.as_ref().is_some_and(|b| !b.has_token(now_mono_ms)),
      Self::Lane(lane) => lane.counts_only(now_mono_ms),
    }
  }

  /// [`Counting::Plain`] when it applies at `now_mono_ms`.
  fn counts_plain(&self, now_mono_ms: i64) -> Counting {
    match self {
      Self::Lane(lane) if lane.counts_plain(now_mono_ms) => Counting::Plain {
        tight: lane
          .plain_important()
          .is_some_and(|important| important.needs_tight_lines()),
      },
      _ => Counting::Off,
    }
  }

  /// The end of a read or flush: `counted` lines the fast path only counted,
  /// and, with a lane, the lines it dropped, go to the sink.
  fn end_read(&mut self, counted: u64, now_mono_ms: i64, sink: &mut impl LineSink) {
    match self {
      Self::Bucket(bucket) => {
        if let Some(bucket) = bucket.as_mut().filter(|_| counted > 0) {
          // The counted lines' `try_take`: it fails, but a clock that went back (reader
          // threads take their time before the pipeline lock) moves the refill point.
          let taken = bucket.try_take(now_mono_ms);
          debug_assert!(!taken, "no token at a throttled-out read's time");
        }
        sink.dropped_many(counted);
      }
      Self::Lane(lane) => {
        if counted > 0 {
          lane.count_dropped(counted, now_mono_ms);
        }
        sink.dropped_many(lane.take_dropped());
      }
    }
  }
}

/// Where [`StreamState::feed`] sends what it decides about a read's lines.
trait Decide {
  /// A line of the exact path, to admit.
  fn line(&mut self, line: &str);
  /// What the fast paths may count from here on.
  fn counting(&self) -> Counting;
  /// With [`Counting::Plain`]: how much of `lines` (complete plain lines) may be counted, up
  /// to the first line that may be important.
  fn countable(&self, lines: &[u8]) -> usize;
  /// `count` of the complete lines `lines` were counted (their pieces and truncated bytes are
  /// the splitter's): `count.non_blank` are dropped.
  fn counted(&mut self, count: LineCount, lines: &[u8]);
}

/// [`Decide`] for one read at a fixed time.
struct ReadDecider<'a, S: LineSink> {
  admission: &'a mut Admission,
  now_mono_ms: i64,
  /// Lines on the exact path are shown to the sink.
  observing: bool,
  /// With [`Observe::Lines`]: only runs in which it finds nothing may be counted.
  matcher: Option<&'a PlainImportant>,
  /// With [`Observe::Lines`]: counted runs give their last line to the sink.
  last_line: bool,
  /// [`Observe::Every`]: every line is built.
  every: bool,
  sink: &'a mut S,
  /// The read's counting mode, fixed at its start but for [`Counting::Plain`], which ends when
  /// the lane lets a line pass.
  counting: Counting,
  /// Lines counted in [`Counting::All`], for [`Admission::end_read`].
  dropped: u64,
}

impl<'a, S: LineSink> ReadDecider<'a, S> {
  fn new(
    admission: &'a mut Admission,
    now_mono_ms: i64,
    observe: &'a Observe,
    sink: &'a mut S,
  ) -> Self {
    let (matcher, last_line) = match observe {
      Observe::Lines { matcher, last_line } => (matcher.as_deref(), *last_line),
      _ => (None, false),
    };
    let mut decider = Self {
      admission,
      now_mono_ms,
      observing: observe.sees_lines(),
      matcher,
      last_line,
      every: matches!(observe, Observe::Every),
      sink,
      counting: Counting::Off,
      dropped: 0,
    };
    decider.counting = decider.mode();
    decider
  }

  /// What the fast paths may count at this read's time. The time is fixed, so once the bucket
  /// is empty no line of the read can pass: lines then only need counting (the firehose case),
  /// unless someone must see them; a matcher that must see some of them leaves the runs of
  /// plain lines in which it finds nothing.
  fn mode(&self) -> Counting {
    if self.every {
      return Counting::Off;
    }
    let admission = if self.admission.counts_only(self.now_mono_ms) {
      Counting::All
    } else {
      self.admission.counts_plain(self.now_mono_ms)
    };
    if !self.observing {
      return admission;
    }
    // Observing: only plain runs may be counted (every other line is built and seen).
    let tight = self.matcher.is_some_and(PlainImportant::needs_tight_lines);
    match admission {
      Counting::Off => Counting::Off,
      Counting::All => Counting::Plain { tight },
      Counting::Plain { tight: lane } => Counting::Plain {
        tight: lane || tight,
      },
    }
  }

  fn end_read(self) {
    self
      .admission
      .end_read(self.dropped, self.now_mono_ms, self.sink);
  }
}

impl<S: LineSink> Decide for ReadDecider<'_, S> {
  fn line(&mut self, line: &str) {
    admit(
      self.admission,
      line,
      self.now_mono_ms,
      self.observing,
      self.sink,
    );
    if let Counting::Plain { .. } = self.counting {
      self.counting = self.mode();
    }
  }

  fn counting(&self) -> Counting {
    self.counting
  }

  fn countable(&self, lines: &[u8]) -> usize {
    let important = match &*self.admission {
      Admission::Lane(lane) => lane.plain_important(),
      Admission::Bucket(_) => None,
    };
    [important, self.matcher]
      .into_iter()
      .flatten()
      .fold(lines.len(), |end, matcher| {
        matcher.first_candidate(&lines[..end]).unwrap_or(end)
      })
  }

  fn counted(&mut self, count: LineCount, lines: &[u8]) {
    if self.last_line && count.non_blank > 0 {
      if let Some((_, last)) = first_and_last(lines) {
        self.sink.last_line(last);
      }
    }
    match (self.counting, &mut *self.admission) {
      (Counting::Plain { .. }, Admission::Lane(lane)) => {
        lane.count_plain(count.non_blank, lines, self.now_mono_ms);
      }
      _ => self.dropped += count.non_blank,
    }
  }
}

#[derive(Default)]
struct StreamState {
  text: CleanTextStream,
  splitter: LineSplitter,
  /// Terminal output: `\r` redraws keep their last frame ([`LinePipeline::set_frames`]).
  frames: FrameCollapser,
}

impl StreamState {
  /// Text of a read through the frame rule into the splitter.
  fn push_frames(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
    let splitter = &mut self.splitter;
    self.frames.push(text, &mut |piece| match piece {
      FramePiece::Text(text) => splitter.push_text(text, emit),
      FramePiece::ResetLine => splitter.reset_line(),
    });
  }
}

/// Bytes an exact piece of a read starts with while the decoder or the
/// stripper holds something: usually enough to finish a split char or escape
/// sequence, after which the fast paths resume.
const RESYNC_BYTES: usize = 64;

impl StreamState {
  /// One read, through the fast paths where they apply and the exact path
  /// elsewhere; `decide` gets the exact path's lines and the counted ones.
  /// With [`Counting::All`], no line of the read can be accepted (the
  /// throttle has no token and the read's time is fixed), so lines are only
  /// counted. With [`Counting::Plain`] (a lane with `important` or `digest`),
  /// only runs of plain lines are counted, up to the first line that may be
  /// important ([`crate::core::text::PlainImportant`]); that line and every line that is not
  /// plain take the exact path, and `decide` says after each whether counting
  /// goes on.
  ///
  /// The read is cut into pieces. Where the decoder and the stripper hold
  /// nothing, the rest of an over-long line is skipped up to its end
  /// ([`scan_discarded`]) and, when counting, lines are counted
  /// ([`count_lines`]), both straight from the raw bytes, without building
  /// text. Everything else takes the exact path, in pieces that change nothing:
  /// the decoder is streaming; the stripper gives the same output for any cut
  /// as long as no piece but the last makes it give up on a held sequence
  /// (each keeps [`CleanTextStream::held_chars`] plus its length within
  /// [`MAX_HELD_SEQUENCE_CHARS`]), and the fast paths end only where it holds
  /// nothing; the splitter caps the partial line only at the end of the read.
  fn feed(&mut self, bytes: &[u8], decide: &mut impl Decide) {
    // The fast paths never see a char the decoder would hold for the next read.
    let scan_end = bytes.len() - incomplete_utf8_tail(bytes);
    // With `Counting::Plain`: `bytes[..plain_end]` ends a run of plain lines that starts at or
    // before `at` (so each line search looks at each byte once).
    let mut plain_end = 0;
    // The count of the run `plain_lines_counted` found, from where it started: when the whole
    // run may be counted, it is, without counting the lines again.
    let mut plain_count: Option<(usize, LineCount)> = None;
    let mut at = 0;
    while at < bytes.len() {
      let counting = decide.counting();
      if self.text.is_idle() && at < scan_end {
        let scannable = &bytes[at..scan_end];
        if self.splitter.is_discarding() {
          let discarded = scan_discarded(scannable);
          self
            .splitter
            .add_discarded(discarded.text_bytes, discarded.line_ended);
          at += discarded.consumed;
          if discarded.consumed > 0 {
            continue;
          }
        } else if counting != Counting::Off && !self.splitter.mid_line() {
          let limit = match counting {
            Counting::Plain { tight } => {
              if plain_end <= at {
                let (len, count) = plain_lines_counted(scannable, tight);
                plain_end = at + len;
                plain_count = Some((at, count));
              }
              decide.countable(&bytes[at..plain_end])
            }
            _ => scannable.len(),
          };
          let (count, consumed) = match plain_count.take() {
            Some((start, count)) if start == at && at + limit == plain_end => (count, limit),
            _ => count_lines(&scannable[..limit], PARTIAL_LINE_CAP_UNITS, Source::Raw),
          };
          self.splitter.add_counted(count, &mut 0);
          decide.counted(count, &scannable[..consumed]);
          at += consumed;
          if consumed > 0 {
            continue;
          }
        }
      }
      let rest = &bytes[at..];
      let len = self.exact_piece_len(rest, counting != Counting::Off);
      let piece = &rest[..len];
      at += len;
      let mut emit = |line: &str| decide.line(line);
      if at == bytes.len()
        && len > PARTIAL_LINE_CAP_UNITS
        && self.text.is_idle()
        && !self.splitter.mid_line()
        && find_line_end_or_not_plain(piece).is_none()
      {
        // A plain partial line over the cap ends the read: cut at once.
        let text = std::str::from_utf8(piece).expect("ASCII is UTF-8");
        self.splitter.push_last_partial(text, &mut emit);
        break;
      }
      let text = self.text.push(piece);
      if counting == Counting::All {
        let mut dropped = 0;
        self
          .splitter
          .push_text_counting(text, &mut dropped, &mut emit);
        decide.counted(
          LineCount {
            non_blank: dropped,
            ..LineCount::default()
          },
          &[],
        );
      } else {
        self.splitter.push_text(text, &mut emit);
      }
    }
    self.splitter.end_read(&mut |line| decide.line(line));
  }

  /// How much of `rest` (the rest of a read) the exact path takes next: all of
  /// it when nothing faster applies to what follows; otherwise a piece that
  /// lets the stripper give up on no sequence the whole read would complete.
  fn exact_piece_len(&self, rest: &[u8], counting: bool) -> usize {
    let held = self.text.held_chars();
    let room = MAX_HELD_SEQUENCE_CHARS.saturating_sub(held);
    if room == 0 {
      return rest.len();
    }
    if held > 0 {
      // Finish the split char or sequence; a long held one (an OSC waiting
      // for its terminator) gets all the room there is.
      let piece = if held < RESYNC_BYTES {
        RESYNC_BYTES
      } else {
        room
      };
      return rest.len().min(piece).min(room);
    }
    if !counting && !self.splitter.is_discarding() {
      return rest.len();
    }
    // The line the fast paths could not take, or its first `room` bytes when
    // it is longer and an escape sequence could start in it.
    let line = find_either(rest, b'\n', b'\n').map_or(rest.len(), |newline| newline + 1);
    if line <= room || find_either(&rest[..line], ESC, C1_LEAD).is_none() {
      line
    } else {
      room
    }
  }
}

/// ESC, and the UTF-8 lead byte of U+009B (CSI): where escape sequences start.
const ESC: u8 = 0x1B;
const C1_LEAD: u8 = 0xC2;

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

/// §2.10 throttledEmit: lines that sanitise to blank cost no token; the rest
/// take a token or are counted as dropped. The blank check runs before the
/// (allocating) sanitiser so a flood of dropped lines costs no allocation.
fn throttled_emit(
  bucket: &mut Option<TokenBucket>,
  line: &str,
  now_mono_ms: i64,
  observing: bool,
  sink: &mut impl LineSink,
) {
  if sanitizes_to_blank(line) {
    return;
  }
  if observing {
    let clean = sanitize_monitor_line(line);
    sink.seen(&clean);
    if bucket.as_mut().is_some_and(|b| !b.try_take(now_mono_ms)) {
      sink.dropped();
    } else {
      sink.accepted(&clean);
    }
    return;
  }
  if let Some(bucket) = bucket {
    if !bucket.try_take(now_mono_ms) {
      sink.dropped();
      return;
    }
  }
  sink.accepted(&sanitize_monitor_line(line));
}

/// One line to whoever decides: the bucket ([`throttled_emit`]) or the lane,
/// which gets it raw (sanitised only if it needs the text) unless the sink
/// must see it first.
fn admit(
  admission: &mut Admission,
  line: &str,
  now_mono_ms: i64,
  observing: bool,
  sink: &mut impl LineSink,
) {
  match admission {
    Admission::Bucket(bucket) => throttled_emit(bucket, line, now_mono_ms, observing, sink),
    Admission::Lane(lane) => {
      if sanitizes_to_blank(line) {
        return;
      }
      let text = if observing {
        let clean = sanitize_monitor_line(line);
        sink.seen(&clean);
        LineText::sanitised(clean)
      } else {
        LineText::raw(line)
      };
      lane.offer(text, now_mono_ms, &mut |out| sink.out(out));
    }
  }
}

/// True when `sanitize_monitor_line(line)` would be empty or whitespace-only:
/// every char is a removed control (C0 but TAB, C1) or ECMAScript whitespace.
fn sanitizes_to_blank(line: &str) -> bool {
  line.chars().all(|c| {
    let removed = (c < '\u{20}' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c);
    removed || is_ecma_whitespace(c)
  })
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::core::text::test_support::XorShift;
  use crate::core::text::{ecma_trim, strip_ansi};

  #[derive(Default)]
  struct Collect {
    lines: Vec<String>,
    dropped: u64,
    /// With a lane: each notification's shape (one line or a batch of how many) and digest.
    notes: Vec<(Option<usize>, Option<DigestNote>)>,
    /// Lines shown before the throttle decides (while observing).
    seen: Vec<String>,
    /// The last line seen or passed as the last of a counted run.
    last: Option<String>,
  }

  impl LineSink for Collect {
    fn seen(&mut self, line: &str) {
      self.seen.push(line.to_owned());
      self.last = Some(line.to_owned());
    }
    fn last_line(&mut self, line: &str) {
      self.last = Some(line.to_owned());
    }
    fn accepted(&mut self, line: &str) {
      self.lines.push(line.to_owned());
    }
    fn dropped(&mut self) {
      self.dropped += 1;
    }
    fn out(&mut self, out: Out) {
      match out {
        Out::Line { line, digest } => {
          self.notes.push((None, digest));
          self.lines.push(line);
        }
        Out::Batch { lines, digest } => {
          self.notes.push((Some(lines.len()), digest));
          self.lines.extend(lines);
        }
      }
    }
  }

  fn unthrottled() -> LinePipeline {
    LinePipeline::new(None, 0)
  }

  fn throttled() -> LinePipeline {
    LinePipeline::new(Some(ThrottleConfig::default()), 0)
  }

  #[test]
  fn stdout_and_stderr_keep_separate_partials() {
    // §3.10: stdout "partial", stderr "err line\n", stdout " complete\n".
    let mut p = unthrottled();
    let mut c = Collect::default();
    p.feed(Stream::Stdout, b"partial", 0, &mut c);
    p.feed(Stream::Stderr, b"err line\n", 0, &mut c);
    p.feed(Stream::Stdout, b" complete\n", 0, &mut c);
    assert_eq!(c.lines, ["err line", "partial complete"]);
  }

  #[test]
  fn split_utf8_and_split_ansi_come_out_whole() {
    let mut p = unthrottled();
    let mut c = Collect::default();
    let bytes = "你好\n".as_bytes();
    p.feed(Stream::Stdout, &bytes[..2], 0, &mut c);
    p.feed(Stream::Stdout, &bytes[2..], 0, &mut c);
    p.feed(Stream::Stdout, b"\x1b[3", 0, &mut c);
    p.feed(Stream::Stdout, b"1mred\x1b[0m\n", 0, &mut c);
    assert_eq!(c.lines, ["你好", "red"]);
  }

  #[test]
  fn same_output_for_every_split_offset() {
    let input = "a\x1b[31mred\x1b[0m 你好\r\n\n  \nx\x1b]0;title\x07y\n😀 end\npartial".as_bytes();
    let mut whole = Collect::default();
    let mut p = unthrottled();
    p.feed(Stream::Stdout, input, 0, &mut whole);
    p.flush(0, &mut whole);
    assert_eq!(whole.lines, ["ared 你好", "xy", "😀 end", "partial"]);
    for cut in 0..=input.len() {
      let mut c = Collect::default();
      let mut p = unthrottled();
      p.feed(Stream::Stdout, &input[..cut], 0, &mut c);
      p.feed(Stream::Stdout, &input[cut..], 0, &mut c);
      p.flush(0, &mut c);
      assert_eq!(c.lines, whole.lines, "split at {cut}");
    }
  }

  #[test]
  fn blank_lines_spend_no_token_and_drops_are_counted() {
    let mut p = throttled();
    let mut c = Collect::default();
    p.feed(
      Stream::Stdout,
      b"\n\n\n   \n\t\n\x00\x01\nreal1\nreal2\nreal3\nreal4\nreal5\n",
      0,
      &mut c,
    );
    assert_eq!(c.lines.len(), 5);
    p.feed(Stream::Stderr, b"l6\nl7\n", 0, &mut c);
    assert_eq!(c.dropped, 2);
    p.feed(Stream::Stdout, b"later\n", 1000, &mut c);
    assert_eq!(c.lines.len(), 6);
  }

  #[test]
  fn lines_are_sanitised_before_emit() {
    let mut p = unthrottled();
    let mut c = Collect::default();
    p.feed(Stream::Stdout, b"<result>boom</result>\x7f\n", 0, &mut c);
    assert_eq!(c.lines, ["<\u{200B}result>boom</\u{200B}result>\x7f"]);
  }

  #[test]
  fn flush_finishes_decoding_and_releases_an_unfinished_escape() {
    // At the end, a held sequence is resolved as `stripAnsi` resolves the end
    // of a text: `ESC [` matches nothing, stays, and the sanitiser then
    // removes the ESC (what the TypeScript monitor gave for the whole text).
    let mut p = unthrottled();
    let mut c = Collect::default();
    p.feed(Stream::Stdout, b"tail \xe2", 0, &mut c);
    p.feed(Stream::Stderr, b"err\x1b[", 0, &mut c);
    p.flush(0, &mut c);
    p.flush(0, &mut c);
    assert_eq!(c.lines, ["tail \u{FFFD}", "err["]);
  }

  /// What a monitor delivers for `text` read whole, when no line is over the
  /// cap: the lines of `stripAnsi` of the whole, trimmed and sanitised, blank
  /// ones skipped (CONTRACT.md §3.17, end).
  fn lines_of_strip_ansi(bytes: &[u8]) -> Vec<String> {
    strip_ansi(&String::from_utf8_lossy(bytes))
      .split('\n')
      .map(ecma_trim)
      .filter(|line| !sanitizes_to_blank(line))
      .map(sanitize_monitor_line)
      .collect()
  }

  /// Feeds `bytes` in reads ending at `cuts` (ascending), then flushes.
  fn monitor_lines(bytes: &[u8], cuts: &[usize]) -> Vec<String> {
    let mut p = unthrottled();
    let mut c = Collect::default();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&bytes.len())) {
      p.feed(Stream::Stdout, &bytes[start..end], 0, &mut c);
      start = end;
    }
    p.flush(0, &mut c);
    c.lines
  }

  #[test]
  fn an_unterminated_osc_at_the_end_does_not_swallow_the_output() {
    // `printf '\033]0;'; seq 1 100`: no terminator ever comes, so the OSC
    // alternative fails and the CSI-style one takes `ESC ] 0 ; 1` (parameters
    // `0;1`, then `\n` is no final, so the last digit serves as the final),
    // leaving an empty first line, then 2, …, 100.
    let mut input = b"\x1b]0;".to_vec();
    for n in 1..=100 {
      input.extend_from_slice(format!("{n}\n").as_bytes());
    }
    let expected = lines_of_strip_ansi(&input);
    let numbers: Vec<String> = (2..=100).map(|n| n.to_string()).collect();
    assert_eq!(expected, numbers);
    for cut in 0..=input.len() {
      assert_eq!(monitor_lines(&input, &[cut]), expected, "cut at {cut}");
    }
  }

  /// Streaming property (§3.17) through the whole pipeline: random text that
  /// ends in an unterminated OSC (short, or open past the 4096-char bound),
  /// in random reads, gives line by line what `stripAnsi` of the whole gives.
  #[test]
  fn text_ending_in_an_unterminated_osc_gives_the_lines_of_strip_ansi() {
    let prefix: [&[u8]; 12] = [
      b"x",
      b"\n",
      b"\x1b[31m",
      b"\x1b]0;t\x07",
      b"\x1b]8;;u\x1b\\",
      b"\xc2\x9b1m",
      "你".as_bytes(),
      b"\xe2",
      b"1",
      b";",
      b" ",
      b"\x1b",
    ];
    // Nothing that could terminate an OSC: no BEL, no `ESC \`, no U+009C.
    let body: [&[u8]; 11] = [
      b"x",
      b"\n",
      b"\n",
      b"12",
      b";",
      b"\x1b[1m",
      b"\x1b]",
      "😀".as_bytes(),
      b"\xe2",
      b"\t ",
      b"]",
    ];
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move |bound: usize| {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      (seed % bound as u64) as usize
    };
    for round in 0..300 {
      let mut input = Vec::new();
      for _ in 0..next(12) {
        input.extend_from_slice(prefix[next(prefix.len())]);
      }
      input.extend_from_slice(b"\x1b]");
      // Every 10th body is long: the OSC stays open past the bound.
      let body_len = if round % 10 == 0 { 2000 } else { next(30) };
      for _ in 0..body_len {
        input.extend_from_slice(body[next(body.len())]);
      }
      let expected = lines_of_strip_ansi(&input);
      for _ in 0..20 {
        let mut cuts: Vec<usize> = (0..1 + next(6)).map(|_| next(input.len() + 1)).collect();
        cuts.sort_unstable();
        assert_eq!(
          monitor_lines(&input, &cuts),
          expected,
          "{input:x?} cut at {cuts:?}"
        );
      }
    }
  }

  #[test]
  fn terminal_frames_give_the_last_frame_of_each_line_for_any_cut() {
    let bytes = b"\x1b[2K\rprogress 10%\x1b[0K\rprogress 20%\r\n\x1b[32mdone\x1b[0m\r\nprompt> ";
    for cut in 0..=bytes.len() {
      let mut p = unthrottled();
      p.set_frames(true);
      let mut c = Collect::default();
      p.feed(Stream::Stdout, &bytes[..cut], 0, &mut c);
      p.feed(Stream::Stdout, &bytes[cut..], 0, &mut c);
      p.flush(0, &mut c);
      assert_eq!(c.lines, ["progress 20%", "done", "prompt>"], "cut at {cut}");
    }
  }

  #[test]
  fn closed_pipeline_discards() {
    let mut p = unthrottled();
    let mut c = Collect::default();
    p.feed(Stream::Stdout, b"pending", 0, &mut c);
    p.close();
    p.feed(Stream::Stdout, b"more\n", 0, &mut c);
    p.flush(0, &mut c);
    assert!(c.lines.is_empty());
  }

  /// The counting fast path gives exactly what the exact path gives, on text
  /// mixing blank, control-only, non-ASCII, long and partial lines.
  #[test]
  fn counting_fast_path_matches_the_exact_path() {
    let pieces = [
      "y\n",
      "\n",
      "   \n",
      "\t\r\n",
      "\x01\x02\n",
      "\x7f\n",
      "a\r\n",
      " x \n",
      "é\n",
      "\u{a0}\n",
      "\u{feff}\n",
      "\u{85}\n",
      "<result>\n",
      "part",
      "ial",
      "\x1b[31mred\x1b[0m\n",
      "\x1b]0;title\x07t\n",
      "你好\n",
      "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n",
    ];
    let long_blank = format!("{}\x01\n", "\x01".repeat(5000));
    let long_line = format!("{}\n", "z".repeat(4097));
    // No newline: a few of these in a row go over the cap as a partial line,
    // and the rest of that line is discarded until a later newline.
    let long_partial = "w".repeat(3000);
    let long_partial_ansi = format!("\x1b[1m{}é", "v".repeat(2500));
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      seed
    };
    let mut truncated_somewhere = false;
    for _round in 0..200 {
      let mut fast = throttled();
      let mut exact = throttled();
      exact.fast_paths = false;
      let (mut a, mut b) = (Collect::default(), Collect::default());
      let mut now = 0;
      for _read in 0..20 {
        let mut chunk = String::new();
        for _ in 0..(next() % 12) {
          match next() % 40 {
            0 => chunk.push_str(&long_blank),
            1 => chunk.push_str(&long_line),
            2 | 3 => chunk.push_str(&long_partial),
            4 => chunk.push_str(&long_partial_ansi),
            k => chunk.push_str(pieces[k as usize % pieces.len()]),
          }
        }
        now += (next() % 700) as i64;
        let stream = if next() % 3 == 0 {
          Stream::Stderr
        } else {
          Stream::Stdout
        };
        // Cut the read anywhere, inside a character or escape sequence too:
        // the fast path must pick up where a held piece ends.
        let bytes = chunk.as_bytes();
        let cut = (next() as usize) % (bytes.len() + 1);
        for part in [&bytes[..cut], &bytes[cut..]] {
          fast.feed(stream, part, now, &mut a);
          exact.feed(stream, part, now, &mut b);
        }
        assert_eq!(a.lines, b.lines);
        assert_eq!(a.dropped, b.dropped);
        assert_eq!(fast.lines_seen(), exact.lines_seen());
        assert_eq!(fast.truncated_bytes(), exact.truncated_bytes());
      }
      fast.flush(now, &mut a);
      exact.flush(now, &mut b);
      assert_eq!((a.lines, a.dropped), (b.lines, b.dropped));
      assert_eq!(fast.truncated_bytes(), exact.truncated_bytes());
      truncated_somewhere |= fast.truncated_bytes() > 0;
    }
    assert!(truncated_somewhere, "the rounds exercise the discard state");
  }

  /// One pipeline with the fast paths and one without, fed the same reads;
  /// they must agree on everything after every read and after the flush.
  struct Twins {
    fast: LinePipeline,
    exact: LinePipeline,
    fast_out: Collect,
    exact_out: Collect,
  }

  impl Twins {
    fn new(throttle: Option<ThrottleConfig>) -> Self {
      Self::with_signal(throttle, SignalConfig::default())
    }

    fn with_signal(throttle: Option<ThrottleConfig>, signal: SignalConfig) -> Self {
      let mut exact = LinePipeline::with_signal(throttle, signal.clone(), 1_000_000, 0);
      exact.fast_paths = false;
      Self {
        fast: LinePipeline::with_signal(throttle, signal, 1_000_000, 0),
        exact,
        fast_out: Collect::default(),
        exact_out: Collect::default(),
      }
    }

    fn feed(&mut self, stream: Stream, bytes: &[u8], now: i64, what: &dyn Fn() -> String) {
      self.fast.feed(stream, bytes, now, &mut self.fast_out);
      self.exact.feed(stream, bytes, now, &mut self.exact_out);
      self.check(what);
    }

    /// Five lines that spend the burst at 0, `input` in two reads cut at `cut` at 1, a last
    /// line at 2, and the flush.
    fn feed_split(&mut self, input: &[u8], cut: usize, what: &dyn Fn() -> String) {
      self.feed(Stream::Stdout, b"1\n2\n3\n4\n5\n", 0, what);
      self.feed(Stream::Stdout, &input[..cut], 1, what);
      self.feed(Stream::Stdout, &input[cut..], 1, what);
      self.feed(Stream::Stdout, b"tail\n", 2, what);
      self.flush(2, what);
    }

    fn flush(&mut self, now: i64, what: &dyn Fn() -> String) {
      self.fast.flush(now, &mut self.fast_out);
      self.exact.flush(now, &mut self.exact_out);
      self.check(what);
      assert_eq!(
        self.fast.take_digest(),
        self.exact.take_digest(),
        "the terminal digest; {}",
        what()
      );
    }

    fn poll(&mut self, now: i64, what: &dyn Fn() -> String) {
      self.fast.poll(now, &mut self.fast_out);
      self.exact.poll(now, &mut self.exact_out);
      self.check(what);
    }

    fn check(&self, what: &dyn Fn() -> String) {
      // Compared without printing megabytes of lines when they differ.
      let (a, b) = (&self.fast_out, &self.exact_out);
      if a.lines != b.lines {
        let at = a.lines.iter().zip(&b.lines).position(|(x, y)| x != y);
        let show = |l: Option<&String>| l.map(|l| l.chars().take(200).collect::<String>());
        let at = at.unwrap_or(a.lines.len().min(b.lines.len()));
        panic!(
          "events differ at {at} ({} vs {}): {:?} vs {:?}; {}",
          a.lines.len(),
          b.lines.len(),
          show(a.lines.get(at)),
          show(b.lines.get(at)),
          what()
        );
      }
      assert_eq!(a.dropped, b.dropped, "droppedLines; {}", what());
      assert_eq!(a.notes, b.notes, "notifications and digests; {}", what());
      assert_eq!(
        self.fast.lines_seen(),
        self.exact.lines_seen(),
        "linesSeen; {}",
        what()
      );
      assert_eq!(
        self.fast.truncated_bytes(),
        self.exact.truncated_bytes(),
        "truncatedBytes; {}",
        what()
      );
    }
  }

  /// The shapes of output a monitor meets, as pieces to string together.
  fn shape_pieces(shape: usize, rng: &mut XorShift) -> Vec<u8> {
    let pick = |rng: &mut XorShift, options: &[&[u8]]| options[rng.below(options.len())].to_vec();
    match shape {
      // Plain lines, blank and control-only ones among them.
      0 => pick(
        rng,
        &[
          b"y\n",
          b"\n",
          b"   \n",
          b"\t\r\n",
          b"\x01\x02\n",
          b"\x7f\n",
          b"a b c\n",
          b"ok",
        ],
      ),
      // Lines with ANSI colour and other escape sequences.
      1 => pick(
        rng,
        &[
          b"\x1b[32mINFO\x1b[0m some log text here\n",
          b"\x1b[1;31mERR\x1b[m x\n",
          b"\x1b[38;5;196mred\x1b[39m\n",
          b"\x1b[38;2;255;128;0mrgb\x1b[0m\n",
          b"\x1b[2K\r\x1b[1A\n",
          b"\x1b[0m\x1b[32m\x1b[0m\n",
          b"\x1b[12345mfive digits\n",
          b"\x1b[?25l\x1b[?25h\n",
          b"\x1b[1:2m\x1b[;1m\x1b[:5m\n",
          b"\x1b]0;title\x07t\n",
          b"\x1b]8;;https://x.test/\x1b\\link\x1b]8;;\x1b\\\n",
          b"\x1b]0;multi\nline\x07 osc\n",
          b"\x1b]0;unterminated ",
          b"\x1bDx\x1bW\x1b\n",
          b"\x1b[1;x\x1b[",
          b"\xc2\x9b31mc1\xc2\x9b0m\n",
          b"\x1b[32m",
        ],
      ),
      // Over-long lines: with and without newline, blank ones, whitespace at
      // the cap, escape sequences and non-ASCII in them.
      2 => match rng.below(7) {
        0 => vec![b'a'; 1 + rng.below(9000)],
        1 => {
          let mut line = vec![b' '; rng.below(10)];
          line.extend(std::iter::repeat_n(b'x', 4090 + rng.below(12)));
          line.extend(std::iter::repeat_n(b' ', rng.below(12)));
          line.push(b'\n');
          line
        }
        2 => [vec![b' '; 4000 + rng.below(200)], b"\x01\n".to_vec()].concat(),
        3 => "\x1b[32mINFO\x1b[0m no newline ever "
          .repeat(1 + rng.below(300))
          .into_bytes(),
        4 => "长".repeat(1 + rng.below(3000)).into_bytes(),
        5 => [vec![b'z'; 5000], b"\xff\xfe".to_vec()].concat(),
        _ => b"\n".to_vec(),
      },
      // `\r` redraws that never print `\n` (and rarely do).
      3 => match rng.below(6) {
        0 => format!("\rprogress {}%", rng.below(101)).into_bytes(),
        1 => format!("\r{}", "=".repeat(59)).into_bytes(),
        2 => format!(
          "\r\x1b[32m[{}]\x1b[0m {}%",
          "#".repeat(rng.below(20)),
          rng.below(101)
        )
        .into_bytes(),
        3 => b"\r\x1b[2K".to_vec(),
        4 if rng.below(20) == 0 => b"\n".to_vec(),
        _ => b"\r".to_vec(),
      },
      // Non-ASCII, invalid UTF-8, long OSC.
      _ => match rng.below(6) {
        0 => "你好世界，这是一行日志输出\n".as_bytes().to_vec(),
        1 => "é\u{a0}\u{3000}\u{feff}\u{85}\n".as_bytes().to_vec(),
        2 => b"\xe4\xbd\n\xff\n".to_vec(),
        3 => format!("\x1b]0;{}\x07after\n", "t\n".repeat(rng.below(3000))).into_bytes(),
        4 => format!("\x1b]0;{}", "u".repeat(rng.below(5000))).into_bytes(),
        _ => "😀 end\n".as_bytes().to_vec(),
      },
    }
  }

  /// Random text of one shape (or all mixed), read in random pieces on both
  /// streams with the clock moving so that the throttle is sometimes full,
  /// sometimes empty, and sometimes off: the fast paths give the exact path's
  /// events, linesSeen, droppedLines and truncatedBytes, after every read.
  #[test]
  fn fast_paths_match_the_exact_path_for_every_shape() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut truncated = 0;
    for round in 0..600 {
      let mixed = round % 6 == 5;
      let shape = round % 6;
      let throttle = match round % 7 {
        0 => None,
        1 => Some(ThrottleConfig {
          burst: 2,
          refill_ms: 10,
        }),
        _ => Some(ThrottleConfig::default()),
      };
      let mut twins = Twins::new(throttle);
      let mut now = 0;
      let reads = 1 + rng.below(12);
      for read in 0..reads {
        let mut chunk = Vec::new();
        let bound = [64, 4096, 70_000][rng.below(3)];
        let size = rng.below(bound);
        while chunk.len() < size {
          let s = if mixed { rng.below(5) } else { shape };
          chunk.extend(shape_pieces(s, &mut rng));
        }
        now += [0, 0, 1, 300, 1000, 5000][rng.below(6)];
        let stream = if rng.below(4) == 0 {
          Stream::Stderr
        } else {
          Stream::Stdout
        };
        // Cut the chunk into reads of at most 64 KiB, anywhere.
        let mut start = 0;
        while start < chunk.len() || start == 0 {
          let end = (start + 1 + rng.below(65_536)).min(chunk.len());
          let end = if rng.below(3) == 0 {
            (start + rng.below(80)).min(chunk.len())
          } else {
            end
          };
          let bytes = &chunk[start..end];
          twins.feed(stream, bytes, now, &|| {
            format!(
              "round {round}, read {read}, bytes {start}..{end} of {}",
              chunk.len()
            )
          });
          start = end;
          if chunk.is_empty() {
            break;
          }
        }
      }
      twins.flush(now, &|| format!("round {round}, flush"));
      truncated += u64::from(twins.fast.truncated_bytes() > 0);
    }
    assert!(truncated > 50, "{truncated} rounds truncated");
  }

  /// With a signal lane in place of the bucket (§6.7), the counting fast
  /// path (allowed while the lane `counts_only`) gives the exact path's lines,
  /// in the same windows, and the same drops and digests; with `important` or
  /// `digest`, runs of plain lines are counted (the plain-lines path, see
  /// `plain_fast_path_matches_the_exact_path_with_important_and_digest`).
  #[test]
  fn fast_paths_match_the_exact_path_with_a_signal_lane() {
    use crate::core::monitor::signal::SignalOptions;
    let signals = [
      (Some(10.0), Some(1.0), None, false),
      (Some(200.0), None, None, false),
      (Some(1000.0), Some(3.0), None, false),
      (Some(200.0), None, Some("(?i)err|y"), true),
      (None, None, Some("x"), false),
      (None, None, None, true),
    ];
    let mut rng = XorShift(0x51C_4A1E);
    let mut counted_rounds = 0;
    for round in 0..240 {
      let (batch_ms, max_batch_lines, important, digest) = signals[round % signals.len()];
      let signal = SignalConfig::new(SignalOptions {
        batch_ms,
        max_batch_lines,
        important,
        digest,
      })
      .unwrap();
      let throttle = match round % 5 {
        0 => None,
        1 => Some(ThrottleConfig {
          burst: 2,
          refill_ms: 10,
        }),
        _ => Some(ThrottleConfig::default()),
      };
      let mut twins = Twins::with_signal(throttle, signal);
      let mut now = 0;
      for read in 0..(1 + rng.below(10)) {
        let mut chunk = Vec::new();
        let bound = [64, 4096, 70_000][rng.below(3)];
        let size = rng.below(bound);
        while chunk.len() < size {
          let shape = rng.below(5);
          chunk.extend(shape_pieces(shape, &mut rng));
        }
        now += [0, 0, 1, 5, 300, 1000][rng.below(6)];
        if rng.below(3) == 0 {
          twins.fast.poll(now, &mut twins.fast_out);
          twins.exact.poll(now, &mut twins.exact_out);
        }
        let stream = if rng.below(4) == 0 {
          Stream::Stderr
        } else {
          Stream::Stdout
        };
        let cut = rng.below(chunk.len() + 1);
        for (part, bytes) in [&chunk[..cut], &chunk[cut..]].into_iter().enumerate() {
          twins.feed(stream, bytes, now, &|| {
            format!("round {round}, read {read}.{part}")
          });
        }
        counted_rounds += usize::from(twins.fast.admission.counts_only(now));
      }
      twins.flush(now, &|| format!("round {round}, flush"));
    }
    assert!(counted_rounds > 50, "{counted_rounds} reads ended counting");
  }

  /// Lines a lane with `important` and `digest` meets: a firehose (`y`), important lines plain
  /// and padded, and lines that are important only after sanitising (controls inside, a final
  /// `\r`, ANSI, C1 and Unicode whitespace at the ends), or that look important raw and are not
  /// (a `\r` redraw), tags, long lines around the cap, blank lines and partial lines.
  fn signal_piece(rng: &mut XorShift) -> Vec<u8> {
    let pieces: [&[u8]; 34] = [
      b"ready\n",
      b"  ready  \n",
      b"\tERROR: boom\t\n",
      b"server listening on 3000\n",
      b"errors\n",
      b"readying\n",
      b"not ready yet\n",
      b"fail",
      b"\x1b[31merror\x1b[0m\n",
      b"\x1b[32mINFO\x1b[0m y\n",
      b"err\x01or\n",
      b"fa\x7fil\n",
      b"<result>fail</result>\n",
      b"x <b> y\n",
      b"ready\r\n",
      b"y\r\n",
      b"x\rready\n",
      b"ready\rx\n",
      b"\r\n",
      b"\xc2\x85panic\xc2\x85\n",
      "\u{a0}ready\u{3000}\n".as_bytes(),
      "é error\n".as_bytes(),
      b"\xff panic\n",
      b"   \n",
      b"\t\t\n",
      b"\n",
      b"\x01\n",
      b"y y\n",
      b" y\n",
      b"y \n",
      b"P\n",
      b"\x1b]0;ready\x07y\n",
      b"\x1b[",
      b"ERROR",
    ];
    match rng.below(40) {
      0..=24 => b"y\n".to_vec(),
      25 => {
        let mut long = vec![b'a'; 4094 + rng.below(5)];
        if rng.below(2) == 0 {
          long.extend_from_slice(b" ready");
        }
        long.push(b'\n');
        long
      }
      26 => [b"ready".as_slice(), &vec![b' '; 4093 + rng.below(5)], b"\n"].concat(),
      _ => pieces[rng.below(pieces.len())].to_vec(),
    }
  }

  /// A lane with `important` and/or `digest` on firehose-like and adversarial text, read in
  /// pieces cut anywhere (inside lines, chars and escape sequences), with the throttle empty
  /// most of the time: the plain-lines fast path gives the exact path's notifications, lines,
  /// drops and digests, for patterns with and without anchors and word boundaries.
  #[test]
  fn plain_fast_path_matches_the_exact_path_with_important_and_digest() {
    use crate::core::monitor::signal::SignalOptions;
    let patterns = [
      "(?i)error|fail|exception|panic|listening|ready",
      "^ready$",
      "^error",
      "(?i)fail$",
      r"\bpanic\b",
      r"\Aready\z",
      "(?m)^y$",
      "(?i)^p$",
      "^$|x*",
      "\u{200B}",
      "ERROR",
      "y",
      r"y\s",
      r"\ty",
    ];
    let mut rng = XorShift(0x00DE_C1DE);
    let mut plain_reads = 0;
    for round in 0..400 {
      let pattern = patterns[round % patterns.len()];
      let (batch_ms, max_batch_lines, important, digest) = match (round / patterns.len()) % 6 {
        0 => (None, None, Some(pattern), true),
        1 => (Some(200.0), None, Some(pattern), true),
        2 => (Some(10.0), Some(3.0), Some(pattern), false),
        3 => (None, None, Some(pattern), false),
        4 => (Some(200.0), Some(1.0), None, true),
        _ => (None, None, None, true),
      };
      let signal = SignalConfig::new(SignalOptions {
        batch_ms,
        max_batch_lines,
        important,
        digest,
      })
      .unwrap();
      let throttle = match round % 9 {
        0 => None,
        1 | 2 => Some(ThrottleConfig {
          burst: 2,
          refill_ms: 10,
        }),
        _ => Some(ThrottleConfig::default()),
      };
      let mut twins = Twins::with_signal(throttle, signal);
      let mut now = 0;
      for read in 0..(1 + rng.below(12)) {
        let mut chunk = Vec::new();
        let bound = [64, 4096, 70_000][rng.below(3)];
        let size = rng.below(bound);
        while chunk.len() < size {
          chunk.extend(signal_piece(&mut rng));
        }
        now += [0, 0, 0, 1, 5, 300, 1000][rng.below(7)];
        if rng.below(4) == 0 {
          twins.poll(now, &|| format!("round {round} ({pattern}), poll {read}"));
        }
        let stream = if rng.below(4) == 0 {
          Stream::Stderr
        } else {
          Stream::Stdout
        };
        let mut start = 0;
        loop {
          let end = if rng.below(3) == 0 {
            start + rng.below(80)
          } else {
            start + 1 + rng.below(65_536)
          }
          .min(chunk.len());
          plain_reads += usize::from(
            twins.fast.admission.counts_plain(now) != Counting::Off
              && !twins.fast.admission.counts_only(now),
          );
          twins.feed(stream, &chunk[start..end], now, &|| {
            format!(
              "round {round} ({pattern}, {batch_ms:?}, digest {digest}), read {read}, bytes {start}..{end} of {}",
              chunk.len()
            )
          });
          start = end;
          if start >= chunk.len() {
            break;
          }
        }
      }
      twins.flush(now, &|| format!("round {round} ({pattern}), flush"));
    }
    assert!(plain_reads > 500, "{plain_reads} reads took the plain path");
  }

  /// A firehose of plain lines with important, coloured, control, over-long and non-ASCII lines
  /// after it, and where to split it in two reads: at every offset, but for every 97th inside
  /// the over-long line.
  fn split_input() -> (Vec<u8>, Vec<usize>) {
    let input = [
      "y\n".repeat(40).as_str(),
      "  ready  \ny\ny\n",
      "err\x01or\n",
      "y\r\n".repeat(10).as_str(),
      "\x1b[31mpanic\x1b[0m\ny\n",
      "fail\n",
      &format!("{}\ny\n", "x".repeat(4097)),
      "\u{a0}listening\n",
      &"y\n".repeat(30),
      "not ready",
    ]
    .concat()
    .into_bytes();
    let x = input.windows(4).position(|w| w == b"xxxx").unwrap();
    let long = x + 8..x + 4088;
    let cuts = (0..=input.len())
      .filter(|&cut| !long.contains(&cut) || (cut - long.start).is_multiple_of(97))
      .collect();
    (input, cuts)
  }

  /// The same, with a two-read split at every offset of one input, after the burst is spent.
  #[test]
  fn plain_fast_path_matches_the_exact_path_at_every_split() {
    use crate::core::monitor::signal::SignalOptions;
    let (input, cuts) = split_input();
    let input = input.as_slice();
    for pattern in [
      "(?i)error|fail|panic|listening|ready",
      "^ready$",
      r"\bfail\b",
      "y$",
    ] {
      for (batch_ms, digest) in [(None, true), (Some(200.0), true), (Some(10.0), false)] {
        let signal = SignalConfig::new(SignalOptions {
          batch_ms,
          max_batch_lines: None,
          important: Some(pattern),
          digest,
        })
        .unwrap();
        for &cut in &cuts {
          let mut twins = Twins::with_signal(Some(ThrottleConfig::default()), signal.clone());
          let what = || format!("{pattern}, {batch_ms:?}, digest {digest}, cut at {cut}");
          twins.feed_split(input, cut, &what);
        }
      }
    }
  }

  /// Pending `match` waits and `settleMs` ([`Observe::Lines`]): the fast paths count the runs
  /// of plain lines in which no pattern can match and show the sink every other line, so the
  /// lines the waits' patterns match, in order, the last line (for `settleMs`) and every event,
  /// drop and digest are those of the exact path observing every line; with a two-read split
  /// at every offset, after the burst is spent, under the token bucket and under lanes.
  #[test]
  fn wait_patterns_see_every_line_they_match_at_every_split() {
    use crate::core::monitor::signal::SignalOptions;
    use crate::core::wait::{WaitSet, WaitSpec};
    use regex::Regex;
    let (input, cuts) = split_input();
    let input = input.as_slice();
    // One line per window, so the five lines before the input spend the burst.
    let lanes = [
      SignalConfig::default(),
      SignalConfig::new(SignalOptions {
        batch_ms: Some(200.0),
        max_batch_lines: Some(1.0),
        important: Some("(?i)fail"),
        digest: true,
      })
      .unwrap(),
      SignalConfig::new(SignalOptions {
        batch_ms: Some(10.0),
        max_batch_lines: Some(1.0),
        important: None,
        digest: false,
      })
      .unwrap(),
    ];
    for patterns in [
      &["(?i)error|fail|panic|listening|ready"][..],
      &["^ready$"],
      &[r"\bfail\b", "^y$"],
      &["y$"],
      &["never"],
      &[],
    ] {
      let mut waits = WaitSet::default();
      for (id, pattern) in patterns.iter().enumerate() {
        let spec = WaitSpec {
          matcher: Some(Regex::new(pattern).unwrap()),
          ..WaitSpec::default()
        };
        waits.add(id as u64, spec, 0);
      }
      assert!(waits.line_matcher().is_none(), "built on refresh");
      waits.refresh_line_matcher();
      let matcher = waits.line_matcher();
      assert_eq!(
        matcher.is_some(),
        !patterns.is_empty(),
        "plain-searchable patterns"
      );
      let regexes: Vec<Regex> = patterns.iter().map(|p| Regex::new(p).unwrap()).collect();
      let matched = |lines: &[String]| -> Vec<String> {
        lines
          .iter()
          .filter(|l| regexes.iter().any(|r| r.is_match(l)))
          .cloned()
          .collect()
      };
      for signal in &lanes {
        let mut counted_somewhere = false;
        for &cut in &cuts {
          let mut twins = Twins::with_signal(Some(ThrottleConfig::default()), signal.clone());
          // Without patterns: `settleMs` alone.
          let last_line = patterns.is_empty() || cut % 2 == 0;
          twins.fast.set_observing(Observe::Lines {
            matcher: matcher.clone(),
            last_line,
          });
          twins.exact.set_observing(Observe::Every);
          let what = || format!("{patterns:?}, {signal:?}, cut at {cut}");
          twins.feed_split(input, cut, &what);
          assert_eq!(
            matched(&twins.fast_out.seen),
            matched(&twins.exact_out.seen),
            "matching lines seen; {}",
            what()
          );
          if last_line {
            assert_eq!(
              twins.fast_out.last.as_ref(),
              twins.exact_out.seen.last(),
              "the last line; {}",
              what()
            );
          }
          counted_somewhere |= twins.fast_out.seen.len() < twins.exact_out.seen.len();
        }
        // Unless a pattern matches the flood's own lines, some of them were only counted.
        let flood_matches = regexes.iter().any(|r| r.is_match("y"));
        assert!(
          counted_somewhere || flood_matches,
          "{patterns:?}, {signal:?}: lines no pattern matches were only counted"
        );
      }
    }
  }

  /// Two-read splits of inputs of each shape (every one near the cap and the
  /// ends, some elsewhere), throttle full, empty and off: the fast paths agree
  /// with the exact path.
  #[test]
  fn fast_paths_match_the_exact_path_at_every_split() {
    let long = "l".repeat(5000);
    let inputs: Vec<Vec<u8>> = vec![
      format!("{}\nnext\n", "a".repeat(4200)).into_bytes(),
      "a".repeat(4100).into_bytes(),
      format!("  {}  \x01\n{long}\nq\n", "x".repeat(4095)).into_bytes(),
      "\x1b[32mINFO\x1b[0m some log text here\n"
        .repeat(3)
        .into_bytes(),
      format!(
        "{}\x1b[32mINFO\x1b[0m x\n",
        "\x1b[32mINFO\x1b[0m no newline ever ".repeat(140)
      )
      .into_bytes(),
      (0..400)
        .map(|i| format!("\rprogress {i}%"))
        .collect::<String>()
        .into_bytes(),
      format!(
        "{}\r\x1b[32m[###]\x1b[0m\nok\n",
        "\r\x1b[32m[##########]\x1b[0m 50%".repeat(130)
      )
      .into_bytes(),
      format!("{long}\x1b]0;t\nx\x07y\x1b[1;31mz\nw\n").into_bytes(),
      format!("{long}\x1b]0;{}\x07after\nw\n", "t".repeat(4100)).into_bytes(),
      format!("{long}é你\u{85}\n\x1b[3").into_bytes(),
    ];
    for (n, input) in inputs.iter().enumerate() {
      for throttle in [None, Some(ThrottleConfig::default())] {
        for now in [0, 1] {
          let near = |cut: usize| {
            cut < 150
              || cut + 150 > input.len()
              || (4040..4160).contains(&cut)
              || cut.is_multiple_of(97)
          };
          for cut in (0..=input.len()).filter(|&cut| near(cut)) {
            let mut twins = Twins::new(throttle);
            if now > 0 {
              // Spend the burst first: every read of the input is throttled out.
              twins.feed(Stream::Stdout, b"1\n2\n3\n4\n5\n", 0, &|| String::new());
            }
            let what = || format!("input {n}, {throttle:?}, now {now}, cut at {cut}");
            twins.feed(Stream::Stdout, &input[..cut], 0, &what);
            twins.feed(Stream::Stdout, &input[cut..], 0, &what);
            twins.feed(Stream::Stdout, b"tail\n", 0, &what);
            twins.flush(0, &what);
          }
        }
      }
    }
  }

  /// `\r` is no line separator (CONTRACT.md §2.10): the frames of a progress
  /// bar that never prints `\n` are one physical line, cut once at 4096
  /// units (the sanitiser then removes the CRs from the event) and discarded
  /// from there up to the `\n` that finally comes. The fast paths agree, with
  /// the throttle full, empty and off, in any reads.
  #[test]
  fn carriage_return_redraws_are_one_physical_line() {
    let frames: String = (0..2000).map(|i| format!("\rprogress {i}%")).collect();
    let cut: String = frames[1..]
      .chars()
      .take(4096)
      .filter(|&c| c != '\r')
      .collect();
    for throttle in [None, Some(ThrottleConfig::default())] {
      for spent in [false, true] {
        for read in [100, 4096, 5000, 65536] {
          let mut twins = Twins::new(throttle);
          if spent {
            twins.feed(Stream::Stdout, b"1\n2\n3\n4\n5\n", 0, &String::new);
          }
          for piece in frames.as_bytes().chunks(read) {
            twins.feed(Stream::Stdout, piece, 0, &|| format!("reads of {read}"));
          }
          twins.feed(Stream::Stdout, b"\ndone\n", 1000, &String::new);
          let events = &twins.fast_out.lines[if spent { 5 } else { 0 }..];
          if spent && throttle.is_some() {
            assert_eq!(events, ["done"]);
          } else {
            assert_eq!(events, [format!("{cut}..."), "done".to_owned()]);
          }
          // Everything after the kept units but the leading `\r` (trimmed).
          assert_eq!(
            twins.fast.truncated_bytes(),
            (frames.len() - 1 - 4096) as u64
          );
        }
      }
    }
  }

  #[test]
  fn an_over_long_line_gives_one_event_and_counts_its_rest() {
    // §3.10 N row, through the pipeline, on both streams.
    for stream in [Stream::Stdout, Stream::Stderr] {
      let mut p = unthrottled();
      let mut c = Collect::default();
      let first = format!("abc\n{}", "d".repeat(5000));
      p.feed(stream, first.as_bytes(), 0, &mut c);
      assert_eq!(
        c.lines,
        ["abc".to_owned(), format!("{}...", "d".repeat(4096))]
      );
      p.feed(stream, b"e", 0, &mut c);
      p.feed(stream, b"\nf\n", 0, &mut c);
      p.flush(0, &mut c);
      assert_eq!(c.lines.len(), 3);
      assert_eq!(c.lines[2], "f");
      assert_eq!(p.truncated_bytes(), 905);
    }
  }

  /// Found by fuzz/fuzz_targets/monitor_pipeline.rs: with a clock that went back, the fast
  /// path's token probe moved the refill point on a read without a complete line (the exact
  /// path never looks at the bucket then), and a later line got a token early. Counted
  /// lines must move it as the exact path's `try_take` does.
  #[test]
  fn counting_fast_path_matches_the_exact_path_when_the_clock_goes_back() {
    let reads: [(&[u8], i64); 7] = [
      (b"a\nb\nc\nd\ne\n", 0),
      (b"partial", -1000),
      (b"x", 0),
      (b"\n", 0),
      (b"y\n", -1000),
      (b"z\n", 0),
      (b"w\n", 1000),
    ];
    let mut fast = throttled();
    let mut exact = throttled();
    exact.fast_paths = false;
    let (mut a, mut b) = (Collect::default(), Collect::default());
    for (bytes, now) in reads {
      fast.feed(Stream::Stdout, bytes, now, &mut a);
      exact.feed(Stream::Stdout, bytes, now, &mut b);
      assert_eq!((&a.lines, a.dropped), (&b.lines, b.dropped), "at {now}");
    }
    assert_eq!(b.lines, ["a", "b", "c", "d", "e", "z", "w"]);
    assert_eq!(b.dropped, 2);
  }

  #[test]
  fn lines_seen_counts_pieces() {
    let mut p = unthrottled();
    let mut c = Collect::default();
    p.feed(Stream::Stdout, b"a\n\nb\n", 0, &mut c);
    p.feed(Stream::Stderr, b"c", 0, &mut c);
    p.flush(0, &mut c);
    assert_eq!(p.lines_seen(), 4);
  }
}
