//! `LineBuffer`, the line splitter for callers that feed their own chunks (CONTRACT.md §2.18,
//! §3.18, §4 item 3).

use super::length::truncate_code_points;

/// The default `maxLineCodePoints`.
pub const DEFAULT_LINE_BUFFER_MAX_CODE_POINTS: usize = 65536;

/// Appended to a line cut at the cap, unless the caller chose another `truncationMarker`.
pub const LINE_TRUNCATION_MARKER: &str = "[…truncated]";

/// The replacement for a lone surrogate, as `TextEncoder` and Node's UTF-8 conversion give.
const REPLACEMENT: char = char::REPLACEMENT_CHARACTER;

/// Splits pushed text into lines (CONTRACT.md §2.18): on `\n`, removing one `\r` right before
/// it (also when the CRLF is split across pushes) and keeping every other `\r` and empty lines.
/// A line, complete or partial, longer than the cap in code points is emitted as its first
/// `max_line_code_points` code points plus the truncation marker (by default
/// [`LINE_TRUNCATION_MARKER`]), and the rest of that line is discarded up to the next `\n`. Work
/// per push is proportional to the chunk: the pending text's code points are counted as it
/// arrives, never rescanned.
///
/// Chunks may also arrive as UTF-16 ([`Self::push_utf16`], what JavaScript strings are): a
/// surrogate pair split across two pushes stays one character, because a high surrogate that
/// ends a chunk is held until the next one. A surrogate that never gets its other half becomes
/// U+FFFD.
#[derive(Debug)]
pub struct LineBuffer {
  max_line_code_points: usize,
  /// The partial line: at most `max_line_code_points` code points.
  pending: String,
  /// Code points in `pending`.
  pending_code_points: usize,
  /// True while the rest of an over-long line is being dropped.
  discarding: bool,
  /// Appended to a truncated line; any string, the empty one included.
  truncation_marker: String,
  /// A high surrogate that ended the last UTF-16 chunk, waiting for its low half.
  held_high_surrogate: Option<u16>,
}

impl LineBuffer {
  /// A buffer with the given cap. The JavaScript constructor rejects a cap below 1 with a
  /// `RangeError`; here such a cap is raised to 1.
  pub fn new(max_line_code_points: usize) -> Self {
    Self::with_truncation_marker(max_line_code_points, LINE_TRUNCATION_MARKER)
  }

  /// A buffer with the given cap and truncation marker (Gemini's `truncationMarker` option:
  /// any string, the empty one included).
  pub fn with_truncation_marker(max_line_code_points: usize, marker: impl Into<String>) -> Self {
    Self {
      max_line_code_points: max_line_code_points.max(1),
      pending: String::new(),
      pending_code_points: 0,
      discarding: false,
      truncation_marker: marker.into(),
      held_high_surrogate: None,
    }
  }

  /// The lines completed by `chunk`.
  pub fn push(&mut self, chunk: &str) -> Vec<String> {
    let mut lines = self.release_held_surrogate();
    lines.extend(self.push_text(chunk));
    lines
  }

  /// The lines completed by `chunk`, given as UTF-16 code units (a JavaScript string). A high
  /// surrogate at the end of the chunk is held for the next push, so a pair split across two
  /// pushes stays one character; lone surrogates become U+FFFD.
  pub fn push_utf16(&mut self, chunk: &[u16]) -> Vec<String> {
    let mut units = chunk;
    let mut text = String::with_capacity(units.len());
    if let Some(high) = self.held_high_surrogate.take() {
      match units.split_first() {
        None => {
          self.held_high_surrogate = Some(high);
          return Vec::new();
        }
        Some((&low, rest)) if is_low_surrogate(low) => {
          text.extend(char::decode_utf16([high, low]).map(|c| c.unwrap_or(REPLACEMENT)));
          units = rest;
        }
        Some(_) => text.push(REPLACEMENT),
      }
    }
    if let Some((&last, rest)) = units.split_last() {
      if is_high_surrogate(last) {
        self.held_high_surrogate = Some(last);
        units = rest;
      }
    }
    text.extend(char::decode_utf16(units.iter().copied()).map(|c| c.unwrap_or(REPLACEMENT)));
    self.push_text(&text)
  }

  /// A held high surrogate whose low half did not come: it becomes U+FFFD in the line.
  fn release_held_surrogate(&mut self) -> Vec<String> {
    match self.held_high_surrogate.take() {
      Some(_) => self.push_text(REPLACEMENT.encode_utf8(&mut [0; 4])),
      None => Vec::new(),
    }
  }

  fn push_text(&mut self, chunk: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest = chunk;
    while !rest.is_empty() {
      let newline = rest.find('\n');
      if self.discarding {
        let Some(newline) = newline else {
          break;
        };
        self.discarding = false;
        rest = &rest[newline + 1..];
        continue;
      }
      match newline {
        Some(newline) => {
          lines.push(self.complete_line(&rest[..newline]));
          rest = &rest[newline + 1..];
        }
        None => {
          lines.extend(self.extend_partial(rest));
          break;
        }
      }
    }
    lines
  }

  /// The trailing partial line, once, without a trailing `\r`; nothing for an empty or
  /// `\r`-only partial. While discarding, returns nothing and ends the discard. A held high
  /// surrogate first joins the partial line as U+FFFD (which can push it over the cap, and
  /// then the truncated line is what this returns).
  pub fn flush(&mut self) -> Vec<String> {
    let mut lines = self.release_held_surrogate();
    let discarding = std::mem::replace(&mut self.discarding, false);
    let mut line = self.take_pending();
    if discarding {
      return lines;
    }
    if line.ends_with('\r') {
      line.pop();
    }
    if !line.is_empty() {
      lines.push(line);
    }
    lines
  }

  /// Ends the pending line with `segment` (the text before a `\n`), drops one trailing `\r`
  /// and applies the cap.
  fn complete_line(&mut self, segment: &str) -> String {
    let pending_code_points = self.pending_code_points;
    let mut code_points = pending_code_points + segment.chars().count();
    let mut line = self.take_pending();
    let pending_len = line.len();
    line.push_str(segment);
    if line.ends_with('\r') {
      line.pop();
      code_points -= 1;
    }
    if code_points > self.max_line_code_points {
      let kept_of_segment = self.max_line_code_points - pending_code_points;
      line.truncate(pending_len + truncate_code_points(segment, kept_of_segment).len());
      line.push_str(&self.truncation_marker);
    }
    line
  }

  /// Appends text without a `\n` to the partial line; returns the truncated line when the
  /// partial goes over the cap, and starts discarding.
  fn extend_partial(&mut self, text: &str) -> Option<String> {
    let code_points = self.pending_code_points + text.chars().count();
    if code_points <= self.max_line_code_points {
      self.pending.push_str(text);
      self.pending_code_points = code_points;
      return None;
    }
    let kept_of_text = self.max_line_code_points - self.pending_code_points;
    let mut line = self.take_pending();
    line.push_str(truncate_code_points(text, kept_of_text));
    line.push_str(&self.truncation_marker);
    self.discarding = true;
    Some(line)
  }

  fn take_pending(&mut self) -> String {
    self.pending_code_points = 0;
    std::mem::take(&mut self.pending)
  }
}

fn is_high_surrogate(unit: u16) -> bool {
  (0xD800..=0xDBFF).contains(&unit)
}

fn is_low_surrogate(unit: u16) -> bool {
  (0xDC00..=0xDFFF).contains(&unit)
}

impl Default for LineBuffer {
  fn default() -> Self {
    Self::new(DEFAULT_LINE_BUFFER_MAX_CODE_POINTS)
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::test_vectors::{cases, describe};
  use serde_json::Value;

  /// One call of a vector: a push of the string, or a flush.
  enum Call<'a> {
    Push(&'a str),
    Flush,
  }

  fn calls(case: &Value) -> Vec<Call<'_>> {
    case["input"]["chunks"]
      .as_array()
      .expect("chunks list")
      .iter()
      .map(|chunk| match chunk.as_str() {
        Some(text) => Call::Push(text),
        None => {
          assert_eq!(chunk["flush"], Value::Bool(true), "{}", describe(case));
          Call::Flush
        }
      })
      .collect()
  }

  fn buffer_for(case: &Value) -> LineBuffer {
    let options = &case["input"]["options"];
    let cap = options["maxLineCodePoints"]
      .as_u64()
      .map_or(DEFAULT_LINE_BUFFER_MAX_CODE_POINTS, |cap| cap as usize);
    let marker = options["truncationMarker"]
      .as_str()
      .unwrap_or(LINE_TRUNCATION_MARKER);
    LineBuffer::with_truncation_marker(cap, marker)
  }

  fn string_list(value: &Value) -> Vec<String> {
    value
      .as_array()
      .expect("list of strings")
      .iter()
      .map(|line| line.as_str().expect("string line").to_owned())
      .collect()
  }

  #[test]
  fn line_buffer_vectors() {
    for case in cases("LineBuffer") {
      let mut buffer = buffer_for(&case);
      let results: Vec<Vec<String>> = calls(&case)
        .into_iter()
        .map(|call| match call {
          Call::Push(text) => buffer.push(text),
          Call::Flush => buffer.flush(),
        })
        .collect();
      let expected: Vec<Vec<String>> = case["expected"]
        .as_array()
        .expect("expected list")
        .iter()
        .map(string_list)
        .collect();
      assert_eq!(results, expected, "{}", describe(&case));
    }
  }

  /// Feeds `pieces` then flushes; returns every line.
  fn lines_of(pieces: &[&str]) -> Vec<String> {
    let mut buffer = LineBuffer::default();
    let mut lines: Vec<String> = pieces.iter().flat_map(|piece| buffer.push(piece)).collect();
    lines.extend(buffer.flush());
    lines
  }

  /// For each vector without a cap, its text split at every char offset (and char by char)
  /// gives the lines of the unsplit text.
  #[test]
  fn any_split_gives_the_same_lines() {
    for case in cases("LineBuffer") {
      if !case["input"]["options"]["maxLineCodePoints"].is_null() {
        continue;
      }
      let text: String = calls(&case)
        .into_iter()
        .filter_map(|call| match call {
          Call::Push(text) => Some(text),
          Call::Flush => None,
        })
        .collect();
      let expected = lines_of(&[&text]);
      for (cut, _) in text.char_indices().skip(1) {
        let (head, tail) = text.split_at(cut);
        assert_eq!(
          lines_of(&[head, tail]),
          expected,
          "{} cut at {cut}",
          describe(&case)
        );
      }
      let chars: Vec<String> = text.chars().map(String::from).collect();
      let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
      assert_eq!(
        lines_of(&pieces),
        expected,
        "{} char by char",
        describe(&case)
      );
    }
  }

  #[test]
  fn cap_counts_code_points_across_pushes() {
    let mut buffer = LineBuffer::new(3);
    assert!(buffer.push("😀").is_empty());
    assert!(buffer.push("é").is_empty());
    assert_eq!(buffer.push("ab\n"), ["😀éa[…truncated]"]);
    assert!(buffer.push("abc").is_empty());
    assert_eq!(buffer.push("\r\n"), ["abc"]);
    assert!(buffer.push("abc").is_empty());
    assert_eq!(buffer.push("\r"), ["abc[…truncated]"]);
    assert_eq!(buffer.push("x\ny\n"), ["y"]);
    assert!(buffer.flush().is_empty());
  }

  #[test]
  fn the_truncation_marker_is_the_callers() {
    let mut buffer = LineBuffer::with_truncation_marker(4, "[T]");
    assert_eq!(buffer.push("abcdef\n"), ["abcd[T]"]);
    assert_eq!(buffer.push("ghijkl"), ["ghij[T]"]);
    assert_eq!(buffer.push("mn\nok\n"), ["ok"]);
    // The empty marker is allowed (Gemini takes any string): the line is only cut.
    let mut buffer = LineBuffer::with_truncation_marker(2, "");
    assert_eq!(buffer.push("🙂🐱🙂\n"), ["🙂🐱"]);
  }

  fn utf16(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
  }

  #[test]
  fn a_surrogate_pair_split_across_pushes_stays_one_character() {
    let mut buffer = LineBuffer::default();
    assert!(buffer.push_utf16(&[0xD83D]).is_empty());
    assert_eq!(buffer.push_utf16(&[0xDE42, u16::from(b'\n')]), ["🙂"]);
    // Held across an empty push too, and counted as one code point by the cap.
    let mut buffer = LineBuffer::new(1);
    assert!(buffer.push_utf16(&[0xD83D]).is_empty());
    assert!(buffer.push_utf16(&[]).is_empty());
    assert!(buffer.push_utf16(&[0xDE42]).is_empty());
    assert_eq!(buffer.push_utf16(&utf16("\n")), ["🙂"]);
  }

  #[test]
  fn a_surrogate_never_completed_becomes_a_replacement_character() {
    let mut buffer = LineBuffer::default();
    // A held high surrogate followed by something else.
    assert!(buffer.push_utf16(&[u16::from(b'a'), 0xD83D]).is_empty());
    assert_eq!(buffer.push_utf16(&utf16("b\n")), ["a\u{FFFD}b"]);
    // Followed by a UTF-8 push, or by the end.
    assert!(buffer.push_utf16(&[0xD83D]).is_empty());
    assert_eq!(buffer.push("c\n"), ["\u{FFFD}c"]);
    assert!(buffer.push_utf16(&[u16::from(b'd'), 0xD83D]).is_empty());
    assert_eq!(buffer.flush(), ["d\u{FFFD}"]);
    assert!(buffer.flush().is_empty());
    // Lone surrogates inside a chunk, and a low one at its start.
    assert_eq!(
      buffer.push_utf16(&[0xDE42, u16::from(b'x'), 0xD83D, u16::from(b'y'), 10]),
      ["\u{FFFD}x\u{FFFD}y"]
    );
    // At flush the replacement can push a held partial over the cap.
    let mut buffer = LineBuffer::new(2);
    assert!(buffer
      .push_utf16(&[u16::from(b'a'), u16::from(b'b'), 0xD83D])
      .is_empty());
    assert_eq!(buffer.flush(), ["ab[…truncated]"]);
  }

  /// Every vector's text, pushed as UTF-16 and split at every unit (inside surrogate pairs
  /// too), gives the lines of the unsplit text.
  #[test]
  fn any_utf16_split_gives_the_same_lines() {
    for case in cases("LineBuffer") {
      let text: String = calls(&case)
        .into_iter()
        .filter_map(|call| match call {
          Call::Push(text) => Some(text),
          Call::Flush => None,
        })
        .collect();
      let units = utf16(&text);
      let mut whole = buffer_for(&case);
      let mut expected = whole.push(&text);
      expected.extend(whole.flush());
      for cut in 0..=units.len() {
        let mut buffer = buffer_for(&case);
        let mut lines = buffer.push_utf16(&units[..cut]);
        lines.extend(buffer.push_utf16(&units[cut..]));
        lines.extend(buffer.flush());
        assert_eq!(lines, expected, "{} cut at unit {cut}", describe(&case));
      }
    }
  }

  #[test]
  fn a_zero_cap_is_raised_to_one() {
    let mut buffer = LineBuffer::new(0);
    assert_eq!(buffer.push("ab\n"), ["a[…truncated]"]);
  }

  #[test]
  fn one_char_pushes_stay_linear() {
    let mut buffer = LineBuffer::default();
    for _ in 0..DEFAULT_LINE_BUFFER_MAX_CODE_POINTS {
      assert!(buffer.push("é").is_empty());
    }
    let lines = buffer.push("é");
    assert_eq!(lines.len(), 1);
    assert!(lines[0].ends_with(LINE_TRUNCATION_MARKER));
    assert_eq!(
      lines[0].chars().count(),
      DEFAULT_LINE_BUFFER_MAX_CODE_POINTS + LINE_TRUNCATION_MARKER.chars().count()
    );
  }
}
