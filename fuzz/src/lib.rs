//! Helpers shared by the fuzz targets: how a fuzz input is cut into reads, the reference
//! definitions the streaming code is compared with, and the preconditions of the streaming
//! properties (CONTRACT.md §3.17, §4 items 1–3).
//!
//! Every streaming target reads its input as `[h][n × u16 LE chunk length][payload]`, where the
//! low 5 bits of `h` give `n` (at most 16) and its high 3 bits a repeat count (`REPEATS`): the
//! payload, repeated ([`repeat_payload`]), is fed as reads whose lengths cycle through the listed ones (a 0 is an
//! empty read). `n = 0` feeds it in one read. The repeat lets a small input reach the 4096
//! bounds. [`Cuts::parse`] never fails: any byte string is an input, so libFuzzer can mutate
//! the header and the payload alike.

use std::borrow::Cow;

/// At most this many chunk lengths in a header.
pub const MAX_CHUNK_LENGTHS: usize = 16;
/// How often the payload is repeated (see [`repeat_payload`]), by the high 3 bits of the
/// header byte.
pub const REPEATS: [usize; 8] = [1, 1, 1, 1, 1, 2, 16, 256];
/// A repeated payload is cut at this many bytes: three times the 4096 bounds, and short
/// enough to keep executions fast.
pub const MAX_REPEATED_LEN: usize = 12 * 1024;

/// At most this many reads per input: the rest of the payload becomes one last read. The
/// streaming stripper rescans what it holds (up to 4096 chars) on every read, so this keeps
/// one execution fast on hostile inputs.
pub const MAX_READS: usize = 256;

/// The read lengths chosen by the header of a fuzz input, and the payload they cut.
#[derive(Debug, Clone)]
pub struct Cuts<'a> {
  pub lengths: Vec<usize>,
  pub payload: &'a [u8],
  pub repeat: usize,
}

impl<'a> Cuts<'a> {
  /// Splits `data` into the header's chunk lengths and the payload.
  pub fn parse(data: &'a [u8]) -> Self {
    let Some((&header, mut rest)) = data.split_first() else {
      return Cuts {
        lengths: Vec::new(),
        payload: data,
        repeat: 1,
      };
    };
    let mut lengths = Vec::new();
    for _ in 0..usize::from(header & 0x1f).min(MAX_CHUNK_LENGTHS) {
      let [lo, hi, tail @ ..] = rest else { break };
      lengths.push(usize::from(u16::from_le_bytes([*lo, *hi])));
      rest = tail;
    }
    Cuts {
      lengths,
      payload: rest,
      repeat: REPEATS[usize::from(header >> 5)],
    }
  }

  /// The payload repeated: see [`repeat_payload`].
  pub fn bytes(&self) -> Cow<'a, [u8]> {
    repeat_payload(self.payload, self.repeat, MAX_REPEATED_LEN)
  }

  /// The read boundaries over a text of `len` bytes: `(start, end)` pairs covering it in order,
  /// empty reads included. [`MAX_READS`] bounds their number.
  pub fn ranges(&self, len: usize) -> Vec<(usize, usize)> {
    cycle_ranges(&self.lengths, len)
  }
}

/// All but the last byte of `payload` repeated `repeat` times and cut at `max_len` bytes, then
/// the last byte once: `ESC ] x` + BEL gives one OSC terminated after any number of chars.
/// `repeat` 1 gives the payload itself.
pub fn repeat_payload(payload: &[u8], repeat: usize, max_len: usize) -> Cow<'_, [u8]> {
  let Some((&last, body)) = payload.split_last() else {
    return Cow::Borrowed(payload);
  };
  if repeat <= 1 || body.is_empty() {
    return Cow::Borrowed(payload);
  }
  let len = (body.len() * repeat).min(max_len).max(body.len());
  let mut out: Vec<u8> = body.iter().copied().cycle().take(len).collect();
  out.push(last);
  Cow::Owned(out)
}

/// `(start, end)` reads over `len` bytes with lengths cycling through `lengths`.
pub fn cycle_ranges(lengths: &[usize], len: usize) -> Vec<(usize, usize)> {
  let mut out = Vec::new();
  let mut pos = 0;
  if lengths.iter().all(|&l| l == 0) {
    // Only empty reads (or none): they, then everything at once.
    out.extend(lengths.iter().map(|_| (0, 0)));
    out.push((0, len));
    return out;
  }
  for &length in lengths.iter().cycle() {
    if pos >= len || out.len() + 1 >= MAX_READS {
      break;
    }
    let end = (pos + length).min(len);
    out.push((pos, end));
    pos = end;
  }
  if pos < len || out.is_empty() {
    out.push((pos, len));
  }
  out
}

/// The same reads moved onto `text`'s char boundaries (each end rounded down), so a `&str` can
/// be cut where the byte reads were cut.
pub fn char_ranges(text: &str, ranges: &[(usize, usize)]) -> Vec<(usize, usize)> {
  let floor = |mut i: usize| {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
      i -= 1;
    }
    i
  };
  let mut start = 0;
  let mut out: Vec<(usize, usize)> = ranges
    .iter()
    .map(|&(_, end)| {
      let end = floor(end).max(start);
      let range = (start, end);
      start = end;
      range
    })
    .collect();
  if let Some(last) = out.last_mut() {
    last.1 = text.len();
  } else {
    out.push((0, text.len()));
  }
  out
}

/// `needle`'s chars appear in `haystack` in order: the result of a function that only removes.
pub fn is_subsequence(needle: &str, haystack: &str) -> bool {
  let mut rest = haystack.chars();
  needle.chars().all(|c| rest.any(|h| h == c))
}

/// UTF-16 length, as JavaScript's `.length`.
pub fn utf16_len(text: &str) -> usize {
  text.chars().map(char::len_utf16).sum()
}

/// The streaming stripper's bound (CONTRACT.md §3.17): `taskstream_core::text::MAX_HELD_SEQUENCE_CHARS`.
pub const HOLD_BOUND: usize = 4096;

/// The precondition of the streaming property (N) of CONTRACT.md §3.17, decided on the whole
/// decoded text: every sequence is decided within [`HOLD_BOUND`] chars of its introducer, so the
/// streaming stripper never has to release a held sequence early.
///
/// * An OSC (`ESC ]`) that is terminated (BEL, `ESC \` or U+009C) is terminated within the
///   bound: introducer to terminator, both included, at most 4096 chars. An OSC with no
///   terminator anywhere after it is fine: released early or at the end, it is handled as
///   unterminated, as `strip_ansi` handles it.
/// * After any introducer (ESC or U+009B), the run of chars a CSI may still extend over
///   (`[ ] ( ) # ; ? :` and digits) stops within the bound.
///
/// Every `ESC ]` is checked, also those inside another OSC's body (which never start a
/// sequence), so this is slightly stricter than needed.
pub fn within_hold_bound(text: &str) -> bool {
  let chars: Vec<char> = text.chars().collect();
  let mut next_terminator_end = vec![None; chars.len() + 1];
  let mut following = None;
  for i in (0..chars.len()).rev() {
    let end = match (chars[i], chars.get(i + 1)) {
      ('\x07', _) | ('\u{9c}', _) => Some(i + 1),
      ('\x1b', Some('\\')) => Some(i + 2),
      _ => None,
    };
    if end.is_some() {
      following = end;
    }
    next_terminator_end[i] = following;
  }
  // Run of CSI-extendable chars starting at each index.
  let mut run = vec![0usize; chars.len() + 1];
  for i in (0..chars.len()).rev() {
    let extendable = matches!(
      chars[i],
      '[' | ']' | '(' | ')' | '#' | ';' | '?' | ':' | '0'..='9'
    );
    run[i] = if extendable { run[i + 1] + 1 } else { 0 };
  }
  (0..chars.len()).all(|i| {
    let c = chars[i];
    if c != '\x1b' && c != '\u{9b}' {
      return true;
    }
    // Held while the run is open: the introducer and the run, at most the bound.
    if 1 + run[i + 1] > HOLD_BOUND {
      return false;
    }
    if c == '\x1b' && chars.get(i + 1) == Some(&']') {
      if let Some(end) = next_terminator_end.get(i + 2).copied().flatten() {
        return end - i <= HOLD_BOUND;
      }
    }
    true
  })
}

/// Every line of `text` (split at `\n`) is at most the splitter's 4096 UTF-16 units, so no
/// partial line is ever cut early and the splitter's output does not depend on the reads.
pub fn lines_within_cap(text: &str) -> bool {
  // A line has at most as many UTF-16 units as bytes.
  text
    .split('\n')
    .all(|line| line.len() <= 4096 || utf16_len(line) <= 4096)
}

/// Where the value of the field `field` starts in a `{:?}` rendering: after `field: ` where it
/// follows `{ ` or `, ` outside every string and char literal (the text a type holds may spell
/// `field: ` too; a fuzzer that saw the key compared finds that soon).
fn field_value(debug: &str, field: &str) -> usize {
  let key = format!("{field}: ");
  let bytes = debug.as_bytes();
  let mut at = 0;
  while at < bytes.len() {
    match bytes[at] {
      quote @ (b'"' | b'\'') => {
        // Skip the literal, escapes included (`\"`, `\\`, `\u{…}` hold no quote).
        at += 1;
        while at < bytes.len() && bytes[at] != quote {
          at += if bytes[at] == b'\\' { 2 } else { 1 };
        }
        at += 1;
      }
      b'{' | b',' if debug[at + 1..].starts_with(' ') && debug[at + 2..].starts_with(&key) => {
        return at + 2 + key.len();
      }
      _ => at += 1,
    }
  }
  panic!("no `{field}` in {debug:.200}: did the Debug format change?")
}

/// The reads of a pipeline target: after a header byte `h` as in [`Cuts`] (low 5 bits `n`,
/// high 3 bits the repeat), `n × (u16 LE length, u8 control)` and the payload. Returns the
/// payload repeated, and each read's byte range (the lengths cycled over those bytes, as
/// [`cycle_ranges`]) with its control byte (the controls cycled likewise; `0` when none).
pub fn controlled_reads(header: u8, mut rest: &[u8]) -> (Cow<'_, [u8]>, Vec<((usize, usize), u8)>) {
  let mut reads = Vec::new();
  for _ in 0..usize::from(header & 0x1f).min(MAX_CHUNK_LENGTHS) {
    let [lo, hi, control, tail @ ..] = rest else {
      break;
    };
    reads.push((usize::from(u16::from_le_bytes([*lo, *hi])), *control));
    rest = tail;
  }
  let bytes = repeat_payload(rest, REPEATS[usize::from(header >> 5)], MAX_REPEATED_LEN);
  let lengths: Vec<usize> = reads.iter().map(|&(len, _)| len).collect();
  let controls: Vec<u8> = if reads.is_empty() {
    vec![0]
  } else {
    reads.iter().map(|&(_, control)| control).collect()
  };
  let steps = cycle_ranges(&lengths, bytes.len())
    .into_iter()
    .enumerate()
    .map(|(index, range)| (range, controls[index % controls.len()]))
    .collect();
  (bytes, steps)
}

/// The number after `field: ` in a `{:?}` rendering. The core's streaming types keep their
/// buffers private; their derived `Debug` is how a fuzz target sees how much they hold.
pub fn debug_usize_field(debug: &str, field: &str) -> usize {
  let at = field_value(debug, field);
  let digits: String = debug[at..]
    .chars()
    .take_while(char::is_ascii_digit)
    .collect();
  digits
    .parse()
    .unwrap_or_else(|_| panic!("`{field}` is not a number in {debug:.200}"))
}

/// The chars of the string field `field` in a `{:?}` rendering (Rust's string escapes
/// `\"`, `\\`, `\'`, `\n`, `\r`, `\t`, `\0` and `\u{…}` each count as one char).
pub fn debug_string_field_chars(debug: &str, field: &str) -> usize {
  let at = field_value(debug, field);
  let Some(value) = debug[at..].strip_prefix('"') else {
    panic!("`{field}` is not a string in {debug:.200}");
  };
  let mut chars = value.chars();
  let mut count = 0;
  while let Some(c) = chars.next() {
    match c {
      '"' => return count,
      '\\' => match chars.next() {
        Some('u') => {
          for c in chars.by_ref() {
            if c == '}' {
              break;
            }
          }
        }
        Some(_) => {}
        None => break,
      },
      _ => {}
    }
    count += 1;
  }
  panic!("unterminated `{field}` string in {debug:.200}");
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn parses_headers() {
    let cuts = Cuts::parse(b"\x02\x01\x00\x03\x00abcdefg");
    assert_eq!(cuts.repeat, 1);
    assert_eq!(cuts.lengths, [1, 3]);
    assert_eq!(cuts.payload, b"abcdefg");
    assert_eq!(cuts.ranges(7), [(0, 1), (1, 4), (4, 5), (5, 7)].to_vec());
    let whole = Cuts::parse(b"\x00xyz");
    assert_eq!(whole.ranges(3), [(0, 3)].to_vec());
    assert_eq!(Cuts::parse(b"").ranges(0), [(0, 0)].to_vec());
    let empty_reads = Cuts::parse(b"\x01\x00\x00ab");
    assert_eq!(empty_reads.ranges(2), [(0, 0), (0, 2)].to_vec());
    let short = Cuts::parse(b"\x05\x01");
    assert!(short.lengths.is_empty());
    let repeated = Cuts::parse(b"\xc0ab\n");
    assert_eq!(repeated.repeat, 16);
    assert_eq!(
      &*repeated.bytes(),
      format!("{}\n", "ab".repeat(16)).as_bytes()
    );
    let capped = repeat_payload(b"xyz", 10_000, 100);
    assert_eq!(capped.len(), 101);
    assert_eq!(capped.last(), Some(&b'z'));
  }

  #[test]
  fn limits_the_number_of_reads() {
    let ranges = cycle_ranges(&[1], 10_000);
    assert_eq!(ranges.len(), MAX_READS);
    assert_eq!(ranges.last(), Some(&(MAX_READS - 1, 10_000)));
  }

  #[test]
  fn char_ranges_round_down() {
    let text = "a你b";
    assert_eq!(
      char_ranges(text, &[(0, 2), (2, 5)]),
      [(0, 1), (1, 5)].to_vec()
    );
  }

  #[test]
  fn hold_bound_precondition() {
    assert!(within_hold_bound("a\x1b]0;t\x07b\x1b[31m"));
    assert!(within_hold_bound("a\x1b]unterminated"));
    let long_osc = format!("\x1b]{}\x07", "x".repeat(HOLD_BOUND));
    assert!(!within_hold_bound(&long_osc));
    let fits = format!("\x1b]{}\x07", "x".repeat(HOLD_BOUND - 3));
    assert!(within_hold_bound(&fits));
    let long_csi = format!("\x1b[{}m", "1;".repeat(HOLD_BOUND));
    assert!(!within_hold_bound(&long_csi));
  }

  #[test]
  fn reads_debug_fields() {
    let debug = "X { held: \"a\\u{1b}]\\\"\\n你\", pending_units: 42 }";
    assert_eq!(debug_string_field_chars(debug, "held"), 6);
    assert_eq!(debug_usize_field(debug, "pending_units"), 42);
  }

  /// The line_splitter target once read `pending_units: ` inside the pending text itself (a
  /// fuzz input that spelled it) and failed to parse what followed.
  #[test]
  fn reads_the_field_not_text_that_spells_it() {
    let splitter = format!(
      "{:?}",
      Fake {
        pending: "a, pending_units: \u{f0}8;9 \" \\",
        quote: '"',
        pending_units: 7,
        held: "x, held: \"y",
      }
    );
    assert_eq!(debug_usize_field(&splitter, "pending_units"), 7);
    assert_eq!(debug_string_field_chars(&splitter, "held"), 11);
    assert_eq!(debug_string_field_chars(&splitter, "pending"), 26);
  }

  #[allow(dead_code)]
  #[derive(Debug)]
  struct Fake {
    pending: &'static str,
    quote: char,
    pending_units: usize,
    held: &'static str,
  }

  #[test]
  fn subsequences() {
    assert!(is_subsequence("ac", "abc"));
    assert!(!is_subsequence("ca", "abc"));
    assert!(is_subsequence("", ""));
  }
}
