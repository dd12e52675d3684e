//! The screen of a terminal-mode task (API.md §6.5 `ScreenSnapshot`), kept
//! by the `vt100` emulator as the terminal's bytes arrive.
//!
//! Why `vt100` (0.18): it takes bytes, not text: its parser (`vte`) keeps
//! a partial UTF-8 character or escape sequence across calls, so a read
//! split anywhere gives the same screen with no decoding of ours; it is
//! small (`vte`, `unicode-width`, `itoa`, `arrayvec`; MIT) and it reports
//! OSC titles through its callbacks. `avt` (asciinema's) has dirty-row
//! tracking, but takes `&str` (we would decode UTF-8 across reads
//! ourselves), ignores titles, and is larger.
//!
//! **Visible change.** The screen changed visibly when its text changed:
//! the rows as [`ScreenSnapshot::text`] renders them (trailing spaces
//! trimmed), or its size. The cursor does not count, nor does its
//! visibility, colours or attributes, nor the title: an identical redraw
//! (`\rworking` again and again) moves the cursor to column 0 and back,
//! and where a read happens to end decides where the cursor is then, so
//! counting it would make identical redraws look like changes; a cursor
//! blink is a visibility toggle; a prompt that echoes input changes the
//! text anyway.
//!
//! **The check is throttled.** It hashes the rows' text (no copy of the
//! previous screen is kept), which costs O(rows × cols): about 40 µs for a
//! full 120×40 screen, while parsing a small read costs well under 1 µs. So
//! [`Screen::feed`] checks at most once per [`CHECK_INTERVAL_MS`] of its
//! clock: a feed sooner than that after the last check leaves the check
//! pending ([`Screen::check_due`]), to be run by the next feed after the
//! interval, by [`Screen::refresh`] (from a timer: see `ScreenWatch`) or by
//! [`Screen::snapshot`]. A change found by a deferred check is dated to the
//! last feed before it, so `changed_at` is late by less than the interval,
//! never early; and a redraw whose reads all fall between two checks counts
//! only for what it left on the screen (an erase-then-draw split across
//! reads is no change then).
//!
//! **Lines that scroll away are not drawn.** `vt100` draws every character
//! into its grid (some 20 ns a byte, 70 % of the reading thread's time on a
//! `yes` under a terminal), which made the emulator, not the
//! pseudo-terminal, the limit of a terminal firehose. Most of such output
//! scrolls off the screen before anyone looks. So plain text (printable
//! ASCII, CR, LF, tab) is not handed to the emulator as it arrives but kept
//! ([`Screen::feed`]), and only its last lines are drawn when the screen is
//! next needed (a check, a snapshot, a resize, or the next byte that is not
//! plain text). What is dropped is exact, not an approximation: when the
//! kept text starts right after a CR and holds at least `2 × rows + 1` line
//! feeds, the screen after it does not depend on anything before it but the
//! emulator's modes. From column 0 (the CR) on any row, at most `rows - 1`
//! line feeds bring the cursor to the bottom row, and each further one
//! scrolls; after `rows + 2` more scrolls every visible row was scrolled in
//! blank during the kept text and written only by it, and the cursor ends
//! where the kept text leaves it. So a dropped stretch is replaced by a
//! single CR, which puts the cursor at column 0 as the stretch's own final
//! CR did. Plain text changes nothing but the grid, the cursor and the last
//! printed character (kept text always holds a printable one), so modes,
//! attributes, saved cursor, title and tab stops are the same either way.
//! Two conditions make it so, and both are checked: the emulator's parser
//! is between sequences with no partial UTF-8 character when the kept text
//! starts (a second `vte` parser follows every byte that is not plain text,
//! [`Probe`]), and no scroll region was ever set (one that does not cover
//! the cursor would keep rows the dropped text wrote; a program that sets
//! one is simply drawn in full from then on).

use std::hash::{DefaultHasher, Hasher};
use std::num::NonZeroU16;

use super::TerminalSize;
use crate::text::{truncate_code_points, utf16_len};

/// At most this many UTF-16 units of screen text go into a settled
/// notification (API.md §6.2).
pub const SETTLED_TEXT_MAX_UNITS: usize = 2000;

/// Feeds check for a visible change at most this often (see the module doc).
pub const CHECK_INTERVAL_MS: u64 = 10;

/// A title longer than this many code points is cut.
const MAX_TITLE_CODE_POINTS: usize = 1024;

/// Kept plain text past this size is cut down (or drawn, when no cut is
/// possible), so it never holds much more than a screen's worth of lines.
const KEPT_TEXT_LIMIT: usize = 16 * 1024;

/// Plain text: what only draws characters or moves the cursor within the
/// grid (see the module doc).
fn is_plain(byte: u8) -> bool {
  matches!(byte, 0x20..=0x7e | b'\r' | b'\n' | b'\t')
}

/// Where `text` (plain) can start being drawn with nothing before it lost:
/// right after the last CR that leaves at least `line_feeds` line feeds and
/// a printable character after it. `None` when there is no such CR.
fn cut_point(text: &[u8], line_feeds: usize) -> Option<usize> {
  let mut seen = 0;
  let mut at = text.len();
  while seen < line_feeds {
    at = text[..at].iter().rposition(|&b| b == b'\n')?;
    seen += 1;
  }
  let cut = text[..at].iter().rposition(|&b| b == b'\r')? + 1;
  text[cut..]
    .iter()
    .any(|b| (0x20..=0x7e).contains(b))
    .then_some(cut)
}

/// What the second `vte` parser saw while it followed the bytes that are
/// not plain text: whether the emulator's parser is now between sequences,
/// and whether a scroll region was set.
#[derive(Default)]
struct Probe {
  /// A sequence ended (dispatched, or cancelled by CAN or SUB): the parser
  /// is in its ground state right after the byte that ended it.
  ended: bool,
  /// A character was printed: the parser is in its ground state, and stays
  /// there up to the next ESC.
  printed: bool,
  /// `CSI … r` other than the reset to the full screen.
  scroll_region: bool,
}

impl vte::Perform for Probe {
  fn print(&mut self, _: char) {
    self.printed = true;
  }

  fn execute(&mut self, byte: u8) {
    // CAN and SUB cancel any sequence ("anywhere" in vte's state machine).
    if matches!(byte, 0x18 | 0x1a) {
      self.ended = true;
    }
  }

  fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], _: bool, action: char) {
    if action == 'r' && !(intermediates.is_empty() && params.iter().all(|p| p == [0])) {
      self.scroll_region = true;
    }
    self.ended = true;
  }

  fn esc_dispatch(&mut self, _: &[u8], _: bool, _: u8) {
    self.ended = true;
  }

  fn osc_dispatch(&mut self, _: &[&[u8]], bell_terminated: bool) {
    // An OSC ended by ESC continues as that escape (`ESC \\`).
    if bell_terminated {
      self.ended = true;
    }
  }

  fn terminated(&self) -> bool {
    self.ended || self.printed
  }
}

/// Plain text not yet drawn (see the module doc).
struct Kept {
  /// The emulator's parser is between sequences, with no partial UTF-8
  /// character, after what it was given and what is kept here.
  clean: bool,
  /// Follows the emulator's parser through everything that is not plain
  /// text while `clean` is false; started afresh whenever it is true.
  probe: vte::Parser,
  /// Plain text, not yet given to the emulator.
  text: Vec<u8>,
  /// Text before `text` was dropped: draw a CR first.
  dropped: bool,
  /// No scroll region was ever set: dropping is exact.
  may_drop: bool,
}

/// The cursor, 0-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CursorPosition {
  pub row: u16,
  pub col: u16,
}

/// What `screen()` returns (API.md §6.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScreenSnapshot {
  /// The visible rows joined by `\n`, each without its trailing spaces,
  /// without the trailing empty rows.
  pub text: String,
  pub cursor: CursorPosition,
  pub cols: u16,
  pub rows: u16,
  /// The last title set by OSC 0 or 2; `None` before any, or once set empty.
  pub title: Option<String>,
  /// Epoch ms of the last visible change (the creation time before any).
  pub changed_at: u64,
}

/// The title and the answers the program asked for, gathered by the parser.
#[derive(Default)]
struct Callbacks {
  title: Option<String>,
  replies: Vec<u8>,
}

impl Callbacks {
  fn set_title(&mut self, title: &[u8]) {
    let title = String::from_utf8_lossy(title);
    let title = truncate_code_points(&title, MAX_TITLE_CODE_POINTS);
    self.title = (!title.is_empty()).then(|| title.to_owned());
  }
}

impl vt100::Callbacks for Callbacks {
  fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
    self.set_title(title);
  }

  /// `vte` splits an OSC at every `;`, so a title holding one reaches us
  /// here in pieces (`vt100` only matches a title of one piece).
  fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
    if let [kind, pieces @ ..] = params {
      if (*kind == b"0" || *kind == b"2") && pieces.len() > 1 {
        self.set_title(&pieces.join(&b';'));
      }
    }
  }

  /// Answers the queries a program may wait for before drawing: cursor
  /// position (`CSI 6 n`), status (`CSI 5 n`) and primary device
  /// attributes (`CSI c`, answered as a VT102 like xterm's default).
  fn unhandled_csi(
    &mut self,
    screen: &mut vt100::Screen,
    i1: Option<u8>,
    _i2: Option<u8>,
    params: &[&[u16]],
    c: char,
  ) {
    let first = params.first().and_then(|p| p.first()).copied().unwrap_or(0);
    match (i1, c, first) {
      (None, 'n', 6) => {
        let (row, col) = screen.cursor_position();
        let reply = format!("\x1b[{};{}R", u32::from(row) + 1, u32::from(col) + 1);
        self.replies.extend_from_slice(reply.as_bytes());
      }
      (None, 'n', 5) => self.replies.extend_from_slice(b"\x1b[0n"),
      (None, 'c', 0) => self.replies.extend_from_slice(b"\x1b[?6c"),
      _ => {}
    }
  }
}

/// The emulated screen of one terminal. Not thread-safe by itself: the
/// integrator keeps it behind the task's lock (the reactor feeds it, the
/// JavaScript thread reads snapshots).
pub struct Screen {
  parser: vt100::Parser<Callbacks>,
  kept: Kept,
  /// Hash of the visible text and size at the last check.
  hash: u64,
  changed_at: u64,
  /// The clock of the last check; `None` before the first feed.
  checked_at: Option<u64>,
  /// The clock of the last feed, when it came after the last check.
  unchecked_feed: Option<u64>,
}

impl std::fmt::Debug for Screen {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("Screen")
      .field("size", &self.size())
      .field("changed_at", &self.changed_at)
      .finish_non_exhaustive()
  }
}

fn non_zero(n: u16) -> NonZeroU16 {
  NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN)
}

impl Screen {
  /// A blank screen of `size` (a zero dimension counts as 1), created at
  /// `now_ms` (epoch ms), which is its first `changed_at`.
  pub fn new(size: TerminalSize, now_ms: u64) -> Screen {
    let parser = vt100::Parser::new_with_callbacks(
      non_zero(size.rows),
      non_zero(size.cols),
      0,
      Callbacks::default(),
    );
    let mut screen = Screen {
      parser,
      kept: Kept {
        clean: true,
        probe: vte::Parser::new(),
        text: Vec::new(),
        dropped: false,
        may_drop: true,
      },
      hash: 0,
      changed_at: now_ms,
      checked_at: None,
      unchecked_feed: None,
    };
    screen.hash = screen.visible_hash();
    screen
  }

  /// Parses `bytes` (a read of the terminal, split anywhere) and, unless
  /// the last check was less than [`CHECK_INTERVAL_MS`] ago, checks for a
  /// visible change (see the module doc). Returns whether this call found
  /// one; `changed_at` then moved. A check left pending shows in
  /// [`Screen::check_due`].
  pub fn feed(&mut self, bytes: &[u8], now_ms: u64) -> bool {
    if bytes.is_empty() {
      return false;
    }
    self.process(bytes);
    self.unchecked_feed = Some(now_ms);
    let due = self
      .checked_at
      .is_none_or(|at| now_ms >= at.saturating_add(CHECK_INTERVAL_MS));
    due && self.check()
  }

  /// Gives `bytes` to the emulator, keeping plain text back (see the
  /// module doc).
  fn process(&mut self, mut bytes: &[u8]) {
    while !bytes.is_empty() {
      if self.kept.clean {
        let plain = bytes
          .iter()
          .position(|&b| !is_plain(b))
          .unwrap_or(bytes.len());
        if plain > 0 {
          self.keep(&bytes[..plain]);
          bytes = &bytes[plain..];
          continue;
        }
        // The parser is where a fresh one is: the probe starts afresh.
        self.draw_kept();
        self.kept.clean = false;
        self.kept.probe = vte::Parser::new();
      }
      let mut probe = Probe::default();
      let taken = self
        .kept
        .probe
        .advance_until_terminated(&mut probe, bytes)
        // Never 0: a fresh probe stops only after a byte.
        .clamp(1, bytes.len());
      self.parser.process(&bytes[..taken]);
      if probe.scroll_region {
        self.kept.may_drop = false;
      }
      let last = bytes[taken - 1];
      // After a print the probe stopped at the end of a run of text, or just
      // after the ESC that ended it; a partial UTF-8 character ends in a
      // byte above 0x7f.
      self.kept.clean = probe.ended || (probe.printed && last != 0x1b && last < 0x80);
      bytes = &bytes[taken..];
    }
  }

  /// Keeps plain text, dropping what the kept text makes irrelevant.
  fn keep(&mut self, text: &[u8]) {
    let kept = &mut self.kept;
    let line_feeds = 2 * usize::from(self.parser.screen().size().0.get()) + 1;
    if kept.may_drop {
      if let Some(cut) = cut_point(text, line_feeds) {
        kept.text.clear();
        kept.text.extend_from_slice(&text[cut..]);
        kept.dropped = true;
        return;
      }
    }
    kept.text.extend_from_slice(text);
    if kept.text.len() > KEPT_TEXT_LIMIT {
      match cut_point(&kept.text, line_feeds).filter(|_| kept.may_drop) {
        Some(cut) => {
          kept.text.drain(..cut);
          kept.dropped = true;
        }
        None => self.draw_kept(),
      }
    }
  }

  /// Draws the kept text: the screen is then exact.
  fn draw_kept(&mut self) {
    if std::mem::take(&mut self.kept.dropped) {
      self.parser.process(b"\r");
    }
    if !self.kept.text.is_empty() {
      self.parser.process(&self.kept.text);
      self.kept.text.clear();
    }
  }

  /// When a pending check should run (`CHECK_INTERVAL_MS` after the last
  /// one), if bytes were fed since it.
  pub fn check_due(&self) -> Option<u64> {
    self.unchecked_feed?;
    Some(
      self
        .checked_at
        .map_or(0, |at| at.saturating_add(CHECK_INTERVAL_MS)),
    )
  }

  /// Runs a pending check now. Returns whether it found a visible change
  /// (dated to the last feed).
  pub fn refresh(&mut self) -> bool {
    self.unchecked_feed.is_some() && self.check()
  }

  /// Resizes the screen (as the program's terminal was resized), checking
  /// at once. A new size is a visible change: the program is about to
  /// redraw for it.
  pub fn resize(&mut self, size: TerminalSize, now_ms: u64) -> bool {
    self.draw_kept();
    self
      .parser
      .set_size(non_zero(size.rows), non_zero(size.cols));
    self.unchecked_feed = Some(self.unchecked_feed.map_or(now_ms, |at| at.max(now_ms)));
    self.check()
  }

  /// Compares the screen with the last check; a change is dated to the
  /// last feed (or resize) since then.
  fn check(&mut self) -> bool {
    let Some(fed_at) = self.unchecked_feed.take() else {
      return false;
    };
    self.checked_at = Some(self.checked_at.map_or(fed_at, |at| at.max(fed_at)));
    self.draw_kept();
    let hash = self.visible_hash();
    if hash == self.hash {
      return false;
    }
    self.hash = hash;
    self.changed_at = self.changed_at.max(fed_at);
    true
  }

  /// The size and every row's trimmed text, hashed. No allocation beyond
  /// one string per row; the rows are never joined.
  fn visible_hash(&self) -> u64 {
    let screen = self.parser.screen();
    let (rows, cols) = screen.size();
    let mut hasher = DefaultHasher::new();
    hasher.write_u16(rows.get());
    hasher.write_u16(cols.get());
    for row in screen.rows(0, cols.get()) {
      hasher.write(row.trim_end_matches(' ').as_bytes());
      hasher.write_u8(b'\n');
    }
    hasher.finish()
  }

  pub fn size(&self) -> TerminalSize {
    let (rows, cols) = self.parser.screen().size();
    TerminalSize {
      cols: cols.get(),
      rows: rows.get(),
    }
  }

  /// Epoch ms of the last visible change found (a pending check may find
  /// a later one: [`Screen::refresh`]).
  pub fn changed_at(&self) -> u64 {
    self.changed_at
  }

  /// The visible text (see [`ScreenSnapshot::text`]).
  pub fn text(&mut self) -> String {
    self.draw_kept();
    let screen = self.parser.screen();
    let (_, cols) = screen.size();
    let mut text = String::new();
    let mut pending_rows = 0;
    for row in screen.rows(0, cols.get()) {
      let row = row.trim_end_matches(' ');
      if row.is_empty() {
        pending_rows += 1;
        continue;
      }
      if !text.is_empty() || pending_rows > 0 {
        // Empty rows between text rows stay; the first row needs no '\n'.
        let breaks = pending_rows + usize::from(!text.is_empty());
        text.extend(std::iter::repeat_n('\n', breaks));
      }
      pending_rows = 0;
      text.push_str(row);
    }
    text
  }

  pub fn cursor(&mut self) -> CursorPosition {
    self.draw_kept();
    let screen = self.parser.screen();
    let (row, col) = screen.cursor_position();
    let (rows, cols) = screen.size();
    // After a write to the last column the cursor waits there to wrap.
    CursorPosition {
      row: row.min(rows.get() - 1),
      col: col.min(cols.get() - 1),
    }
  }

  pub fn title(&self) -> Option<&str> {
    self.parser.callbacks().title.as_deref()
  }

  /// `screen()` (API.md §6.5). Runs a pending check first, so `changed_at`
  /// agrees with `text`.
  pub fn snapshot(&mut self) -> ScreenSnapshot {
    self.refresh();
    let size = self.size();
    ScreenSnapshot {
      text: self.text(),
      cursor: self.cursor(),
      cols: size.cols,
      rows: size.rows,
      title: self.title().map(str::to_owned),
      changed_at: self.changed_at,
    }
  }

  /// The screen text of a settled notification (see [`settled_text`]).
  pub fn settled_text(&mut self) -> String {
    settled_text(&self.text()).to_owned()
  }

  /// Bytes the program asked the terminal to answer (cursor position,
  /// status, device attributes) since the last call; the integrator writes
  /// them to the terminal's input. Empty most of the time.
  pub fn take_replies(&mut self) -> Vec<u8> {
    std::mem::take(&mut self.parser.callbacks_mut().replies)
  }
}

/// `text` cut to at most [`SETTLED_TEXT_MAX_UNITS`] UTF-16 units, keeping
/// its end (the bottom of the screen, where a program writes last): whole
/// rows from the first row start that leaves the rest within the limit;
/// only when the last row alone is longer, its own end (never splitting a
/// character).
pub fn settled_text(text: &str) -> &str {
  if utf16_len(text) <= SETTLED_TEXT_MAX_UNITS {
    return text;
  }
  let mut units = 0;
  let mut cut = text.len();
  for (index, c) in text.char_indices().rev() {
    units += c.len_utf16();
    if units > SETTLED_TEXT_MAX_UNITS {
      break;
    }
    cut = index;
  }
  let tail = &text[cut..];
  let starts_a_row = cut > 0 && text.as_bytes()[cut - 1] == b'\n';
  match tail.find('\n') {
    Some(newline) if !starts_a_row => &tail[newline + 1..],
    _ => tail,
  }
}

#[cfg(test)]
mod tests;
