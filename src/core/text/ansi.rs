//! ANSI stripping with the grammar of npm `strip-ansi` 7.2 / `ansi-regex` 6.2, whole-string and
//! streaming (CONTRACT.md §1.7, §2.3 layer 2, §3.17, §4 item 2).
//!
//! The JavaScript pattern, applied globally and replaced with `''`, is
//!
//! ```text
//! OSC: \u001B\][\s\S]*?(?:\u0007|\u001B\u005C|\u009C)
//! CSI: [\u001B\u009B][[\]()#;?]*(?:\d{1,4}(?:[;:]\d{0,4})*)?[\dA-PR-TZcf-nq-uy=><~]
//! ```
//!
//! with OSC tried first. One hand-written matcher serves both entry points: besides the match,
//! it reports when the outcome at a position could still change if more text followed, which is
//! what the streaming stripper needs to know before it lets text go. It runs in linear time,
//! where a backtracking regex is quadratic on many unterminated OSC starts.
//!
//! How the CSI alternative resolves under backtracking (the basis of [`Scanner::csi`]):
//! the greedy prefix run `[[\]()#;?]*` is the only useful choice, since no prefix character
//! can be a digit or a final. If the parameter list follows, the greedy walk stops at some
//! character: a final there ends the match; otherwise backtracking gives back characters until
//! a digit can serve as the final, which is the last digit the walk took. The match depends on
//! text after it only when the walk reached the end of the text.

use super::bytes::find_either;
use super::csi_bytes::{is_csi_final, is_csi_prefix};

/// ESC, U+001B.
const ESC: u8 = 0x1B;
/// BEL, U+0007: one of the three string terminators.
const BEL: u8 = 0x07;
/// UTF-8 lead byte of U+0080–U+00BF: U+009B (CSI) is `C2 9B`, U+009C (ST) is `C2 9C`.
const C1_LEAD: u8 = 0xC2;
/// Second UTF-8 byte of U+009B, the one-character CSI introducer.
const C1_CSI: u8 = 0x9B;
/// Second UTF-8 byte of U+009C, the one-character string terminator.
const C1_ST: u8 = 0x9C;
/// The longest parameter digit run the grammar takes at once (`\d{1,4}`, `\d{0,4}`).
const MAX_PARAM_DIGITS: usize = 4;

/// The most text the streaming stripper holds for an unfinished sequence, in chars
/// (CONTRACT.md §3.17). A sequence still open beyond it is handled as unterminated.
pub const MAX_HELD_SEQUENCE_CHARS: usize = 4096;

/// `stripAnsi` (CONTRACT.md §1.7): the result of npm `strip-ansi` 7.2 on a complete string.
pub fn strip_ansi(text: &str) -> String {
  let mut out = String::with_capacity(text.len());
  let unfinished = Scanner::new(text).strip_from(0, true, &mut out);
  debug_assert!(
    unfinished.is_none(),
    "nothing is held at the end of the text"
  );
  out
}

/// The streaming twin of [`strip_ansi`] (CONTRACT.md §3.17, §4 item 2): for every split of a
/// text into pushed pieces, the concatenated output of `push`es and `finish` equals
/// `strip_ansi` of the whole, provided every OSC is terminated within
/// [`MAX_HELD_SEQUENCE_CHARS`]. Between pushes it holds only a sequence that more text could
/// still complete or extend, and never more than [`MAX_HELD_SEQUENCE_CHARS`] chars.
#[derive(Debug, Default)]
pub struct AnsiStreamStripper {
  /// Text from the start of an unfinished sequence.
  held: String,
}

impl AnsiStreamStripper {
  pub fn new() -> Self {
    Self::default()
  }

  /// Strips the next piece of the stream, appending what is final to `out`.
  pub fn push(&mut self, text: &str, out: &mut String) {
    self.held = if self.held.is_empty() {
      strip_stream_piece(text, out)
    } else {
      let mut joined = std::mem::take(&mut self.held);
      joined.push_str(text);
      strip_stream_piece(&joined, out)
    };
  }

  /// Ends the stream: held text is handled exactly as `strip_ansi` handles the end of its
  /// input. The stripper can be reused afterwards.
  pub fn finish(&mut self, out: &mut String) {
    let held = std::mem::take(&mut self.held);
    let unfinished = Scanner::new(&held).strip_from(0, true, out);
    debug_assert!(
      unfinished.is_none(),
      "nothing is held at the end of the text"
    );
  }

  /// True when nothing is held, so text without an introducer passes unchanged.
  pub fn is_idle(&self) -> bool {
    self.held.is_empty()
  }

  /// Drops a held unfinished sequence without emitting it.
  pub fn discard_pending(&mut self) {
    self.held.clear();
  }

  /// Chars held for an unfinished sequence (at most [`MAX_HELD_SEQUENCE_CHARS`]).
  pub fn held_chars(&self) -> usize {
    self.held.chars().count()
  }
}

/// True when `text` may hold an escape sequence: it has an ESC or a U+009B.
pub fn has_introducer(text: &str) -> bool {
  Grammar::new(text.as_bytes()).next_introducer(0).is_some()
}

/// Strips `text`, the stream so far from the end of the last decided position, and returns the
/// suffix to hold. An unfinished sequence that would leave more than
/// [`MAX_HELD_SEQUENCE_CHARS`] held is resolved as if the text ended there.
fn strip_stream_piece(text: &str, out: &mut String) -> String {
  let hold_limit = text
    .char_indices()
    .rev()
    .nth(MAX_HELD_SEQUENCE_CHARS - 1)
    .map_or(0, |(index, _)| index);
  let mut scanner = Scanner::new(text);
  let mut pos = 0;
  loop {
    match scanner.strip_from(pos, false, out) {
      None => return String::new(),
      Some(start) if start >= hold_limit => return text[start..].to_owned(),
      Some(start) => pos = scanner.release(start, out),
    }
  }
}

/// The grammar's verdict at one introducer (ESC or U+009B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
  /// A sequence ends before this byte index.
  Match(usize),
  /// No sequence starts here; the introducer is ordinary text.
  NoMatch,
  /// The verdict depends on text that has not arrived yet.
  NeedMore,
}

/// A string terminator: BEL, `ESC \` or U+009C, from `start` to before `end`.
#[derive(Clone, Copy, Debug)]
struct Terminator {
  start: usize,
  end: usize,
}

/// The grammar over the UTF-8 bytes of a text. It only looks at ASCII bytes and at the
/// two-byte encodings of U+009B and U+009C, so it gives the same verdicts on raw bytes as on
/// their lossy decoding: a U+FFFD never stands where one of those was, and an invalid byte is,
/// like any other non-ASCII char, no part of the grammar.
pub(crate) struct Grammar<'a> {
  bytes: &'a [u8],
  /// The last terminator search: where it started and what it found. It answers any later
  /// search from a position up to what it found, which keeps scanning linear.
  last_st_search: Option<(usize, Option<Terminator>)>,
}

impl<'a> Grammar<'a> {
  pub(crate) fn new(bytes: &'a [u8]) -> Self {
    Self {
      bytes,
      last_st_search: None,
    }
  }

  /// The next ESC or U+009B at or after `pos`.
  pub(crate) fn next_introducer(&self, pos: usize) -> Option<usize> {
    let bytes = self.bytes;
    let mut from = pos;
    while let Some(offset) = find_either(&bytes[from..], ESC, C1_LEAD) {
      let at = from + offset;
      if bytes[at] == ESC || bytes.get(at + 1) == Some(&C1_CSI) {
        return Some(at);
      }
      from = at + 1;
    }
    None
  }

  pub(crate) fn introducer_len(&self, start: usize) -> usize {
    if self.bytes[start] == ESC {
      1
    } else {
      2
    }
  }

  /// The verdict at the introducer at `start`: the OSC alternative first, then the CSI
  /// alternative, as in the pattern. With `at_end` false the bytes may continue, and a
  /// verdict that depends on what follows is [`Attempt::NeedMore`]; with `at_end` true they
  /// are the whole text.
  pub(crate) fn attempt(&mut self, start: usize, at_end: bool) -> Attempt {
    if self.bytes[start] == ESC && self.bytes.get(start + 1) == Some(&b']') {
      // Without a terminator yet, more text may bring one, even a `\` after a final ESC.
      match self.find_st(start + 2) {
        Some(terminator) => return Attempt::Match(terminator.end),
        None if !at_end => return Attempt::NeedMore,
        None => {}
      }
    }
    self.csi(start, at_end)
  }

  /// `[\u001B\u009B][[\]()#;?]*(?:\d{1,4}(?:[;:]\d{0,4})*)?[final]` at `start`.
  fn csi(&self, start: usize, at_end: bool) -> Attempt {
    let bytes = self.bytes;
    let mut i = start + self.introducer_len(start);
    while bytes.get(i).is_some_and(|&byte| is_csi_prefix(byte)) {
      i += 1;
    }
    match bytes.get(i) {
      None if at_end => Attempt::NoMatch,
      None => Attempt::NeedMore,
      Some(byte) if byte.is_ascii_digit() => self.csi_parameters(i, at_end),
      Some(&byte) if is_csi_final(byte) => Attempt::Match(i + 1),
      Some(_) => Attempt::NoMatch,
    }
  }

  /// The parameter list from its first digit at `from`, then the final (module docs).
  fn csi_parameters(&self, from: usize, at_end: bool) -> Attempt {
    let bytes = self.bytes;
    let mut i = take_digits(bytes, from);
    let mut after_last_digit = i;
    while matches!(bytes.get(i), Some(b';' | b':')) {
      let after = take_digits(bytes, i + 1);
      if after > i + 1 {
        after_last_digit = after;
      }
      i = after;
    }
    match bytes.get(i) {
      None if !at_end => Attempt::NeedMore,
      Some(&byte) if is_csi_final(byte) => Attempt::Match(i + 1),
      _ => Attempt::Match(after_last_digit),
    }
  }

  /// The first string terminator at or after `from`, reusing the last search when it covers
  /// this one.
  fn find_st(&mut self, from: usize) -> Option<Terminator> {
    if let Some((searched_from, found)) = self.last_st_search {
      if searched_from <= from && found.is_none_or(|terminator| terminator.start >= from) {
        return found;
      }
    }
    let found = search_st(self.bytes, from);
    self.last_st_search = Some((from, found));
    found
  }
}

/// Runs the grammar over one text, left to right, like a global JavaScript `replace`.
struct Scanner<'a> {
  text: &'a str,
  grammar: Grammar<'a>,
}

impl<'a> Scanner<'a> {
  fn new(text: &'a str) -> Self {
    Self {
      text,
      grammar: Grammar::new(text.as_bytes()),
    }
  }

  /// Copies the text from `pos` to `out` without its sequences. When `at_end` is false it stops
  /// at a sequence whose verdict needs more text and returns where that sequence starts.
  fn strip_from(&mut self, mut pos: usize, at_end: bool, out: &mut String) -> Option<usize> {
    while let Some(start) = self.grammar.next_introducer(pos) {
      out.push_str(&self.text[pos..start]);
      pos = match self.grammar.attempt(start, at_end) {
        Attempt::Match(end) => end,
        Attempt::NoMatch => self.keep_introducer(start, out),
        Attempt::NeedMore => return Some(start),
      };
    }
    out.push_str(&self.text[pos..]);
    None
  }

  /// Decides the sequence at `start` as if the text ended here; returns where to go on.
  fn release(&mut self, start: usize, out: &mut String) -> usize {
    match self.grammar.attempt(start, true) {
      Attempt::Match(end) => end,
      Attempt::NoMatch | Attempt::NeedMore => self.keep_introducer(start, out),
    }
  }

  fn keep_introducer(&self, start: usize, out: &mut String) -> usize {
    let end = start + self.grammar.introducer_len(start);
    out.push_str(&self.text[start..end]);
    end
  }
}

/// The first string terminator at or after `from`.
fn search_st(bytes: &[u8], from: usize) -> Option<Terminator> {
  let mut pos = from;
  while let Some(offset) = bytes[pos..]
    .iter()
    .position(|&byte| matches!(byte, BEL | ESC | C1_LEAD))
  {
    let start = pos + offset;
    match (bytes[start], bytes.get(start + 1)) {
      (BEL, _) => {
        return Some(Terminator {
          start,
          end: start + 1,
        })
      }
      (ESC, Some(b'\\')) | (C1_LEAD, Some(&C1_ST)) => {
        return Some(Terminator {
          start,
          end: start + 2,
        })
      }
      _ => pos = start + 1,
    }
  }
  None
}

/// Up to four ASCII digits from `from`; returns the index after them.
fn take_digits(bytes: &[u8], from: usize) -> usize {
  let run = bytes[from..]
    .iter()
    .take(MAX_PARAM_DIGITS)
    .take_while(|byte| byte.is_ascii_digit())
    .count();
  from + run
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::text::test_support::{assert_string_vectors, XorShift};
  use once_cell::sync::Lazy;
  use regex::Regex;

  /// The ansi-regex 6.2 pattern itself, as an oracle: the `regex` crate's leftmost-first
  /// semantics pick the same match as JavaScript for it.
  fn oracle_strip_ansi(text: &str) -> String {
    static PATTERN: Lazy<Regex> = Lazy::new(|| {
      Regex::new(
        r"(?:\x1b\](?s:.)*?(?:\x07|\x1b\\|\x{9c}))|[\x1b\x{9b}][\[\]()#;?]*(?:[0-9]{1,4}(?:[;:][0-9]{0,4})*)?[0-9A-PR-TZcf-nq-uy=><~]",
      )
      .expect("valid oracle regex")
    });
    PATTERN.replace_all(text, "").into_owned()
  }

  #[test]
  fn strip_ansi_vectors() {
    assert_string_vectors("stripAnsi", strip_ansi);
    assert_string_vectors("stripAnsi", oracle_strip_ansi);
  }

  #[test]
  fn strip_ansi_grammar_edges() {
    let samples = [
      ("\x1b[12345m", "m"),
      ("\x1b[1;2;x", ";x"),
      ("\x1b[12;x", ";x"),
      ("\x1b[1;23x", "x"),
      ("\x1b[;1m!", "!"),
      ("\x1b[:5m", "\x1b[:5m"),
      ("\x1b[38:2::255:0:0mX", "X"),
      ("\x1b[?25l", ""),
      ("\u{9b}31mred", "red"),
      ("a\x1b]0;t\u{9c}b", "ab"),
      ("a\x1b]0;t\x1b", "a\x1b"),
      ("\x1b", "\x1b"),
      ("\x1b]", "\x1b]"),
      ("\x1b[", "\x1b["),
      ("\x1b[12", ""),
      ("\x1b[1;", ";"),
      ("\x1b]\x1b]\x1b]", "\x1b]\x1b]\x1b]"),
      ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
      ("你\x1b[1m好😀\u{9b}", "你好😀\u{9b}"),
      ("\u{a0}\u{c2}\x1bD", "\u{a0}\u{c2}"),
    ];
    for (input, expected) in samples {
      assert_eq!(strip_ansi(input), expected, "{input:?}");
      assert_eq!(oracle_strip_ansi(input), expected, "oracle {input:?}");
    }
  }

  #[test]
  fn strip_ansi_agrees_with_the_regex_on_random_text() {
    let alphabet = [
      "\x1b", "\x1b", "\u{9b}", "\u{9c}", "\x07", "\\", "]", "[", "(", "#", "?", ";", ":", "0",
      "1", "9", "m", "Q", "x", "u", "~", "\n", "你", "😀",
    ];
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for _ in 0..20_000 {
      let len = rng.below(24);
      let text: String = (0..len)
        .map(|_| alphabet[rng.below(alphabet.len())])
        .collect();
      assert_eq!(strip_ansi(&text), oracle_strip_ansi(&text), "{text:?}");
    }
  }

  #[test]
  fn many_unterminated_osc_starts_stay_linear() {
    let text = "\x1b]".repeat(200_000);
    assert_eq!(strip_ansi(&text), text);
    let mut stripper = AnsiStreamStripper::new();
    let mut out = String::new();
    stripper.push(&text, &mut out);
    stripper.finish(&mut out);
    assert_eq!(out, text);
  }

  #[test]
  fn an_osc_open_past_the_bound_is_released_as_unterminated() {
    let body = "x".repeat(5000);
    let input = format!("a\x1b]{body}\x07b");
    let mut stripper = AnsiStreamStripper::new();
    let mut out = String::new();
    for piece in input.as_bytes().chunks(100) {
      stripper.push(std::str::from_utf8(piece).expect("ASCII input"), &mut out);
      assert!(stripper.held_chars() <= MAX_HELD_SEQUENCE_CHARS);
    }
    stripper.finish(&mut out);
    assert_eq!(out, format!("a\x1b]{body}\x07b"));
  }

  #[test]
  fn an_osc_within_the_bound_is_held_and_removed() {
    let input = format!("a\x1b]{}\x1b\\b", "y".repeat(MAX_HELD_SEQUENCE_CHARS - 4));
    let mut stripper = AnsiStreamStripper::new();
    let mut out = String::new();
    for piece in input.as_bytes().chunks(7) {
      stripper.push(std::str::from_utf8(piece).expect("ASCII input"), &mut out);
    }
    stripper.finish(&mut out);
    assert_eq!(out, "ab");
  }

  #[test]
  fn discard_pending_drops_the_held_sequence() {
    let mut stripper = AnsiStreamStripper::new();
    let mut out = String::new();
    stripper.push("ok\x1b]0;tit", &mut out);
    assert_eq!(out, "ok");
    stripper.discard_pending();
    stripper.push("le", &mut out);
    stripper.finish(&mut out);
    assert_eq!(out, "okle");
  }

  #[test]
  fn finish_handles_held_text_like_the_end_of_input() {
    for held in [
      "\x1b",
      "\x1b]unterminated",
      "\x1b[12",
      "\x1b[1;",
      "\x1b]0;t\x1b",
    ] {
      let mut stripper = AnsiStreamStripper::new();
      let mut out = String::new();
      stripper.push(held, &mut out);
      assert_eq!(out, "", "{held:?} is held");
      stripper.finish(&mut out);
      assert_eq!(out, strip_ansi(held), "{held:?}");
    }
  }
}
