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

use std::hash::{DefaultHasher, Hasher};
use std::num::NonZeroU16;

use super::TerminalSize;
use crate::core::text::{truncate_code_points, utf16_len};

/// At most this many UTF-16 units of screen text go into a settled
/// notification (API.md §6.2).
pub const SETTLED_TEXT_MAX_UNITS: usize = 2000;

/// Feeds check for a visible change at most this often (see the module doc).
pub const CHECK_INTERVAL_MS: u64 = 10;

/// A title longer than this many code points is cut.
const MAX_TITLE_CODE_POINTS: usize = 1024;

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
    self.parser.process(bytes);
    self.unchecked_feed = Some(now_ms);
    let due = self
      .checked_at
      .is_none_or(|at| now_ms >= at.saturating_add(CHECK_INTERVAL_MS));
    due && self.check()
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
  pub fn text(&self) -> String {
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

  pub fn cursor(&self) -> CursorPosition {
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
  pub fn settled_text(&self) -> String {
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
