//! Who decides which lines pass: the token bucket or the signal lane ([`Admission`]), what
//! the fast paths of a read may count ([`Counting`]), and the decider one read hands its
//! lines to ([`ReadDecider`]).

use crate::monitor::signal::{LineText, SignalLane};
use crate::monitor::throttle::TokenBucket;
use crate::text::{first_and_last, PlainImportant};
use crate::text::{is_ecma_whitespace, sanitize_monitor_line, LineCount};

use super::sink::{LineSink, Observe};

/// Who decides which lines pass.
#[derive(Debug)]
pub(super) enum Admission {
  /// The TypeScript `throttledEmit`: one token per line (`None`: no throttle).
  Bucket(Option<TokenBucket>),
  /// §6.7 options: batch windows, the importance lane, digests.
  Lane(Box<SignalLane>),
}

/// What the fast paths of a read may do with complete lines ([`StreamState::feed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Counting {
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
  pub(super) fn counts_only(&self, now_mono_ms: i64) -> bool {
    match self {
      Self::Bucket(bucket) => bucket.as_ref().is_some_and(|b| !b.has_token(now_mono_ms)),
      Self::Lane(lane) => lane.counts_only(now_mono_ms),
    }
  }

  /// Whether a read that may not count now may count after its next exact line
  /// ([`SignalLane::may_count_soon`]).
  pub(super) fn may_count_soon(&self) -> bool {
    match self {
      Self::Lane(lane) => lane.may_count_soon(),
      Self::Bucket(_) => false,
    }
  }

  /// [`Counting::Plain`] when it applies at `now_mono_ms`.
  pub(super) fn counts_plain(&self, now_mono_ms: i64) -> Counting {
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
  pub(super) fn end_read(&mut self, counted: u64, now_mono_ms: i64, sink: &mut impl LineSink) {
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
pub(super) trait Decide {
  /// A line of the exact path, to admit.
  fn line(&mut self, line: &str);
  /// What the fast paths may count from here on.
  fn counting(&self) -> Counting;
  /// With [`Counting::Off`]: whether counting may start after the next exact line (the exact
  /// path then takes one line at a time).
  fn may_count_soon(&self) -> bool {
    false
  }
  /// With [`Counting::Plain`]: how much of `lines` (complete plain lines) may be counted, up
  /// to the first line that may be important.
  fn countable(&self, lines: &[u8]) -> usize;
  /// `count` of the complete lines `lines` were counted (their pieces and truncated bytes are
  /// the splitter's): `count.non_blank` are dropped.
  fn counted(&mut self, count: LineCount, lines: &[u8]);
}

/// [`Decide`] for one read at a fixed time.
pub(super) struct ReadDecider<'a, S: LineSink> {
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
  pub(super) fn new(
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

  pub(super) fn end_read(self) {
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
    if matches!(self.counting, Counting::Plain { .. }) || self.may_count_soon() {
      self.counting = self.mode();
    }
  }

  fn counting(&self) -> Counting {
    self.counting
  }

  fn may_count_soon(&self) -> bool {
    self.counting == Counting::Off && !self.every && self.admission.may_count_soon()
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

/// §2.10 throttledEmit: lines that sanitise to blank cost no token; the rest
/// take a token or are counted as dropped. The blank check runs before the
/// (allocating) sanitiser so a flood of dropped lines costs no allocation.
pub(super) fn throttled_emit(
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
pub(super) fn admit(
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
        lane.blank();
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
pub(super) fn sanitizes_to_blank(line: &str) -> bool {
  line.chars().all(|c| {
    let removed = (c < '\u{20}' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c);
    removed || is_ecma_whitespace(c)
  })
}
