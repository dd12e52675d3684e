//! `read_task_output_tail` and `clean_output_tail` (CONTRACT.md §2.14, §3.13): the fuzz bytes
//! are written to a scratch file and read back at a fuzzer-chosen `maxBytes`.
//!
//! Input: `[h][u16 LE maxBytes][payload]`. The high 3 bits of `h` repeat the payload
//! (`taskstream_fuzz::repeat_payload`, up to 80 KiB: past the 65536-byte cap); its low bits
//! pick `maxBytes`: the given number, 0, 8192 (the default), 65535, 65536, 65537 or
//! `usize::MAX`.
//!
//! For every input:
//! * a regular file never gives an error, and gives exactly the reference: the last
//!   `min(size, maxBytes, 65536)` bytes, leading continuation bytes skipped when the read
//!   starts mid-file, decoded lossily and cleaned; `truncated` when the read started mid-file;
//! * the text is non-empty, has at most that many chars, and is what `clean_output_tail` keeps:
//!   only removals, no control char but TAB and LF, no C1 or bidi control, no trailing
//!   whitespace, and cleaning it again changes nothing.
#![no_main]

use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use taskstream_core::text::{
  clean_output_tail, ecma_trim_end, read_task_output_tail, OutputTail, MAX_TASK_OUTPUT_TAIL_BYTES,
};
use taskstream_fuzz::{is_subsequence, repeat_payload};

/// How often the payload is repeated, by the high 3 bits of the header byte.
const TAIL_REPEATS: [usize; 8] = [1, 1, 1, 1, 16, 256, 4096, 65536];

/// A repeated payload is cut at this many bytes: past the 65536-byte cap.
const MAX_FILE_LEN: usize = 80 * 1024;

/// A scratch file for this process (libFuzzer's `-jobs` runs several).
fn scratch_file() -> &'static PathBuf {
  static FILE: OnceLock<PathBuf> = OnceLock::new();
  FILE.get_or_init(|| {
    let dir = std::env::temp_dir().join("taskstream-fuzz-tail");
    std::fs::create_dir_all(&dir).expect("create the scratch dir");
    dir.join(format!("{}.output", std::process::id()))
  })
}

fn check_clean(text: &str, source: &str) {
  assert!(is_subsequence(text, source), "cleaning added text");
  for c in text.chars() {
    let control = (c < ' ' && c != '\t' && c != '\n')
      || ('\u{80}'..='\u{9f}').contains(&c)
      || ('\u{202a}'..='\u{202e}').contains(&c)
      || ('\u{2066}'..='\u{2069}').contains(&c);
    assert!(!control, "{c:?} left in the clean text");
  }
  assert_eq!(ecma_trim_end(text), text, "trailing whitespace left");
  assert_eq!(clean_output_tail(text), text, "cleaning is not idempotent");
}

fuzz_target!(|data: &[u8]| {
  let (header, rest) = data.split_first().map_or((0, data), |(h, r)| (*h, r));
  let (given, payload) = match rest {
    [lo, hi, payload @ ..] => (usize::from(u16::from_le_bytes([*lo, *hi])), payload),
    _ => (8192, rest),
  };
  let max_bytes = match header & 0x1f {
    0 => 0,
    1 => 8192,
    2 => 65535,
    3 => MAX_TASK_OUTPUT_TAIL_BYTES,
    4 => MAX_TASK_OUTPUT_TAIL_BYTES + 1,
    5 => usize::MAX,
    _ => given,
  };
  let repeat = TAIL_REPEATS[usize::from(header >> 5)];
  let content = repeat_payload(payload, repeat, MAX_FILE_LEN);

  // The cleaner on its own, on the whole payload.
  let text = String::from_utf8_lossy(payload);
  check_clean(&clean_output_tail(&text), &text);

  let path = scratch_file();
  let mut file = std::fs::File::create(path).expect("create the scratch file");
  file.write_all(&content).expect("write the scratch file");
  drop(file);

  let got = read_task_output_tail(path, max_bytes);
  let size = content.len();
  let length = size.min(max_bytes).min(MAX_TASK_OUTPUT_TAIL_BYTES);
  let start = size - length;
  let mut tail = &content[start..];
  if start > 0 {
    while let [first, rest @ ..] = tail {
      if first & 0xc0 != 0x80 {
        break;
      }
      tail = rest;
    }
  }
  let decoded = String::from_utf8_lossy(tail);
  let cleaned = clean_output_tail(&decoded);
  let want = if size == 0 || cleaned.is_empty() {
    OutputTail::Empty
  } else {
    OutputTail::Text {
      text: cleaned,
      truncated: start > 0,
    }
  };
  assert_eq!(got, want, "size {size}, maxBytes {max_bytes}");
  if let OutputTail::Text { text, .. } = &got {
    assert!(!text.is_empty());
    assert!(
      text.chars().count() <= length,
      "{} chars from {length} bytes",
      text.chars().count()
    );
    check_clean(text, &decoded);
  }
});
