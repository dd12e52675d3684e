//! `LineBuffer`, the line splitter for callers that feed their own chunks (CONTRACT.md §2.18,
//! §3.18, §4 item 3), with a fuzzer-chosen cap, fed with the input (decoded lossily) cut into
//! fuzzer-chosen chunks.
//!
//! Input: `[cap][h][n × u16 LE chunk length][payload]` (`taskstream_fuzz::Cuts` after the cap
//! byte; cap 0 is the default 65536 code points).
//!
//! For every input:
//! * the partial line never holds more than the cap, and a line has at most the cap in code
//!   points, plus the marker when it was cut;
//! * `flush` gives the partial once: a second flush gives nothing.
//!
//! For inputs without a line of exactly the cap ended by `\r\n` (the one case where §2.18 makes
//! the chunking matter: a trailing `\r` counts in the partial-overflow check): the chunks give
//! the lines of the whole text pushed at once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskstream_core::text::{
  LineBuffer, DEFAULT_LINE_BUFFER_MAX_CODE_POINTS, LINE_TRUNCATION_MARKER,
};
use taskstream_fuzz::{char_ranges, debug_usize_field, Cuts};

fn run(cap: usize, text: &str, chunks: &[(usize, usize)]) -> Vec<String> {
  let mut buffer = LineBuffer::new(cap);
  let mut lines = Vec::new();
  let mut fed = 0;
  for &(start, end) in chunks {
    lines.extend(buffer.push(&text[start..end]));
    fed += end - start;
    // The partial holds at most what was fed (in bytes, at least its code points).
    if fed > cap {
      let held = debug_usize_field(&format!("{buffer:?}"), "pending_code_points");
      assert!(held <= cap, "{held} code points pending, cap {cap}");
    }
  }
  lines.extend(buffer.flush());
  assert!(buffer.flush().is_empty(), "a second flush gave lines");
  for line in &lines {
    let body = line.strip_suffix(LINE_TRUNCATION_MARKER).unwrap_or(line);
    let code_points = body.chars().count();
    assert!(
      code_points <= cap,
      "a line of {code_points} code points, cap {cap}"
    );
  }
  lines
}

/// A line of exactly `cap` code points before a `\r\n`: its `\r` may arrive in a chunk of its
/// own and overflow the partial, by §2.18.
fn has_cap_line_before_crlf(text: &str, cap: usize) -> bool {
  text.split('\n').any(|line| {
    line
      .strip_suffix('\r')
      .is_some_and(|body| body.chars().count() == cap)
  })
}

fuzz_target!(|data: &[u8]| {
  let (cap, rest) = data.split_first().map_or((0, data), |(c, r)| (*c, r));
  let cap = match cap {
    0 => DEFAULT_LINE_BUFFER_MAX_CODE_POINTS,
    n => usize::from(n),
  };
  let cuts = Cuts::parse(rest);
  let bytes = cuts.bytes();
  let text = String::from_utf8_lossy(&bytes).into_owned();
  let chunks = char_ranges(&text, &cuts.ranges(bytes.len()));

  let chunked = run(cap, &text, &chunks);
  if !has_cap_line_before_crlf(&text, cap) {
    let whole = run(cap, &text, &[(0, text.len())]);
    assert_eq!(chunked, whole, "the chunks changed the lines");
  }
});
