//! `LineBuffer`, the line splitter for callers that feed their own chunks (CONTRACT.md §2.18,
//! §3.18, §4 item 3).

use super::length::truncate_code_points;

/// The default `maxLineCodePoints`.
pub const DEFAULT_LINE_BUFFER_MAX_CODE_POINTS: usize = 65536;

/// Appended to a line cut at the cap.
pub const LINE_TRUNCATION_MARKER: &str = "[…truncated]";

/// Splits pushed text into lines (CONTRACT.md §2.18): on `\n`, removing one `\r` right before
/// it (also when the CRLF is split across pushes) and keeping every other `\r` and empty lines.
/// A line, complete or partial, longer than the cap in code points is emitted as its first
/// `max_line_code_points` code points plus [`LINE_TRUNCATION_MARKER`], and the rest of that line
/// is discarded up to the next `\n`. Work per push is proportional to the chunk: the pending
/// text's code points are counted as it arrives, never rescanned.
#[derive(Debug)]
pub struct LineBuffer {
  max_line_code_points: usize,
  /// The partial line: at most `max_line_code_points` code points.
  pending: String,
  /// Code points in `pending`.
  pending_code_points: usize,
  /// True while the rest of an over-long line is being dropped.
  discarding: bool,
}

impl LineBuffer {
  /// A buffer with the given cap. The JavaScript constructor rejects a cap below 1 with a
  /// `RangeError`; here such a cap is raised to 1.
  pub fn new(max_line_code_points: usize) -> Self {
    Self {
      max_line_code_points: max_line_code_points.max(1),
      pending: String::new(),
      pending_code_points: 0,
      discarding: false,
    }
  }

  /// The lines completed by `chunk`.
  pub fn push(&mut self, chunk: &str) -> Vec<String> {
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
  /// `\r`-only partial. While discarding, returns nothing and ends the discard.
  pub fn flush(&mut self) -> Vec<String> {
    let discarding = std::mem::replace(&mut self.discarding, false);
    let mut line = self.take_pending();
    if discarding {
      return Vec::new();
    }
    if line.ends_with('\r') {
      line.pop();
    }
    if line.is_empty() {
      Vec::new()
    } else {
      vec![line]
    }
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
      line.push_str(LINE_TRUNCATION_MARKER);
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
    line.push_str(LINE_TRUNCATION_MARKER);
    self.discarding = true;
    Some(line)
  }

  fn take_pending(&mut self) -> String {
    self.pending_code_points = 0;
    std::mem::take(&mut self.pending)
  }
}

impl Default for LineBuffer {
  fn default() -> Self {
    Self::new(DEFAULT_LINE_BUFFER_MAX_CODE_POINTS)
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::core::test_vectors::{cases, describe};
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
    match case["input"]["options"]["maxLineCodePoints"].as_u64() {
      Some(cap) => LineBuffer::new(cap as usize),
      None => LineBuffer::default(),
    }
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
