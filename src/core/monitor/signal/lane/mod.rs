//! Which lines reach the model (§6.7): the token bucket, the held important lines and the batch
//! windows of one native monitor. Pure: time is passed in as monotonic milliseconds.
//!
//! Rules, per non-blank line (the caller skips lines that sanitise to blank, as today):
//! * **Throttle off** (`throttle: None`): no bucket; every line is accepted (windows still
//!   batch) and nothing is ever held.
//! * **Without `batchMs`**: a line takes a token or is dropped; an accepted line leaves at once
//!   as [`Out::Line`].
//! * **With `batchMs`**: one token per notification. With no window open, a line opens one: it
//!   takes a token and the window is *delivered*; without a token the window is *dropped* and
//!   every line that joins it is counted as dropped, until it closes. A window closes when
//!   `batchMs` passed since it opened, when it holds `maxBatchLines` lines, or at
//!   [`SignalLane::flush_all`]; a delivered one then leaves as [`Out::Batch`].
//! * **`important`**: a matching line that would be dropped (no token, or a dropped window) is
//!   *held* instead, up to `maxBatchLines` lines (one past that is dropped). There is no second
//!   bucket: the bucket's next token is spent at the moment it refills ([`SignalLane::deadline`]
//!   names it; [`SignalLane::poll`] then, or any later call, spends it) on the held lines.
//!   Without `batchMs` they leave together as one [`Out::Batch`]; with it the token delivers a
//!   window that starts with them and that the lines after them join until it closes, as any
//!   window. That window is dated from the first held line (the line that would have opened a
//!   window, had there been a token), so a held line waits for the refill or for `batchMs`,
//!   whichever is later, never for both: it leaves at once at the refill when `batchMs` has
//!   passed since it was held.
//!   Held lines count as accepted (`maxEvents`), keep their order (no line can be accepted while
//!   some are held: the next token is theirs) and leave at [`SignalLane::flush_all`] at the
//!   latest, before a settled or terminal notification.
//! * **`maxEvents`** counts lines: a delivered window is cut when its lines use up the event
//!   budget; after that the lane ignores every line (the monitor is settling).
//! * **digest**: each dropped line is recorded; the lines dropped since the previous
//!   notification travel with the next [`Out`], or go to a settled or terminal notification
//!   through [`SignalLane::take_digest`].
//!
//! * **`sampleLines`** (with `batchMs`; the budget mode): a delivered window carries at most
//!   that many ordinary lines, the others are dropped; an ordinary line opens a window only when
//!   the bucket is full (so the tokens below the burst are kept for important lines), and no
//!   window is ever opened on an empty bucket: a line that finds no window is dropped, or, if
//!   important, opens a delivered window with a token or is held.
//! * **`contextBefore` / `contextAfter`** (with `important` and `batchMs`; see
//!   [`super::context`]): the lines around an important line join it where it goes (its window
//!   or the held lines), marked [`Mark::Context`]; lines that would be dropped are parked for a
//!   while first, so that an important line can take the ones before it.
//!
//! The regex runs only when its answer can change the decision: on a line that found no token,
//! or that meets a dropped window. While the lane drops every line the regex does not match,
//! the pipeline may hand it runs of plain lines at once ([`SignalLane::count_plain`]; see
//! [`super::plain`]). A line is sanitised only when it is accepted, tested against the regex, or
//! (digest on) quoted (see [`LineText`]).

use super::config::SignalConfig;
use super::context::{Context, Place};
use super::digest::{DigestNote, DropDigest};
use crate::monitor::throttle::{ThrottleConfig, TokenBucket};
use crate::text::PlainImportant;
use crate::text::{sanitize_monitor_line, sanitize_monitor_line_keeps};

mod counted;

/// A non-blank line handed to the lane, sanitised at most once and only when needed.
#[derive(Debug)]
pub struct LineText<'a> {
  raw: &'a str,
  clean: Option<String>,
}

impl<'a> LineText<'a> {
  /// A line as the splitter gave it; `sanitize_monitor_line` runs on first need.
  pub fn raw(raw: &'a str) -> Self {
    Self { raw, clean: None }
  }

  /// A line the caller already sanitised.
  pub fn sanitised(clean: String) -> LineText<'static> {
    LineText {
      raw: "",
      clean: Some(clean),
    }
  }

  /// The sanitised line; a raw line the sanitiser would leave alone (the
  /// usual log line) is not copied.
  pub fn text(&mut self) -> &str {
    if self.clean.is_none() && sanitize_monitor_line_keeps(self.raw) {
      return self.raw;
    }
    let raw = self.raw;
    self.clean.get_or_insert_with(|| sanitize_monitor_line(raw))
  }

  /// The sanitised line, owned.
  pub fn into_text(self) -> String {
    match self.clean {
      Some(clean) => clean,
      None => sanitize_monitor_line(self.raw),
    }
  }

  fn record_in(&self, digest: &mut DropDigest) {
    match &self.clean {
      Some(clean) => digest.record_sanitised(clean),
      None => digest.record_raw(self.raw),
    }
  }
}

/// What a delivered line is to the model: what the display text shows (API.md §6.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
  /// A line of the stream, neither important nor context.
  Ordinary,
  /// A line `important` matched.
  Important,
  /// A line around an important one (`contextBefore`, `contextAfter`).
  Context,
}

/// A notification to send, in the order the lane produced them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
  /// Without `batchMs`: one accepted line (sanitised, not yet cut to 2000 units): one event
  /// notification, as `emitEvent(line)`.
  Line {
    line: String,
    /// With `digest`: the lines dropped since the previous notification.
    digest: Option<DigestNote>,
  },
  /// A delivered window that closed, or (without `batchMs`) the held important lines at the
  /// refill: 1..=`maxBatchLines` sanitised lines, one notification whose `eventCount` grows by
  /// `lines.len()`.
  Batch {
    lines: Vec<String>,
    /// What each line is, one mark per line.
    marks: Vec<Mark>,
    digest: Option<DigestNote>,
  },
}

#[derive(Debug)]
struct Window {
  opened_ms: i64,
  /// False: opened on an empty bucket; its lines are dropped.
  delivered: bool,
  /// Lines in it (delivered or dropped); with `sampleLines`, the delivered ones.
  count: u32,
  /// A delivered window's lines.
  lines: Vec<String>,
  marks: Vec<Mark>,
  /// Ordinary lines among `lines` (`sampleLines`).
  ordinary: u32,
  /// Windows are numbered as they open (after-context follows its line's window).
  number: u64,
}

/// The admission state of one monitor. See the module documentation for the rules; the
/// integrator's calls, in order:
/// * per read: [`Self::poll`] at the read's time, then per non-blank line either
///   [`Self::offer`], or, for a run of lines the pipeline only counts, [`Self::count_dropped`]
///   (allowed while [`Self::counts_only`] is true at that time); then [`Self::take_dropped`]
///   into `droppedLines`, and re-arm the timer at [`Self::deadline`] (when it is earlier than
///   the one armed).
/// * on the timer: [`Self::poll`].
/// * at stop, after the pipeline's own flush offered the partial lines: [`Self::flush_all`];
///   likewise before a settled notification.
/// * at a settled or terminal notification (after `flush_all`): [`Self::take_digest`].
#[derive(Debug)]
pub struct SignalLane {
  config: SignalConfig,
  main: Option<TokenBucket>,
  window: Option<Window>,
  /// Important lines that found no token (and their context), in order; never more than
  /// `maxBatchLines`. While any are held, no delivered window is open and the bucket is empty.
  held: Vec<String>,
  held_marks: Vec<Mark>,
  /// `contextBefore` / `contextAfter`.
  context: Option<Context>,
  /// Windows opened so far (their numbers).
  windows_opened: u64,
  /// When the first of [`Self::held`] was held: the window they open with `batchMs` is dated
  /// from then.
  held_since_ms: i64,
  digest: Option<DropDigest>,
  /// `important`, for runs of plain lines ([`Self::count_plain`]).
  plain_important: Option<PlainImportant>,
  events_left: u64,
  dropped: u64,
}

impl SignalLane {
  /// `throttle: None` turns the bucket off (`throttle: false`); `max_events` is the entry's
  /// `maxEvents` (the budget of lines this lane may accept); the bucket starts full at
  /// `start_ms`.
  pub fn new(
    config: SignalConfig,
    throttle: Option<ThrottleConfig>,
    max_events: u64,
    start_ms: i64,
  ) -> Self {
    Self {
      main: throttle.map(|c| TokenBucket::new(c, start_ms)),
      window: None,
      held: Vec::new(),
      held_marks: Vec::new(),
      context: config
        .has_context()
        .then(|| Context::new(config.context_before, config.context_after)),
      windows_opened: 0,
      held_since_ms: start_ms,
      digest: config.digest.then(|| {
        if config.digest_templates {
          DropDigest::with_templates()
        } else {
          DropDigest::new()
        }
      }),
      plain_important: config
        .important
        .as_ref()
        .and_then(|regex| PlainImportant::new(regex.as_str())),
      events_left: max_events,
      dropped: 0,
      config,
    }
  }

  pub fn config(&self) -> &SignalConfig {
    &self.config
  }

  /// Lines this lane may still accept (`maxEvents` minus the lines accepted so far, those held
  /// and those in the open window included).
  pub fn events_left(&self) -> u64 {
    self.events_left
  }

  /// Important lines held for the next token.
  pub fn held(&self) -> usize {
    self.held.len()
  }

  /// Decides one non-blank line at `now_ms`; what leaves goes to `out`. Whatever is due at
  /// `now_ms` happens first ([`Self::poll`]), so a missed timer never lets a line join a
  /// window that should have closed, nor pass lines held for an earlier token.
  pub fn offer(&mut self, mut line: LineText<'_>, now_ms: i64, out: &mut impl FnMut(Out)) {
    self.poll(now_ms, out);
    if self.events_left == 0 {
      return;
    }
    if self.config.batch_ms.is_none() {
      if self.take_token(now_ms) {
        self.events_left -= 1;
        let digest = self.take_digest();
        out(Out::Line {
          line: line.into_text(),
          digest,
        });
      } else if self.is_important(&mut line) {
        self.hold(line, now_ms);
      } else {
        self.drop_line(&line);
      }
      return;
    }
    if self.config.sample_lines.is_some() {
      self.offer_sampled(line, now_ms, out);
      return;
    }
    let delivered = match &self.window {
      Some(window) => window.delivered,
      None => self.take_token(now_ms),
    };
    if !delivered && self.is_important(&mut line) {
      // Held: no window opened or joined.
      self.hold(line, now_ms);
      return;
    }
    if self.window.is_none() {
      let max_lines = self.config.max_batch_lines;
      self.window = Some(Window {
        opened_ms: now_ms,
        delivered,
        count: 0,
        // A dropped window allocates nothing.
        lines: Vec::with_capacity(if delivered {
          max_lines.min(32) as usize
        } else {
          0
        }),
        marks: Vec::new(),
        ordinary: 0,
        number: self.windows_opened,
      });
      self.windows_opened += 1;
    }
    let window = self.window.as_mut().expect("a window is open");
    window.count += 1;
    if delivered {
      window.lines.push(line.into_text());
      window.marks.push(Mark::Ordinary);
      self.events_left -= 1;
    } else {
      self.dropped += 1;
      if let Some(digest) = &mut self.digest {
        line.record_in(digest);
      }
    }
    if window.count >= self.config.max_batch_lines || self.events_left == 0 {
      self.close(out);
    }
  }

  /// [`Self::offer`] with `sampleLines` (see the module documentation): `events_left > 0` and
  /// nothing due at `now_ms`.
  fn offer_sampled(&mut self, mut line: LineText<'_>, now_ms: i64, out: &mut impl FnMut(Out)) {
    let repeats = match &mut self.context {
      Some(context) => context.observe(line.text()),
      None => false,
    };
    let important = self.is_important(&mut line);
    if !important {
      if let Some(place) = self.after_context_place(repeats) {
        let text = line.into_text();
        match place {
          Place::Window(_) => self.push_window(text, Mark::Context, out),
          Place::Held => self.push_held(text, Mark::Context),
        }
        return;
      }
      let samples = self.config.sample_lines.unwrap_or(0);
      let takes_sample = match &self.window {
        Some(window) => window.ordinary < samples,
        None => {
          samples > 0
            && self.held.is_empty()
            && self.main.as_ref().is_none_or(|b| b.is_full(now_ms))
            && self.take_token(now_ms)
        }
      };
      if !takes_sample {
        self.drop_or_park(line, repeats);
        return;
      }
      if self.window.is_none() {
        self.open_window(now_ms);
      }
      self.drop_parked();
      self.push_window(line.into_text(), Mark::Ordinary, out);
      return;
    }
    let place = if self.window.is_some() {
      Place::Window(self.windows_opened - 1)
    } else if self.take_token(now_ms) {
      self.open_window(now_ms);
      Place::Window(self.windows_opened - 1)
    } else {
      if self.held.is_empty() {
        self.held_since_ms = now_ms;
      }
      Place::Held
    };
    let before = match &mut self.context {
      Some(context) => {
        let (before, dropped) = context.important(place);
        for text in dropped {
          self.drop_text(&text);
        }
        before
      }
      None => Vec::new(),
    };
    let text = line.into_text();
    match place {
      Place::Window(_) => {
        for context in before {
          self.push_window(context, Mark::Context, out);
        }
        self.push_window(text, Mark::Important, out);
      }
      Place::Held => {
        for context in before {
          self.push_held(context, Mark::Context);
        }
        self.push_held(text, Mark::Important);
      }
    }
  }

  /// With context: where a non-important line goes as after-context, if it does.
  fn after_context_place(&mut self, repeats: bool) -> Option<Place> {
    let open_window = self
      .window
      .as_ref()
      .filter(|w| w.delivered)
      .map(|w| w.number);
    let held = !self.held.is_empty() && self.held.len() < self.config.max_batch_lines as usize;
    self
      .context
      .as_mut()?
      .after_context(repeats, |place| match place {
        Place::Window(number) => open_window == Some(number),
        Place::Held => held,
      })
  }

  /// Opens a delivered window at `now_ms` (its token taken).
  fn open_window(&mut self, now_ms: i64) {
    self.window = Some(Window {
      opened_ms: now_ms,
      delivered: true,
      count: 0,
      lines: Vec::with_capacity(self.config.max_batch_lines.min(32) as usize),
      marks: Vec::new(),
      ordinary: 0,
      number: self.windows_opened,
    });
    self.windows_opened += 1;
  }

  /// A line into the open delivered window, which closes when full.
  fn push_window(&mut self, text: String, mark: Mark, out: &mut impl FnMut(Out)) {
    if self.events_left == 0 {
      self.drop_text(&text);
      return;
    }
    let window = self.window.as_mut().expect("an open delivered window");
    window.lines.push(text);
    window.marks.push(mark);
    window.count += 1;
    if mark == Mark::Ordinary {
      window.ordinary += 1;
    }
    self.events_left -= 1;
    if window.count >= self.config.max_batch_lines || self.events_left == 0 {
      self.close(out);
    }
  }

  /// A line to the held ones (dropped when `maxBatchLines` are held).
  fn push_held(&mut self, text: String, mark: Mark) {
    if self.events_left == 0 || self.held.len() >= self.config.max_batch_lines as usize {
      self.drop_text(&text);
      return;
    }
    self.held.push(text);
    self.held_marks.push(mark);
    self.events_left -= 1;
  }

  /// A line that reaches no window: parked for a later important line's before-context, or
  /// dropped.
  fn drop_or_park(&mut self, line: LineText<'_>, repeats: bool) {
    let Some(context) = self.context.as_mut().filter(|c| c.wants_parked()) else {
      self.drop_line(&line);
      return;
    };
    if let Some(text) = context.park(line.into_text(), repeats) {
      self.drop_text(&text);
    }
  }

  /// Parked lines are dropped (a blank line, a line that reaches the model, the end).
  fn drop_parked(&mut self) {
    let Some(context) = self.context.as_mut() else {
      return;
    };
    let parked: Vec<String> = context.unpark().collect();
    for text in parked {
      self.drop_text(&text);
    }
  }

  /// A line that sanitised to blank: context ends there.
  pub fn blank(&mut self) {
    let Some(context) = self.context.as_mut() else {
      return;
    };
    let parked: Vec<String> = context.blank().collect();
    for text in parked {
      self.drop_text(&text);
    }
  }

  /// What is due at `now_ms` (or before): the open window closes if `batchMs` passed since it
  /// opened; held lines leave on the token that refilled (see the module documentation), and a
  /// window they open closes in turn if it is due too.
  pub fn poll(&mut self, now_ms: i64, out: &mut impl FnMut(Out)) {
    self.close_due(now_ms, out);
    if self.release(now_ms, out) {
      self.close_due(now_ms, out);
    }
  }

  /// When to call [`Self::poll`] next: when the open delivered window is due (`opened +
  /// batchMs`), or, with lines held, when the bucket refills. `None` when neither applies; a
  /// dropped window needs no timer (closing it sends nothing; the next line closes it when
  /// due).
  pub fn deadline(&self) -> Option<i64> {
    if !self.held.is_empty() {
      return self.main.as_ref()?.next_token_ms();
    }
    let window = self.window.as_ref().filter(|w| w.delivered)?;
    Some(
      window
        .opened_ms
        .saturating_add(self.config.batch_ms? as i64),
    )
  }

  /// At stop, and before a settled notification: held lines leave (one notification, without
  /// waiting for a token), or else the open window closes whatever its age.
  pub fn flush_all(&mut self, out: &mut impl FnMut(Out)) {
    self.drop_parked();
    if self.held.is_empty() {
      self.close(out);
      return;
    }
    // Held lines never share the lane with a delivered window: what is open is dropped.
    self.window = None;
    let lines = std::mem::take(&mut self.held);
    let marks = std::mem::take(&mut self.held_marks);
    let digest = self.take_digest();
    out(Out::Batch {
      lines,
      marks,
      digest,
    });
  }

  /// True when every non-blank line offered at `now_ms` would be dropped without the lane
  /// looking at its text: the throttle is on and its bucket empty at `now_ms`, no delivered
  /// window is open, and neither `important` nor `digest` needs the text. While this holds,
  /// a run of lines may be passed to [`Self::count_dropped`] instead of [`Self::offer`] (the
  /// pipeline's counting fast path); call [`Self::poll`] at `now_ms` first.
  pub fn counts_only(&self, now_ms: i64) -> bool {
    self.config.important.is_none() && self.digest.is_none() && self.drops_unimportant(now_ms)
  }

  /// True when every non-blank line offered at `now_ms` that `important` does not match would
  /// be dropped (the regex is the only thing about a line that could change that): the
  /// throttle is on and its bucket empty, no delivered window is open, and the lane still
  /// takes lines.
  fn drops_unimportant(&self, now_ms: i64) -> bool {
    if self.events_left == 0 || self.context.as_ref().is_some_and(Context::after_open) {
      return false;
    }
    if let Some(samples) = self.config.sample_lines {
      return match &self.window {
        Some(window) => window.ordinary >= samples,
        None => {
          samples == 0
            || !self.held.is_empty()
            || self.main.as_ref().is_some_and(|b| !b.is_full(now_ms))
        }
      };
    }
    !self.window.as_ref().is_some_and(|w| w.delivered)
      && self.main.as_ref().is_some_and(|b| !b.has_token(now_ms))
  }

  /// With `important` or `digest` (else [`Self::counts_only`] applies): whether runs of plain
  /// lines (see [`super::plain`]) offered at `now_ms` may go to [`Self::count_plain`], as long
  /// as none is a candidate of [`Self::plain_important`]. Re-check after every line offered.
  pub fn counts_plain(&self, now_ms: i64) -> bool {
    (self.config.important.is_none() || self.plain_important.is_some())
      && self.drops_unimportant(now_ms)
  }

  /// With `sampleLines`, while no window is open: the next line may open one, after which the
  /// lane may count runs again ([`Self::counts_plain`]); the pipeline then takes exact lines
  /// one at a time and asks again after each.
  pub fn may_count_soon(&self) -> bool {
    self.config.sample_lines.is_some()
      && self.window.is_none()
      && (self.config.important.is_none() || self.plain_important.is_some())
  }

  /// `important` for runs of plain lines, when set.
  pub fn plain_important(&self) -> Option<&PlainImportant> {
    self.plain_important.as_ref()
  }

  /// Lines dropped since the last call: add them to the entry's `droppedLines`.
  pub fn take_dropped(&mut self) -> u64 {
    std::mem::take(&mut self.dropped)
  }

  /// With `digest`: the lines dropped since the previous notification, for a settled or
  /// terminal notification (call [`Self::flush_all`] first); `None` without `digest` or when
  /// nothing was dropped. Event notifications get theirs inside [`Out`].
  pub fn take_digest(&mut self) -> Option<DigestNote> {
    self.digest.as_mut()?.take()
  }

  /// Whether a line may open a delivered window, or pass unbatched: a token (throttle off:
  /// always). Never while lines are held: the next token is theirs, and [`Self::poll`] at this
  /// time already spent it if it was there (while lines are held the bucket holds none).
  fn take_token(&mut self, now_ms: i64) -> bool {
    let Some(main) = &mut self.main else {
      return true;
    };
    let taken = main.try_take(now_ms);
    debug_assert!(
      !taken || self.held.is_empty(),
      "a token while lines are held"
    );
    taken
  }

  /// Whether `line` matches `important` (the throttle on: off, nothing is held).
  fn is_important(&self, line: &mut LineText<'_>) -> bool {
    match (&self.config.important, &self.main) {
      (Some(regex), Some(_)) => regex.is_match(line.text()),
      _ => false,
    }
  }

  /// An important line without a token at `now_ms`: held, or, with `maxBatchLines` held
  /// already, dropped.
  fn hold(&mut self, line: LineText<'_>, now_ms: i64) {
    if self.held.is_empty() {
      self.held_since_ms = now_ms;
    }
    if self.held.len() < self.config.max_batch_lines as usize {
      self.held.push(line.into_text());
      self.held_marks.push(Mark::Important);
      self.events_left -= 1;
    } else {
      self.drop_line(&line);
    }
  }

  /// Held lines leave if the bucket refilled by `now_ms`: the token is taken at the refill
  /// moment, and with `batchMs` the window it delivers is dated from the first held line (at
  /// most the refill moment; the caller closes it when due). True when they left.
  fn release(&mut self, now_ms: i64, out: &mut impl FnMut(Out)) -> bool {
    if self.held.is_empty() {
      return false;
    }
    let Some(main) = &mut self.main else {
      return false;
    };
    let Some(at) = main.next_token_ms().filter(|&at| at <= now_ms) else {
      return false;
    };
    if !main.try_take(at) {
      return false;
    }
    let lines = std::mem::take(&mut self.held);
    let marks = std::mem::take(&mut self.held_marks);
    // A dropped window still open ends here.
    self.window = None;
    if self.config.batch_ms.is_none() {
      let digest = self.take_digest();
      out(Out::Batch {
        lines,
        marks,
        digest,
      });
      return true;
    }
    let count = lines.len() as u32;
    let number = self.windows_opened;
    self.windows_opened += 1;
    if let Some(context) = &mut self.context {
      context.held_moved(number);
    }
    self.window = Some(Window {
      opened_ms: self.held_since_ms.min(at),
      delivered: true,
      count,
      lines,
      marks,
      ordinary: 0,
      number,
    });
    if count >= self.config.max_batch_lines || self.events_left == 0 {
      self.close(out);
    }
    true
  }

  /// Closes the open window if `batchMs` passed since it opened (at `now_ms` or before).
  fn close_due(&mut self, now_ms: i64, out: &mut impl FnMut(Out)) {
    if let (Some(window), Some(batch_ms)) = (&self.window, self.config.batch_ms) {
      if now_ms.saturating_sub(window.opened_ms) >= batch_ms as i64 {
        self.close(out);
      }
    }
  }

  fn fail_main_take(&mut self, now_ms: i64) {
    if let Some(main) = &mut self.main {
      let taken = main.try_take(now_ms);
      debug_assert!(!taken, "no token at a counted read's time");
    }
  }

  fn drop_text(&mut self, text: &str) {
    drop_into(&mut self.digest, &mut self.dropped, text);
  }

  fn drop_line(&mut self, line: &LineText<'_>) {
    self.dropped += 1;
    if let Some(digest) = &mut self.digest {
      line.record_in(digest);
    }
  }

  fn close(&mut self, out: &mut impl FnMut(Out)) {
    if let Some(window) = self.window.take().filter(|w| w.delivered) {
      let digest = self.take_digest();
      out(Out::Batch {
        lines: window.lines,
        marks: window.marks,
        digest,
      });
    }
  }
}

/// One sanitised line dropped: counted, and recorded by the digest.
fn drop_into(digest: &mut Option<DropDigest>, dropped: &mut u64, text: &str) {
  *dropped += 1;
  if let Some(digest) = digest {
    digest.record_sanitised(text);
  }
}
