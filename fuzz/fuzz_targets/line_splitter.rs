//! The native monitor's line splitter (CONTRACT.md §2.10 "Line splitter", §3.10, §4 item 3),
//! fed with the input (decoded lossily) cut into fuzzer-chosen reads. (Its fast paths, which
//! count lines straight from the raw bytes, are checked against the exact path through the
//! whole pipeline by the monitor_pipeline target.)
//!
//! For every input:
//! * after every read the pending partial line is at most 4096 UTF-16 units;
//! * every line passed on is trimmed, non-empty, and at most 4096 units (+ `...` when cut);
//!
//! For inputs whose lines are all within the 4096-unit cap: any cut gives the lines and the
//! piece count of the whole text pushed at once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskstream_core::text::{
  ecma_trim, sanitize_monitor_line, LineSplitter, PARTIAL_LINE_CAP_UNITS,
};
use taskstream_fuzz::{char_ranges, debug_usize_field, lines_within_cap, utf16_len, Cuts};

/// What the splitter produced: lines passed on, and lines that would be dropped by an empty
/// token bucket (the non-blank ones).
#[derive(Debug, Default, PartialEq, Eq)]
struct Outcome {
  lines: Vec<String>,
  dropped: u64,
  pieces: u64,
}

/// The pipeline's blank test by its definition: `sanitize_monitor_line` leaves only
/// whitespace.
fn non_blank(line: &str) -> bool {
  !ecma_trim(&sanitize_monitor_line(line)).is_empty()
}

fn check_line(line: &str, flushed: bool) {
  assert!(!line.is_empty(), "an empty line was passed on");
  assert_eq!(ecma_trim(line), line, "an untrimmed line was passed on");
  if line.len() <= PARTIAL_LINE_CAP_UNITS {
    return; // at most one UTF-16 unit per byte
  }
  let units = utf16_len(line);
  match line.strip_suffix("...") {
    Some(body) if !flushed && units > PARTIAL_LINE_CAP_UNITS => {
      assert!(utf16_len(body) <= PARTIAL_LINE_CAP_UNITS, "{units} units")
    }
    _ => assert!(units <= PARTIAL_LINE_CAP_UNITS, "a line of {units} units"),
  }
}

/// The pending partial line is at most the cap (CONTRACT.md §4 item 3). It cannot be longer
/// than the text fed (in bytes, at least its units), so the (slow) look at the splitter's
/// `Debug` is only needed past the cap.
fn check_pending(splitter: &LineSplitter, fed_bytes: usize) {
  if fed_bytes <= PARTIAL_LINE_CAP_UNITS {
    return;
  }
  let units = debug_usize_field(&format!("{splitter:?}"), "pending_units");
  assert!(
    units <= PARTIAL_LINE_CAP_UNITS,
    "{units} pending units after a read"
  );
  // A held partial line means a line is under way (so does the discarded rest of a long one).
  assert!(units == 0 || splitter.mid_line());
}

/// Feeds `reads` with `push`, then flushes.
fn run(text: &str, reads: &[(usize, usize)]) -> Outcome {
  let mut splitter = LineSplitter::new();
  let mut out = Outcome::default();
  let mut fed_bytes = 0;
  for &(start, end) in reads {
    let read = &text[start..end];
    let mut emit = |line: &str| {
      check_line(line, false);
      out.dropped += u64::from(non_blank(line));
      out.lines.push(line.to_owned());
    };
    splitter.push(read, &mut emit);
    fed_bytes += read.len();
    check_pending(&splitter, fed_bytes);
  }
  let mut flushed = Vec::new();
  splitter.flush(&mut |line| flushed.push(line.to_owned()));
  for line in flushed {
    check_line(&line, true);
    out.dropped += u64::from(non_blank(&line));
    out.lines.push(line);
  }
  assert!(!splitter.mid_line());
  splitter.flush(&mut |line| panic!("a second flush passed on {line:?}"));
  out.pieces = splitter.pieces();
  out
}

fuzz_target!(|data: &[u8]| {
  let cuts = Cuts::parse(data);
  let bytes = cuts.bytes();
  let text = String::from_utf8_lossy(&bytes).into_owned();
  let reads = char_ranges(&text, &cuts.ranges(bytes.len()));

  let exact = run(&text, &reads);
  if lines_within_cap(&text) {
    let whole = run(&text, &[(0, text.len())]);
    assert_eq!(exact, whole, "the reads changed the splitter's outcome");
  }
});
