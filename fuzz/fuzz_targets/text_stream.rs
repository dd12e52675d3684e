//! The streaming UTF-8 decoder, the streaming ANSI stripper and `CleanTextStream` (CONTRACT.md
//! §3.17, §4 items 1–2), fed with the input cut into fuzzer-chosen reads.
//!
//! For every input:
//! * `Utf8StreamDecoder` gives the whole-buffer lossy decode (WHATWG maximal subparts), and
//!   never holds more than 3 bytes;
//! * `strip_ansi` agrees with the ansi-regex 6.2 pattern itself (the oracle of ansi.rs' tests),
//!   on texts of up to 2 KiB;
//! * `AnsiStreamStripper` never holds more than 4096 chars and only removes text;
//! * `CleanTextStream` gives exactly what the decoder followed by the stripper give, fed with
//!   the same reads, its end (a held sequence released as unterminated) included.
//!
//! For inputs meeting the precondition of property (N) ([`within_hold_bound`]): the streaming
//! output equals `strip_ansi` of the whole decoded text.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use regex::Regex;
use taskstream_core::text::{
  strip_ansi, AnsiStreamStripper, CleanTextStream, Utf8StreamDecoder, MAX_HELD_SEQUENCE_CHARS,
};
use taskstream_fuzz::{
  char_ranges, debug_string_field_chars, debug_usize_field, is_subsequence, within_hold_bound, Cuts,
};

/// The longest text compared with the regex oracle.
const ORACLE_MAX_LEN: usize = 2048;

/// The ansi-regex 6.2 pattern (the oracle of src/core/text/ansi.rs' tests): leftmost-first, as
/// JavaScript picks.
fn oracle_strip_ansi(text: &str) -> String {
  static PATTERN: OnceLock<Regex> = OnceLock::new();
  PATTERN
    .get_or_init(|| {
      Regex::new(
        r"(?:\x1b\](?s:.)*?(?:\x07|\x1b\\|\x{9c}))|[\x1b\x{9b}][\[\]()#;?]*(?:[0-9]{1,4}(?:[;:][0-9]{0,4})*)?[0-9A-PR-TZcf-nq-uy=><~]",
      )
      .expect("valid oracle regex")
    })
    .replace_all(text, "")
    .into_owned()
}

fuzz_target!(|data: &[u8]| {
  let cuts = Cuts::parse(data);
  let bytes = cuts.bytes();
  let ranges = cuts.ranges(bytes.len());
  let whole = String::from_utf8_lossy(&bytes).into_owned();

  // Layer 1: the streaming decoder.
  let mut decoder = Utf8StreamDecoder::new();
  let mut decoded = String::new();
  let mut decoded_reads = Vec::with_capacity(ranges.len());
  for &(start, end) in &ranges {
    let mut read = String::new();
    decoder.decode(&bytes[start..end], &mut read);
    let held = debug_usize_field(&format!("{decoder:?}"), "pending_len");
    assert!(held <= 3, "the decoder holds {held} bytes");
    assert_eq!(decoder.is_idle(), held == 0);
    decoded.push_str(&read);
    decoded_reads.push(read);
  }
  let mut tail = String::new();
  decoder.finish(&mut tail);
  decoded.push_str(&tail);
  assert_eq!(
    decoded, whole,
    "streaming decode differs from the whole decode"
  );

  // The whole-text stripper against its definition. Iterating the regex's matches is
  // quadratic on many unterminated OSC starts, so only on short texts.
  let stripped_whole = strip_ansi(&whole);
  if whole.len() <= ORACLE_MAX_LEN {
    assert_eq!(
      stripped_whole,
      oracle_strip_ansi(&whole),
      "strip_ansi differs from the ansi-regex pattern"
    );
  }

  // Layer 2: the streaming stripper over the decoder's reads (as CleanTextStream feeds it) and
  // over the whole text cut at the same byte offsets (rounded to char boundaries).
  let mut composed = String::new();
  let mut stripper = AnsiStreamStripper::new();
  let mut fed = 0;
  let mut push = |read: &str, out: &mut String| {
    stripper.push(read, out);
    fed += read.chars().count();
    check_held(&stripper, fed);
  };
  for read in &decoded_reads {
    push(read, &mut composed);
  }
  // What CleanTextStream lets go before its end; its finish pushes the decoder's tail.
  let before_finish = composed.len();
  push(&tail, &mut composed);
  stripper.finish(&mut composed);
  assert!(stripper.is_idle());
  assert!(is_subsequence(&composed, &whole), "the stripper added text");

  let mut by_chars = String::new();
  let mut stripper = AnsiStreamStripper::new();
  for (start, end) in char_ranges(&whole, &ranges) {
    stripper.push(&whole[start..end], &mut by_chars);
    check_held(&stripper, whole[..end].len());
  }
  stripper.finish(&mut by_chars);

  // Layer 1 + 2: CleanTextStream, whose end releases a held sequence as unterminated
  // (CONTRACT.md §3.17).
  let mut stream = CleanTextStream::default();
  let mut clean = String::new();
  for &(start, end) in &ranges {
    clean.push_str(stream.push(&bytes[start..end]));
  }
  assert_eq!(
    clean.len(),
    before_finish,
    "CleanTextStream lets text go at another time"
  );
  clean.push_str(stream.finish());
  assert_eq!(
    clean, composed,
    "CleanTextStream differs from decoder + stripper"
  );

  // Property (N), for inputs meeting its precondition.
  if within_hold_bound(&whole) {
    assert_eq!(
      composed, stripped_whole,
      "streaming strip differs from the whole strip"
    );
    assert_eq!(
      by_chars, stripped_whole,
      "streaming strip (char cuts) differs"
    );
  }
});

/// The stripper holds at most the bound (CONTRACT.md §4 item 2). It cannot hold more than it
/// was fed, so the (slow) look at its `Debug` is only needed past the bound.
fn check_held(stripper: &AnsiStreamStripper, fed_chars: usize) {
  if fed_chars <= MAX_HELD_SEQUENCE_CHARS {
    return;
  }
  let held = debug_string_field_chars(&format!("{stripper:?}"), "held");
  assert!(
    held <= MAX_HELD_SEQUENCE_CHARS,
    "the stripper holds {held} chars"
  );
  assert_eq!(stripper.is_idle(), held == 0);
}
