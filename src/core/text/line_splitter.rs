//! The native monitor's line splitter (also the one a background shell's waits
//! read its lines with), one per stream (CONTRACT.md §2.10
//! "Line splitter", the TypeScript `processLines`, with the partial-line cap
//! checked after every split so pending text stays bounded, §4 item 3). One
//! physical line gives at most one event: once a partial line goes over the
//! cap, its first 4096 units are passed on and the rest of that line, up to
//! and including its next `\n`, is discarded.

use super::fast::{count_lines, LineCount, Source};
use super::length::{truncate_utf16, utf16_len};
use super::whitespace::ecma_trim;

/// `PARTIAL_LINE_BUFFER_CAP`: longest line passed on, in UTF-16 units.
pub const PARTIAL_LINE_CAP_UNITS: usize = 4096;

/// Splits decoded, ANSI-stripped text into trimmed, non-empty, capped lines.
#[derive(Debug, Default)]
pub struct LineSplitter {
  pending: String,
  pending_units: usize,
  /// True from the forced cut of an over-long partial line until that line's
  /// `\n`: the text in between is discarded (counted in `truncated_bytes`).
  discarding: bool,
  /// Pieces produced so far: complete lines (blank ones included), forced cuts
  /// of an over-long partial line, and a flushed remainder. The discarded rest
  /// of a cut line is not a piece.
  pieces: u64,
  /// The monitor's `truncatedBytes`: for every line cut at 4096 units, the
  /// UTF-8 bytes of that line's text (decoded and ANSI-stripped, the `\n` not
  /// included) after the cut. The cut ends the first 4096 units of the trimmed
  /// line (of the trimmed partial line when the line went over the cap before
  /// its `\n` arrived; a whitespace-only one is cut at its end). So leading
  /// whitespace is never counted, and everything after the kept text is: its
  /// tail when the line arrived whole, or the rest of the held partial plus
  /// everything discarded up to the line's `\n`. For plain UTF-8 without
  /// escape sequences these are the raw bytes skipped: §3.10's
  /// `"abc\n"+"d"×5000`, `"e"`, `"\nf\n"` gives 904 + 1 = 905.
  truncated_bytes: u64,
}

impl LineSplitter {
  pub fn new() -> Self {
    Self::default()
  }

  /// Number of pieces produced so far (the monitor's `linesSeen`).
  pub fn pieces(&self) -> u64 {
    self.pieces
  }

  /// Bytes of over-long lines after their cut (the monitor's `truncatedBytes`).
  pub fn truncated_bytes(&self) -> u64 {
    self.truncated_bytes
  }

  /// Feeds the text of one read; `emit` receives each line to throttle, in
  /// order. The same as [`Self::push_text`] with the text in any pieces, then
  /// [`Self::end_read`].
  pub fn push(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
    self.push_text(text, emit);
    self.end_read(emit);
  }

  /// Feeds text, a piece of one read: passes on the lines it completes and
  /// keeps the rest as the partial line. Pieces of a read may be cut anywhere:
  /// the partial line is only capped at the end of the read.
  pub fn push_text(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
    let mut rest = self.skip_discarded(text);
    while let Some(newline) = rest.find('\n') {
      let segment = &rest[..newline];
      rest = &rest[newline + 1..];
      self.pieces += 1;
      if self.pending.is_empty() {
        self.emit_line(segment, emit);
      } else {
        self.pending.push_str(segment);
        let line = std::mem::take(&mut self.pending);
        self.pending_units = 0;
        self.emit_line(&line, emit);
      }
    }
    if !rest.is_empty() {
      self.pending.push_str(rest);
      self.pending_units += utf16_len(rest);
    }
  }

  /// The end of a read (§2.10 step 2): a partial line now over the cap is cut.
  pub fn end_read(&mut self, emit: &mut impl FnMut(&str)) {
    if self.pending_units > PARTIAL_LINE_CAP_UNITS {
      self.cut_partial(emit);
    }
  }

  /// While discarding: counts and skips `text` up to and including the `\n`
  /// that ends the discarded line, and returns what follows it.
  fn skip_discarded<'t>(&mut self, text: &'t str) -> &'t str {
    if !self.discarding {
      return text;
    }
    match text.find('\n') {
      None => {
        self.truncated_bytes += text.len() as u64;
        ""
      }
      Some(newline) => {
        self.truncated_bytes += newline as u64;
        self.discarding = false;
        &text[newline + 1..]
      }
    }
  }

  /// §2.10 step 2: the partial line is over the cap. Passes on its trimmed
  /// first 4096 units + `...` (if not blank), empties it and discards the rest
  /// of the line.
  fn cut_partial(&mut self, emit: &mut impl FnMut(&str)) {
    let pending = std::mem::take(&mut self.pending);
    self.pending_units = 0;
    self.cut(&pending, emit);
  }

  /// Cuts `partial`, a partial line over the cap, and discards the rest of
  /// its physical line.
  fn cut(&mut self, partial: &str, emit: &mut impl FnMut(&str)) {
    self.pieces += 1;
    let trimmed = ecma_trim(partial);
    let kept_end = if trimmed.is_empty() {
      partial.len()
    } else {
      let kept = truncate_utf16(trimmed, PARTIAL_LINE_CAP_UNITS);
      emit(&with_marker(kept));
      offset_in(partial, kept) + kept.len()
    };
    self.truncated_bytes += (partial.len() - kept_end) as u64;
    self.discarding = true;
  }

  /// [`Self::push`] of the last text of a read when it starts a line and ends
  /// it not: without copying it into the partial line when it is over the
  /// cap (the rest of a long line, or a line with no newline at all).
  pub fn push_last_partial(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
    debug_assert!(!self.mid_line() && !text.contains('\n'));
    if text.len() > PARTIAL_LINE_CAP_UNITS && utf16_len(text) > PARTIAL_LINE_CAP_UNITS {
      self.cut(text, emit);
    } else {
      self.push(text, emit);
    }
  }

  /// [`Self::push_text`] for a read in which no line can be accepted (the
  /// throttle has no token for the whole read, whose time is fixed): lines
  /// that [`count_lines`] can count are counted (non-blank ones in
  /// `dropped_lines`), never built; every other line takes the exact path
  /// through `emit`, so the outcome is the same as [`Self::push_text`]'s
  /// (tested against it).
  pub fn push_text_counting(
    &mut self,
    text: &str,
    dropped_lines: &mut u64,
    emit: &mut impl FnMut(&str),
  ) {
    let mut rest = text;
    if self.mid_line() {
      // The first segment completes (or discards) the current line: exact path.
      match rest.find('\n') {
        None => return self.push_text(rest, emit),
        Some(newline) => {
          self.push_text(&rest[..=newline], emit);
          rest = &rest[newline + 1..];
        }
      }
    }
    loop {
      let (count, consumed) =
        count_lines(rest.as_bytes(), PARTIAL_LINE_CAP_UNITS, Source::Stripped);
      self.add_counted(count, dropped_lines);
      rest = &rest[consumed..];
      let Some(newline) = rest.find('\n') else {
        break;
      };
      // A line the counter leaves to the exact path.
      self.pieces += 1;
      self.emit_line(&rest[..newline], emit);
      rest = &rest[newline + 1..];
    }
    self.push_text(rest, emit);
  }

  /// Lines counted without building them ([`count_lines`]), at a line start:
  /// pieces, truncated bytes, and non-blank ones as dropped (no line of the
  /// read can be accepted).
  pub fn add_counted(&mut self, count: LineCount, dropped_lines: &mut u64) {
    debug_assert!(!self.mid_line() || count == LineCount::default());
    self.pieces += count.lines;
    self.truncated_bytes += count.truncated_bytes;
    *dropped_lines += count.non_blank;
  }

  /// True from the cut of an over-long partial line until that line's `\n`.
  pub fn is_discarding(&self) -> bool {
    self.discarding
  }

  /// Discarded text found without building it: `text_bytes` bytes of the
  /// over-long line's rest, then, if `line_ended`, its `\n`.
  pub fn add_discarded(&mut self, text_bytes: u64, line_ended: bool) {
    debug_assert!(self.discarding);
    self.truncated_bytes += text_bytes;
    self.discarding = !line_ended;
  }

  /// True while a line has begun and not ended: a partial line waits for its
  /// end, or the rest of an over-long line is being discarded.
  pub fn mid_line(&self) -> bool {
    !self.pending.is_empty() || self.discarding
  }

  /// Passes on the trimmed partial line, if any, without the 4096 cut, and
  /// empties it; ends a discard (the stream is over). Idempotent.
  pub fn flush(&mut self, emit: &mut impl FnMut(&str)) {
    self.discarding = false;
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

  /// A terminal redrew the current line (`\r`, then a new frame): the
  /// partial line so far is forgotten, not passed on (see `text::frames`).
  /// The rest of a line already cut at the cap stays discarded.
  pub fn reset_line(&mut self) {
    self.pending.clear();
    self.pending_units = 0;
  }

  /// Drops the partial line without passing it on (native `reset()`).
  pub fn discard(&mut self) {
    self.pending.clear();
    self.pending_units = 0;
    self.discarding = false;
  }

  /// A complete line: trimmed, skipped when empty, cut to 4096 units + `...`
  /// (what follows the cut is counted in `truncated_bytes`).
  fn emit_line(&mut self, line: &str, emit: &mut impl FnMut(&str)) {
    let trimmed = ecma_trim(line);
    if trimmed.is_empty() {
      return;
    }
    if trimmed.len() > PARTIAL_LINE_CAP_UNITS && utf16_len(trimmed) > PARTIAL_LINE_CAP_UNITS {
      let kept = truncate_utf16(trimmed, PARTIAL_LINE_CAP_UNITS);
      self.truncated_bytes += (line.len() - offset_in(line, kept) - kept.len()) as u64;
      emit(&with_marker(kept));
    } else {
      emit(trimmed);
    }
  }
}

/// Where `part`, a subslice of `whole`, starts in it.
fn offset_in(whole: &str, part: &str) -> usize {
  part.as_ptr() as usize - whole.as_ptr() as usize
}

fn with_marker(kept: &str) -> String {
  let mut out = String::with_capacity(kept.len() + 3);
  out.push_str(kept);
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
    // §3.10: 5 × "A"×1000 without newline → exactly 1 event, "A"×4096 + "...";
    // 5 more chunks of the same line → no 2nd event; "\nnext\n" → `next`.
    let a = "A".repeat(1000);
    let chunks: Vec<&str> = std::iter::repeat_n(a.as_str(), 5).collect();
    let (out, _) = run(&chunks);
    assert_eq!(out, [format!("{}...", "A".repeat(4096))]);
    let mut chunks: Vec<&str> = std::iter::repeat_n(a.as_str(), 10).collect();
    chunks.push("\nnext\n");
    let (out, s) = run(&chunks);
    assert_eq!(out, [format!("{}...", "A".repeat(4096)), "next".to_owned()]);
    assert_eq!(s.truncated_bytes(), 10_000 - 4096);
    assert_eq!(s.pieces(), 2);
  }

  #[test]
  fn one_physical_line_gives_at_most_one_event_however_long() {
    // 100 MB of one line in 64 KiB reads: one event, the rest counted.
    let read = "a".repeat(64 * 1024);
    let mut s = LineSplitter::new();
    let mut out = Vec::new();
    let reads = 100_000_000 / read.len();
    for _ in 0..reads {
      s.push(&read, &mut |l| out.push(l.to_owned()));
      assert!(s.pending.len() <= PARTIAL_LINE_CAP_UNITS);
    }
    s.push("\ndone\n", &mut |l| out.push(l.to_owned()));
    // (Compared without printing megabytes when it fails.)
    assert_eq!(out.len(), 2, "events");
    assert!(out[0] == format!("{}...", "a".repeat(4096)), "the cut line");
    assert_eq!(out[1], "done");
    assert_eq!(s.truncated_bytes(), (reads * read.len() - 4096) as u64);
  }

  #[test]
  fn long_complete_line_is_cut() {
    let line = format!("{}\n", "x".repeat(5000));
    let (out, s) = run(&[&line]);
    assert_eq!(out, [format!("{}...", "x".repeat(4096))]);
    // The rest of a complete over-long line is counted too, so the count does
    // not depend on how the line was split into reads.
    assert_eq!(s.truncated_bytes(), 904);
    let (_, split) = run(&[&line[..4097], &line[4097..]]);
    assert_eq!(split.truncated_bytes(), 904);
  }

  #[test]
  fn partial_after_a_newline_is_capped_at_once_and_its_rest_discarded() {
    // §3.10 N row: "abc\n" + "d"×5000, then "e", then "\nf\n": `abc` and the
    // cut `d` line on the first chunk; `e` is discarded; truncatedBytes 905.
    let first = format!("abc\n{}", "d".repeat(5000));
    let (out, mut s) = run(&[&first]);
    assert_eq!(out, ["abc".to_owned(), format!("{}...", "d".repeat(4096))]);
    assert_eq!(s.truncated_bytes(), 904);
    let mut later = Vec::new();
    s.push("e", &mut |l| later.push(l.to_owned()));
    assert!(later.is_empty());
    s.push("\nf\n", &mut |l| later.push(l.to_owned()));
    s.flush(&mut |l| later.push(l.to_owned()));
    assert_eq!(later, ["f"]);
    assert_eq!(s.truncated_bytes(), 905);
    assert_eq!(s.pieces(), 3);
  }

  #[test]
  fn the_cut_counts_what_follows_the_trimmed_prefix() {
    // Leading whitespace is trimmed like on any line and not counted; what
    // follows the 4096 kept units is, trailing whitespace and multibyte text
    // included (bytes of the decoded text: "é" is 2).
    let line = format!("   {}{}  \n", "x".repeat(4096), "é".repeat(10));
    let (out, s) = run(&[&line]);
    assert_eq!(out, [format!("{}...", "x".repeat(4096))]);
    assert_eq!(s.truncated_bytes(), 22);
    // A whitespace-only over-long partial emits nothing; its rest is discarded.
    let blank = " ".repeat(5000);
    let (out, s) = run(&[&blank, "more", "\nok\n"]);
    assert_eq!(out, ["ok"]);
    assert_eq!(s.truncated_bytes(), 4);
  }

  #[test]
  fn flush_and_discard_end_the_discard() {
    let long = "z".repeat(5000);
    let (_, mut s) = run(&[&long, "rest"]);
    let mut out = Vec::new();
    s.flush(&mut |l| out.push(l.to_owned()));
    assert!(out.is_empty());
    s.push("next\n", &mut |l| out.push(l.to_owned()));
    assert_eq!(out, ["next"]);
    let (_, mut s) = run(&[&long]);
    s.discard();
    s.push("again\n", &mut |l| out.push(l.to_owned()));
    assert_eq!(out, ["next", "again"]);
  }

  #[test]
  fn counting_path_discards_like_the_exact_path() {
    let long = "q".repeat(5000);
    let chunks = [long.as_str(), "more", "tail\nab\n", "cd\n"];
    let (exact, exact_s) = run(&chunks);
    let mut s = LineSplitter::new();
    let mut out = Vec::new();
    let mut dropped = 0;
    for c in chunks {
      let mut emit = |l: &str| out.push(l.to_owned());
      s.push_text_counting(c, &mut dropped, &mut emit);
      s.end_read(&mut emit);
    }
    // The counting path only counts short plain lines (here `ab`, `cd`).
    assert_eq!(out, exact[..1]);
    assert_eq!(dropped, 2);
    assert_eq!(
      (s.pieces(), s.truncated_bytes()),
      (exact_s.pieces(), exact_s.truncated_bytes())
    );
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
