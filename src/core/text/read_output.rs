//! `readTaskOutput` (API.md §6.4): incremental, bounded reads of an output file. Each read
//! returns the text from `offset` on, sanitised like the notification tail (CONTRACT.md §2.14
//! steps 5–7: escape sequences and control characters dropped, each `\r` redraw collapsed to
//! its last frame) but not trimmed, and the `nextOffset` to start the next read at. Polling
//! from 0 with each `nextOffset` returns texts whose concatenation is the sanitised file.
//!
//! # Where a read stops
//!
//! The sanitiser works line by line (a `\r` redraw keeps the *last* non-empty frame of its
//! line), so a read may only stop where what follows cannot change what it returned. The
//! window is the bytes `[offset, offset + maxBytes)`, cut at the end of the file.
//!
//! 1. **Whole lines.** `nextOffset` is just after the window's last `\n`.
//! 2. **End of file.** When the window reaches the end of the file, the rest is returned, the
//!    unfinished last line (no `\n` yet) included, less an unfinished UTF-8 character at the
//!    very end (1–3 bytes, held back until the character is complete).
//! 3. **A line longer than `maxBytes`** (no `\n` in a window that ends before the end of the
//!    file):
//!    * if the window holds a `\r` followed by a visible frame (one that starts, after control
//!      characters and complete CSI sequences, with a character the sanitiser keeps), the frames
//!      before the last such `\r` are overwritten whatever comes next: the read skips them,
//!      `text` is `''` and `nextOffset` is just after that `\r`;
//!    * otherwise the line is cut: `nextOffset` is the window's end, moved back to the start of
//!      an unfinished UTF-8 character, then to the window's last ESC if the escape sequence it
//!      starts may still be growing (a CSI or `ESC`-intermediate escape without its final byte,
//!      an OSC without its BEL, a DCS, SOS, PM or APC string), no `\r` follows that ESC and it
//!      is not the window's first byte. The piece is returned, sanitised on its own.
//!
//! Hence the concatenation is exactly the sanitised file whenever no read had to cut a line
//! (rule 3, second case): whenever every line, with its `\n`, fits in `maxBytes`, and for a
//! `\r` progress line of any length whenever each frame (the last one with its `\n`), with the
//! next frame's `\r` and the controls and CSI sequences before its first visible character,
//! fits in `maxBytes`. Where a line was cut, the concatenation is the sanitised pieces between
//! the cuts: a `\r` redraw or an escape sequence after a cut cannot take back a piece already
//! returned. The same holds for a file that grows while it is polled: an unfinished last line
//! returned at the end of the file (rule 2) is final, so a later `\r` redraw of that line
//! appends its frame rather than replacing what was returned, and an escape sequence written in
//! two parts across that moment is not recognised.
//!
//! `offset` pointing inside a UTF-8 character starts after it (the result's `offset` says where
//! the text starts). `offset` at or past the end of the file returns `text: ''` and
//! `nextOffset = totalBytes`: at the end `nextOffset === offset`, past it (the file shrank,
//! for example truncated by a re-run) `nextOffset < offset`.
//!
//! # grep
//!
//! With a regex, the sanitised lines of the window are tested one by one (without their `\n`;
//! the regex runs in linear time, and is compiled once and kept for the next reads) and `text`
//! is the matching lines, each ending with `\n`; `matchedLines` counts them. A line is tested
//! once, when it is complete: rule 2 does not apply, so an unfinished last line is left for a
//! later read (`nextOffset` stops at its start) and a poller never sees half a line matched,
//! then the whole line again. A line longer than `maxBytes` that had to be cut is tested piece
//! by piece, each piece as a line. With grep, an empty `text` is no sign of the end of the file:
//! `nextOffset === offset` is.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use regex::{Regex, RegexBuilder};

use super::controls::{classify_control, Control};
use super::fast::incomplete_utf8_tail;
use super::output_file::{open_no_follow, read_at, OutputFileError};
use super::output_text::{csi_len, sanitize_output};

/// `maxBytes` when the caller gives none.
pub const DEFAULT_READ_OUTPUT_MAX_BYTES: usize = 64 * 1024;
/// The smallest `maxBytes`: a window from a character boundary then always holds a character.
pub const MIN_READ_OUTPUT_MAX_BYTES: usize = 4;
/// The largest `maxBytes` (16 MiB).
pub const MAX_READ_OUTPUT_MAX_BYTES: usize = 16 * 1024 * 1024;

const ESC: u8 = 0x1B;

/// What `readTaskOutput` returns when the file could be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputRead {
  /// The sanitised text of `offset..next_offset` (with grep: its matching lines).
  pub text: String,
  /// Where the text starts: the requested offset, moved past the rest of a UTF-8 character it
  /// pointed into.
  pub offset: u64,
  /// Where the next read starts.
  pub next_offset: u64,
  /// The file's size when it was read.
  pub total_bytes: u64,
  /// True when `maxBytes` stopped the read before the end of the file.
  pub truncated: bool,
  /// With grep: how many lines matched.
  pub matched_lines: Option<u64>,
}

/// How a read chose where to stop (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cut {
  /// Nothing read: the end of the file (with grep, an unfinished last line waits for its `\n`).
  Nothing,
  /// Rule 1: through the window's last `\n`.
  Lines,
  /// Rule 2: to the end of the file.
  Rest,
  /// Rule 3: through the last `\r` of an over-long line that a visible frame follows.
  Overwritten,
  /// Rule 3: a piece of an over-long line.
  Piece,
}

/// `readTaskOutput(outputFile, { offset, maxBytes, grep })` (API.md §6.4). `max_bytes` is
/// clamped to `4..=16 MiB` (the binding refuses other values). `Err` is the `{ error }`
/// message: the file is missing, a symlink (never followed), not a regular file (a FIFO is
/// refused without blocking), or unreadable.
pub fn read_task_output(
  path: &Path,
  offset: u64,
  max_bytes: usize,
  grep: Option<&Grep>,
) -> Result<OutputRead, String> {
  read_with_cut(path, offset, max_bytes, grep)
    .map(|(read, _)| read)
    .map_err(|error| error.message(path))
}

fn read_with_cut(
  path: &Path,
  offset: u64,
  max_bytes: usize,
  grep: Option<&Grep>,
) -> Result<(OutputRead, Cut), OutputFileError> {
  let file = open_no_follow(path).map_err(OutputFileError::at("open"))?;
  let metadata = file.metadata().map_err(OutputFileError::at("fstat"))?;
  if !metadata.is_file() {
    return Err(not_a_regular_file(metadata.is_dir()));
  }
  read_source(&file, metadata.len(), offset, max_bytes, grep)
}

/// What can be read at an offset: the file, or bytes in memory for the tests.
pub(super) trait ReadAt {
  /// Fills `buf` from `offset`; fewer bytes only at the end.
  fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
}

impl ReadAt for File {
  fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    read_at(self, buf, offset)
  }
}

/// The read itself, on `source` of `total` bytes.
pub(super) fn read_source(
  source: &(impl ReadAt + ?Sized),
  total: u64,
  offset: u64,
  max_bytes: usize,
  grep: Option<&Grep>,
) -> Result<(OutputRead, Cut), OutputFileError> {
  let max_bytes = max_bytes.clamp(MIN_READ_OUTPUT_MAX_BYTES, MAX_READ_OUTPUT_MAX_BYTES);
  let nothing = |offset: u64| {
    let read = OutputRead {
      text: String::new(),
      offset,
      next_offset: offset.min(total),
      total_bytes: total,
      truncated: false,
      matched_lines: grep.map(|_| 0),
    };
    (read, Cut::Nothing)
  };
  if offset >= total {
    return Ok(nothing(offset));
  }
  let (mut start, mut window) = read_window(source, offset, max_bytes, total)?;
  if offset > 0 && window.first().is_some_and(|&b| is_continuation(b)) {
    let skip = rest_of_char_before(source, offset, &window)?;
    if skip > 0 {
      start = offset + skip as u64;
      if start >= total {
        return Ok(nothing(start));
      }
      (start, window) = read_window(source, start, max_bytes, total)?;
    }
  }
  let window_end = start + window.len() as u64;
  // A short read means the file shrank while it was read: its end is then where the read ended.
  let eof = window_end >= total || window.len() < max_bytes;
  let (end, cut) = plan(&window, eof, grep.is_some());
  let mut matched_lines = grep.map(|_| 0);
  let text = match cut {
    Cut::Nothing | Cut::Overwritten => String::new(),
    Cut::Lines | Cut::Rest | Cut::Piece => {
      window.truncate(end);
      let text = sanitize_output(window);
      match grep {
        Some(grep) => {
          let (kept, count) = grep_lines(&text, grep);
          matched_lines = Some(count);
          kept
        }
        None => text,
      }
    }
  };
  let read = OutputRead {
    text,
    offset: start,
    next_offset: start + end as u64,
    total_bytes: total,
    truncated: window_end < total,
    matched_lines,
  };
  Ok((read, cut))
}

/// The `{ error }` of a path that opened but is no regular file: a directory in the words of
/// Node's `fs` (`EISDIR: illegal operation on a directory, read '…'`), anything else (a FIFO, a
/// socket, a device) `EINVAL: not a regular file, read '…'`.
fn not_a_regular_file(directory: bool) -> OutputFileError {
  let message = if directory {
    "EISDIR: illegal operation on a directory"
  } else {
    "EINVAL: not a regular file"
  };
  OutputFileError::new("read", io::Error::new(io::ErrorKind::InvalidInput, message))
}

/// Reads `[offset, offset + max_bytes)`, cut at `total`: fewer bytes only if the file shrank.
fn read_window(
  source: &(impl ReadAt + ?Sized),
  offset: u64,
  max_bytes: usize,
  total: u64,
) -> Result<(u64, Vec<u8>), OutputFileError> {
  let length = (total - offset).min(max_bytes as u64) as usize;
  let mut window = vec![0; length];
  let filled = source
    .read_at(&mut window, offset)
    .map_err(OutputFileError::at("read"))?;
  window.truncate(filled);
  Ok((offset, window))
}

fn is_continuation(byte: u8) -> bool {
  byte & 0xC0 == 0x80
}

/// When `offset` points inside a well-formed UTF-8 character (its lead byte before `offset`),
/// how many of its bytes are at `offset` and after; 0 for a stray continuation byte, which the
/// sanitised file shows as U+FFFD.
fn rest_of_char_before(
  source: &(impl ReadAt + ?Sized),
  offset: u64,
  window: &[u8],
) -> Result<usize, OutputFileError> {
  let from = offset.saturating_sub(3);
  let mut before = [0; 3];
  let before_len = (offset - from) as usize;
  let filled = source
    .read_at(&mut before[..before_len], from)
    .map_err(OutputFileError::at("read"))?;
  Ok(char_rest(&before[..filled], window))
}

/// [`rest_of_char_before`] on the bytes just before `offset` and those from `offset` on.
pub(super) fn char_rest(before: &[u8], after: &[u8]) -> usize {
  let Some(lead_at) = before.iter().rposition(|&b| !is_continuation(b)) else {
    return 0;
  };
  let length = match before[lead_at] {
    0xC2..=0xDF => 2,
    0xE0..=0xEF => 3,
    0xF0..=0xF4 => 4,
    _ => return 0,
  };
  let in_before = before.len() - lead_at;
  if length <= in_before {
    return 0;
  }
  let rest = (length - in_before).min(after.len());
  let mut char_bytes = before[lead_at..].to_vec();
  char_bytes.extend_from_slice(&after[..rest]);
  match std::str::from_utf8(&char_bytes) {
    Ok(_) => rest,
    // A character the end of the file cuts short.
    Err(error) if error.error_len().is_none() && rest == after.len() => rest,
    Err(_) => 0,
  }
}

/// Where the read of `window` stops, and by which rule.
fn plan(window: &[u8], eof: bool, grep: bool) -> (usize, Cut) {
  if window.is_empty() {
    return (0, Cut::Nothing);
  }
  if eof && !grep {
    let end = window.len() - incomplete_utf8_tail(window);
    return (end, if end == 0 { Cut::Nothing } else { Cut::Rest });
  }
  if let Some(newline) = rfind(window, b'\n') {
    return (newline + 1, Cut::Lines);
  }
  if let Some(redraw) = last_redraw(window) {
    return (redraw + 1, Cut::Overwritten);
  }
  if eof {
    // grep: the unfinished last line is tested once its `\n` is written.
    return (0, Cut::Nothing);
  }
  (piece_end(window), Cut::Piece)
}

fn rfind(haystack: &[u8], needle: u8) -> Option<usize> {
  haystack.iter().rposition(|&b| b == needle)
}

/// The last `\r` of `window` (which holds no `\n`) whose frame is visible: every frame before it
/// is overwritten, whatever follows.
fn last_redraw(window: &[u8]) -> Option<usize> {
  let mut frame_end = window.len();
  while let Some(cr) = rfind(&window[..frame_end], b'\r') {
    if frame_is_visible(&window[cr + 1..frame_end]) {
      return Some(cr);
    }
    frame_end = cr;
  }
  None
}

/// True when the sanitiser keeps a character of this frame (the bytes after a `\r`, up to the
/// next `\r` or the window's end), however the line goes on: after control characters and
/// complete CSI sequences, there is a character the sanitiser keeps. No other sequence can
/// start before that character, and none crosses a `\r`, so no later byte can remove it.
pub(super) fn frame_is_visible(frame: &[u8]) -> bool {
  let (text, invalid_follows) = match std::str::from_utf8(frame) {
    Ok(text) => (text, false),
    Err(error) => (
      std::str::from_utf8(&frame[..error.valid_up_to()]).unwrap_or_default(),
      // An invalid sequence decodes to U+FFFD, which is kept; an unfinished one is unknown.
      error.error_len().is_some(),
    ),
  };
  let mut at = 0;
  while let Some(c) = text[at..].chars().next() {
    if c == '\x1b' {
      match csi_len(&text.as_bytes()[at..]) {
        Some(length) => at += length,
        None => return false,
      }
      continue;
    }
    let dropped = matches!(
      classify_control(c),
      Some(Control::OtherC0 | Control::C1 | Control::Bidi)
    );
    if !dropped {
      return true;
    }
    at += c.len_utf8();
  }
  invalid_follows
}

/// Where a piece of an over-long line ends (rule 3, second case): the window's end, moved back
/// to the start of an unfinished UTF-8 character, then to the window's last ESC when the escape
/// sequence it starts may still be growing (see [`sequence_may_grow`]), no `\r` follows it (no
/// sequence crosses one) and it is not the window's first byte.
fn piece_end(window: &[u8]) -> usize {
  let end = window.len() - incomplete_utf8_tail(window);
  match rfind(&window[..end], ESC) {
    Some(esc)
      if esc > 0 && !window[esc..end].contains(&b'\r') && sequence_may_grow(&window[esc..end]) =>
    {
      esc
    }
    _ => end,
  }
}

/// True when the bytes after `sequence` (from an ESC, with no later ESC or `\r`) could change
/// what §2.14 step 5 removes of it: a CSI or an `ESC`-intermediates escape without its final
/// byte, an OSC without its BEL, or a DCS, SOS, PM or APC string (ended only by `ESC \`, the
/// next ESC or a `\r`). `ESC \` itself and ESC before any other byte are settled.
fn sequence_may_grow(sequence: &[u8]) -> bool {
  match sequence.get(1) {
    None => true,
    Some(b'[') => {
      csi_len(sequence).is_none() && sequence[2..].iter().all(|b| (0x20..=0x3F).contains(b))
    }
    Some(b']') => !sequence.contains(&0x07),
    Some(b'P' | b'X' | b'^' | b'_') => true,
    Some(0x20..=0x2F) => sequence[1..].iter().all(|b| (0x20..=0x2F).contains(b)),
    Some(_) => false,
  }
}

/// The `grep` of a read: the regex compiled for testing a line, and when it can be, for finding
/// the candidate lines in the whole text at once (see [`grep_lines`]).
#[derive(Clone, Debug)]
pub struct Grep {
  line: Regex,
  scan: Option<Regex>,
}

/// How many compiled patterns are kept: a poller sends the same `grep` on every read, and
/// compiling costs more than reading 64 KiB (55–190 µs for an alternation or a case-insensitive
/// word).
const GREP_CACHE_SIZE: usize = 16;
/// Patterns longer than this are compiled on every call, never kept.
const GREP_CACHE_MAX_PATTERN: usize = 1024;

impl Grep {
  /// Compiles `pattern` (Rust `regex` syntax), or takes it from the cache of the last 16.
  pub fn new(pattern: &str) -> Result<Self, regex::Error> {
    static CACHE: Mutex<Vec<(String, Grep)>> = Mutex::new(Vec::new());
    let mut cache = CACHE
      .lock()
      .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(at) = cache.iter().position(|(kept, _)| kept == pattern) {
      let entry = cache.remove(at);
      let grep = entry.1.clone();
      cache.push(entry);
      return Ok(grep);
    }
    let grep = Self::compile(pattern)?;
    if pattern.len() <= GREP_CACHE_MAX_PATTERN {
      if cache.len() == GREP_CACHE_SIZE {
        cache.remove(0);
      }
      cache.push((pattern.to_owned(), grep.clone()));
    }
    Ok(grep)
  }

  fn compile(pattern: &str) -> Result<Self, regex::Error> {
    let line = Regex::new(pattern)?;
    let scan = if scans_like_lines(pattern) {
      RegexBuilder::new(pattern).multi_line(true).build().ok()
    } else {
      None
    };
    Ok(Self { line, scan })
  }
}

/// True when the pattern, compiled multi-line and run on the whole text, finds a match starting
/// in every line that it matches alone: `^` and `$` then match at line ends, and `\b` sees the
/// same non-word character (`\n`) at a line end as the end of a line tested alone. Not so with
/// `\A` and `\z` (only at the ends of the text) or with `m` turned off by a flag group:
/// conservatively, any `\A`, `\z`, or `(?` group with a `-` among its flags.
pub(super) fn scans_like_lines(pattern: &str) -> bool {
  if pattern.contains("\\A") || pattern.contains("\\z") {
    return false;
  }
  !pattern.match_indices("(?").any(|(at, _)| {
    pattern[at + 2..]
      .split([':', ')'])
      .next()
      .is_some_and(|flags| flags.contains('-'))
  })
}

/// The lines of `text` (sanitised; a last line without `\n` counts) that the grep matches,
/// each ending with `\n`, and how many. A line is tested alone. With a scan regex, only the
/// lines where the scan of the whole text finds a match are tested (a match may also cross a
/// line end, hence the test), so a window costs one search, not one per line.
pub(super) fn grep_lines(text: &str, grep: &Grep) -> (String, u64) {
  let mut kept = String::new();
  let mut count = 0;
  let mut keep = |line: &str| {
    if grep.line.is_match(line) {
      kept.push_str(line);
      kept.push('\n');
      count += 1;
    }
  };
  match &grep.scan {
    None => {
      for line in text.split_inclusive('\n') {
        keep(line.strip_suffix('\n').unwrap_or(line));
      }
    }
    Some(scan) => {
      let mut at = 0;
      while let Some(found) = scan.find_at(text, at) {
        let start = text[..found.start()]
          .rfind('\n')
          .map_or(0, |newline| newline + 1);
        if start >= text.len() {
          break;
        }
        let end = text[found.start()..]
          .find('\n')
          .map_or(text.len(), |newline| found.start() + newline);
        keep(&text[start.max(at)..end]);
        at = end + 1;
        if at >= text.len() {
          break;
        }
      }
    }
  }
  (kept, count)
}
