//! The native monitor's line splitter, one per stream (CONTRACT.md §2.10
//! "Line splitter", the TypeScript `processLines`, with the partial-line cap
//! checked after every split so pending text stays bounded, §4 item 3).

use crate::core::text::{count_plain_lines, ecma_trim, truncate_utf16, utf16_len};

/// `PARTIAL_LINE_BUFFER_CAP`: longest line passed on, in UTF-16 units.
pub const PARTIAL_LINE_CAP_UNITS: usize = 4096;

/// Splits decoded, ANSI-stripped text into trimmed, non-empty, capped lines.
#[derive(Debug, Default)]
pub struct LineSplitter {
  pending: String,
  pending_units: usize,
  /// Pieces produced so far: complete lines (blank ones included), forced cuts
  /// of an over-long partial line, and a flushed remainder.
  pieces: u64,
}

impl LineSplitter {
  pub fn new() -> Self {
    Self::default()
  }

  /// Number of pieces produced so far (the monitor's `linesSeen`).
  pub fn pieces(&self) -> u64 {
    self.pieces
  }

  /// Feeds text; `emit` receives each line to throttle, in order.
  pub fn push(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
    let mut rest = text;
    while let Some(newline) = rest.find('\n') {
      let segment = &rest[..newline];
      rest = &rest[newline + 1..];
      self.pieces += 1;
      if self.pending.is_empty() {
        emit_capped(segment, emit);
      } else {
        self.pending.push_str(segment);
        let line = std::mem::take(&mut self.pending);
        self.pending_units = 0;
        emit_capped(&line, emit);
      }
    }
    if !rest.is_empty() {
      self.pending.push_str(rest);
      self.pending_units += utf16_len(rest);
    }
    if self.pending_units > PARTIAL_LINE_CAP_UNITS {
      self.pieces += 1;
      let pending = std::mem::take(&mut self.pending);
      self.pending_units = 0;
      let trimmed = ecma_trim(&pending);
      if !trimmed.is_empty() {
        emit(&cut(trimmed));
      }
    }
  }

  /// [`Self::push`] for a read in which no line can be accepted (the throttle
  /// has no token for the whole read, whose time is fixed): complete plain-ASCII
  /// lines of at most 4096 bytes are only classified and counted in
  /// `dropped_lines` (non-blank after sanitising, i.e. holding a byte above
  /// space), never built; when all of the read's complete lines are such lines
  /// they are counted 64 bytes at a time ([`count_plain_lines`]). Every
  /// other line takes the exact path through `emit`, so the outcome is the same
  /// as [`Self::push`]'s (tested against it).
  pub fn push_counting(
    &mut self,
    text: &str,
    dropped_lines: &mut u64,
    emit: &mut impl FnMut(&str),
  ) {
    let mut start = 0;
    if !self.pending.is_empty() {
      // The first segment completes the pending partial line: exact path.
      match text.find('\n') {
        None => return self.push(text, emit),
        Some(newline) => {
          self.push(&text[..=newline], emit);
          start = newline + 1;
        }
      }
    }
    let mut rest = &text[start..];
    rest = &rest[self.count_plain_lines(rest.as_bytes(), dropped_lines)..];
    while let Some(newline) = rest.find('\n') {
      let line = &rest[..newline];
      rest = &rest[newline + 1..];
      self.pieces += 1;
      if line.len() <= PARTIAL_LINE_CAP_UNITS && line.is_ascii() {
        *dropped_lines += u64::from(line.bytes().any(|b| b > b' '));
      } else {
        emit_capped(line, emit);
      }
    }
    self.push(rest, emit);
  }

  /// True while a partial line waits for its end.
  pub fn has_partial(&self) -> bool {
    !self.pending.is_empty()
  }

  /// For a read no line of which can be accepted: when no partial line waits
  /// and every complete line of `bytes` (up to its last newline) is plain and
  /// short, counts them ([`count_plain_lines`]: pieces, and the non-blank ones
  /// in `dropped_lines`) without building them and returns how many bytes that
  /// consumed; 0 otherwise.
  pub fn count_plain_lines(&mut self, bytes: &[u8], dropped_lines: &mut u64) -> usize {
    if self.has_partial() {
      return 0;
    }
    let Some(last_newline) = bytes.iter().rposition(|&b| b == b'\n') else {
      return 0;
    };
    match count_plain_lines(&bytes[..=last_newline], PARTIAL_LINE_CAP_UNITS) {
      Some(count) => {
        self.pieces += count.lines;
        *dropped_lines += count.non_blank;
        last_newline + 1
      }
      None => 0,
    }
  }

  /// Passes on the trimmed partial line, if any, without the 4096 cut, and
  /// empties it. Idempotent.
  pub fn flush(&mut self, emit: &mut impl FnMut(&str)) {
    if self.pending.is_empty() {
      return;
    }
    let pending = std::mem::take(&mut self.pending);
    self.pending_units = 0;
    let trimmed = ecma_trim(&pending);
    if !trimmed.is_empty() {
      self.pieces += 1;
      emit(trimmed);
    }
  }

  /// Drops the partial line without passing it on (native `reset()`).
  pub fn discard(&mut self) {
    self.pending.clear();
    self.pending_units = 0;
  }
}

/// A complete line: trimmed, skipped when empty, cut to 4096 units + `...`.
fn emit_capped(line: &str, emit: &mut impl FnMut(&str)) {
  let trimmed = ecma_trim(line);
  if trimmed.is_empty() {
    return;
  }
  if trimmed.len() > PARTIAL_LINE_CAP_UNITS && utf16_len(trimmed) > PARTIAL_LINE_CAP_UNITS {
    emit(&cut(trimmed));
  } else {
    emit(trimmed);
  }
}

fn cut(text: &str) -> String {
  let mut out = String::with_capacity(PARTIAL_LINE_CAP_UNITS + 3);
  out.push_str(truncate_utf16(text, PARTIAL_LINE_CAP_UNITS));
  out.push_str("...");
  out
}

#[cfg(test)]
mod tests {
  use super::*;

  fn run(chunks: &[&str]) -> (Vec<String>, LineSplitter) {
    let mut s = LineSplitter::new();
    let mut out = Vec::new();
    for c in chunks {
      s.push(c, &mut |l| out.push(l.to_owned()));
    }
    (out, s)
  }

  #[test]
  fn splits_and_trims() {
    let (out, _) = run(&["line one\nline two\n"]);
    assert_eq!(out, ["line one", "line two"]);
    let (out, _) = run(&["  indented  \n", "a\r\n"]);
    assert_eq!(out, ["indented", "a"]);
  }

  #[test]
  fn blank_lines_are_skipped_but_counted_as_pieces() {
    let (out, s) = run(&["line one\n\n\nline two\n"]);
    assert_eq!(out, ["line one", "line two"]);
    assert_eq!(s.pieces(), 4);
  }

  #[test]
  fn partial_line_completes_later_and_flushes() {
    let (out, mut s) = run(&["partial", " complete\n", "tail"]);
    assert_eq!(out, ["partial complete"]);
    let mut flushed = Vec::new();
    s.flush(&mut |l| flushed.push(l.to_owned()));
    s.flush(&mut |l| flushed.push(l.to_owned()));
    assert_eq!(flushed, ["tail"]);
  }

  #[test]
  fn over_long_partial_is_forced_out_after_the_fifth_chunk() {
    // §3.10: 5 × "A"×1000 without newline → exactly 1 event, "A"×4096 + "...".
    let a = "A".repeat(1000);
    let chunks: Vec<&str> = std::iter::repeat_n(a.as_str(), 5).collect();
    let (out, _) = run(&chunks);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0], format!("{}...", "A".repeat(4096)));
    let chunks: Vec<&str> = std::iter::repeat_n(a.as_str(), 10).collect();
    let (out, _) = run(&chunks);
    assert_eq!(out.len(), 2);
  }

  #[test]
  fn long_complete_line_is_cut() {
    let line = format!("{}\n", "x".repeat(5000));
    let (out, _) = run(&[&line]);
    assert_eq!(out, [format!("{}...", "x".repeat(4096))]);
  }

  #[test]
  fn partial_after_a_newline_is_capped_at_once() {
    // §3.10 N row: "abc\n" + "d"×5000, then "e".
    let first = format!("abc\n{}", "d".repeat(5000));
    let (out, mut s) = run(&[&first]);
    assert_eq!(out, ["abc".to_owned(), format!("{}...", "d".repeat(4096))]);
    let mut later = Vec::new();
    s.push("e", &mut |l| later.push(l.to_owned()));
    s.flush(&mut |l| later.push(l.to_owned()));
    assert_eq!(later, ["e"]);
  }

  #[test]
  fn cut_never_splits_a_surrogate_pair() {
    let line = format!("{}{}\n", "x".repeat(4095), "😀".repeat(10));
    let (out, _) = run(&[&line]);
    assert_eq!(out, [format!("{}...", "x".repeat(4095))]);
  }

  #[test]
  fn discard_drops_the_partial() {
    let (_, mut s) = run(&["pending"]);
    s.discard();
    let mut out = Vec::new();
    s.flush(&mut |l| out.push(l.to_owned()));
    assert!(out.is_empty());
  }
}
