//! The native monitor's line splitter (CONTRACT.md §2.10 "Line splitter", §3.10, §4 item 3)
//! and the plain-line counter behind its firehose fast path, fed with the input (decoded
//! lossily) cut into fuzzer-chosen reads.
//!
//! For every input:
//! * after every read the pending partial line is at most 4096 UTF-16 units;
//! * every line passed on is trimmed, non-empty, and at most 4096 units (+ `...` when cut);
//! * `push_counting` (the fast path for reads the throttle rejects whole) gives what `push`
//!   gives when every line is dropped: some of the same lines through `emit` (plain short ones
//!   are only counted), the same dropped count
//!   (the reference of pipeline.rs' `counting_fast_path_matches_the_exact_path`: a line is
//!   dropped when it does not sanitise to blank) and the same piece count;
//! * `count_plain_lines` agrees with its line-at-a-time definition (line_count.rs' tests).
//!
//! For inputs whose lines are all within the 4096-unit cap: any cut gives the lines and the
//! piece count of the whole text pushed at once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskstream::core::monitor::splitter::{LineSplitter, PARTIAL_LINE_CAP_UNITS};
use taskstream::core::text::{count_plain_lines, ecma_trim, sanitize_monitor_line, LineCount};
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

/// Feeds `reads` with `push` (`counting` false) or `push_counting`, then flushes.
fn run(text: &str, reads: &[(usize, usize)], counting: bool) -> Outcome {
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
    if counting {
      let mut dropped = 0;
      splitter.push_counting(read, &mut dropped, &mut emit);
      out.dropped += dropped;
    } else {
      splitter.push(read, &mut emit);
    }
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

/// The count's definition, one line at a time (line_count.rs' `reference`).
fn reference_count(text: &[u8], max_line_len: usize) -> Option<LineCount> {
  if !text.is_ascii() || text.contains(&0x1B) {
    return None;
  }
  let mut count = LineCount::default();
  let body = text.strip_suffix(b"\n")?;
  for line in body.split(|&b| b == b'\n') {
    if line.len() > max_line_len {
      return None;
    }
    count.lines += 1;
    count.non_blank += u64::from(line.iter().any(|&b| b > b' '));
  }
  Some(count)
}

fuzz_target!(|data: &[u8]| {
  let cuts = Cuts::parse(data);
  let bytes = cuts.bytes();
  let text = String::from_utf8_lossy(&bytes).into_owned();
  let reads = char_ranges(&text, &cuts.ranges(bytes.len()));

  let exact = run(&text, &reads, false);
  let counting = run(&text, &reads, true);
  // Plain short lines are only counted, never built; the rest take the exact way.
  let mut exact_lines = exact.lines.iter();
  assert!(
    counting
      .lines
      .iter()
      .all(|line| exact_lines.any(|l| l == line)),
    "push_counting passed on lines push did not"
  );
  assert_eq!(
    counting.dropped, exact.dropped,
    "push_counting dropped another count"
  );
  assert_eq!(
    counting.pieces, exact.pieces,
    "push_counting counted other pieces"
  );

  if lines_within_cap(&text) {
    let whole = run(&text, &[(0, text.len())], false);
    assert_eq!(exact, whole, "the reads changed the splitter's outcome");
  }

  // The fast counter on raw bytes up to the last newline, at the limits the code uses.
  if let Some(last) = bytes.iter().rposition(|&b| b == b'\n') {
    let complete = &bytes[..=last];
    for max in [63, 64, 100, PARTIAL_LINE_CAP_UNITS] {
      assert_eq!(
        count_plain_lines(complete, max),
        reference_count(complete, max),
        "count_plain_lines, limit {max}"
      );
    }
  }
});
