//! The pipeline's lines, drops and partial lines; `equivalence.rs`: the fast paths against
//! the exact path.

use super::admission::*;
use super::*;
use crate::monitor::signal::Out;
use crate::text::sanitize_monitor_line;
use crate::text::test_support::XorShift;
use crate::text::{ecma_trim, strip_ansi};

#[derive(Default)]
struct Collect {
  lines: Vec<String>,
  dropped: u64,
  /// With a lane: each notification's shape (one line or a batch of how many) and digest.
  notes: Vec<(Option<usize>, Option<DigestNote>)>,
  /// Lines shown before the throttle decides (while observing).
  seen: Vec<String>,
  /// The last line seen or passed as the last of a counted run.
  last: Option<String>,
}

impl LineSink for Collect {
  fn seen(&mut self, line: &str) {
    self.seen.push(line.to_owned());
    self.last = Some(line.to_owned());
  }
  fn last_line(&mut self, line: &str) {
    self.last = Some(line.to_owned());
  }
  fn accepted(&mut self, line: &str) {
    self.lines.push(line.to_owned());
  }
  fn dropped(&mut self) {
    self.dropped += 1;
  }
  fn out(&mut self, out: Out) {
    match out {
      Out::Line { line, digest } => {
        self.notes.push((None, digest));
        self.lines.push(line);
      }
      Out::Batch { lines, digest, .. } => {
        self.notes.push((Some(lines.len()), digest));
        self.lines.extend(lines);
      }
    }
  }
}

fn unthrottled() -> LinePipeline {
  LinePipeline::new(None, 0)
}

fn throttled() -> LinePipeline {
  LinePipeline::new(Some(ThrottleConfig::default()), 0)
}

#[test]
fn stdout_and_stderr_keep_separate_partials() {
  // §3.10: stdout "partial", stderr "err line\n", stdout " complete\n".
  let mut p = unthrottled();
  let mut c = Collect::default();
  p.feed(Stream::Stdout, b"partial", 0, &mut c);
  p.feed(Stream::Stderr, b"err line\n", 0, &mut c);
  p.feed(Stream::Stdout, b" complete\n", 0, &mut c);
  assert_eq!(c.lines, ["err line", "partial complete"]);
}

#[test]
fn split_utf8_and_split_ansi_come_out_whole() {
  let mut p = unthrottled();
  let mut c = Collect::default();
  let bytes = "你好\n".as_bytes();
  p.feed(Stream::Stdout, &bytes[..2], 0, &mut c);
  p.feed(Stream::Stdout, &bytes[2..], 0, &mut c);
  p.feed(Stream::Stdout, b"\x1b[3", 0, &mut c);
  p.feed(Stream::Stdout, b"1mred\x1b[0m\n", 0, &mut c);
  assert_eq!(c.lines, ["你好", "red"]);
}

#[test]
fn same_output_for_every_split_offset() {
  let input = "a\x1b[31mred\x1b[0m 你好\r\n\n  \nx\x1b]0;title\x07y\n😀 end\npartial".as_bytes();
  let mut whole = Collect::default();
  let mut p = unthrottled();
  p.feed(Stream::Stdout, input, 0, &mut whole);
  p.flush(0, &mut whole);
  assert_eq!(whole.lines, ["ared 你好", "xy", "😀 end", "partial"]);
  for cut in 0..=input.len() {
    let mut c = Collect::default();
    let mut p = unthrottled();
    p.feed(Stream::Stdout, &input[..cut], 0, &mut c);
    p.feed(Stream::Stdout, &input[cut..], 0, &mut c);
    p.flush(0, &mut c);
    assert_eq!(c.lines, whole.lines, "split at {cut}");
  }
}

#[test]
fn blank_lines_spend_no_token_and_drops_are_counted() {
  let mut p = throttled();
  let mut c = Collect::default();
  p.feed(
    Stream::Stdout,
    b"\n\n\n   \n\t\n\x00\x01\nreal1\nreal2\nreal3\nreal4\nreal5\n",
    0,
    &mut c,
  );
  assert_eq!(c.lines.len(), 5);
  p.feed(Stream::Stderr, b"l6\nl7\n", 0, &mut c);
  assert_eq!(c.dropped, 2);
  p.feed(Stream::Stdout, b"later\n", 1000, &mut c);
  assert_eq!(c.lines.len(), 6);
}

#[test]
fn lines_are_sanitised_before_emit() {
  let mut p = unthrottled();
  let mut c = Collect::default();
  p.feed(Stream::Stdout, b"<result>boom</result>\x7f\n", 0, &mut c);
  assert_eq!(c.lines, ["<\u{200B}result>boom</\u{200B}result>\x7f"]);
}

#[test]
fn flush_finishes_decoding_and_releases_an_unfinished_escape() {
  // At the end, a held sequence is resolved as `stripAnsi` resolves the end
  // of a text: `ESC [` matches nothing, stays, and the sanitiser then
  // removes the ESC (what the TypeScript monitor gave for the whole text).
  let mut p = unthrottled();
  let mut c = Collect::default();
  p.feed(Stream::Stdout, b"tail \xe2", 0, &mut c);
  p.feed(Stream::Stderr, b"err\x1b[", 0, &mut c);
  p.flush(0, &mut c);
  p.flush(0, &mut c);
  assert_eq!(c.lines, ["tail \u{FFFD}", "err["]);
}

/// What a monitor delivers for `text` read whole, when no line is over the
/// cap: the lines of `stripAnsi` of the whole, trimmed and sanitised, blank
/// ones skipped (CONTRACT.md §3.17, end).
fn lines_of_strip_ansi(bytes: &[u8]) -> Vec<String> {
  strip_ansi(&String::from_utf8_lossy(bytes))
    .split('\n')
    .map(ecma_trim)
    .filter(|line| !sanitizes_to_blank(line))
    .map(sanitize_monitor_line)
    .collect()
}

/// Feeds `bytes` in reads ending at `cuts` (ascending), then flushes.
fn monitor_lines(bytes: &[u8], cuts: &[usize]) -> Vec<String> {
  let mut p = unthrottled();
  let mut c = Collect::default();
  let mut start = 0;
  for &end in cuts.iter().chain(std::iter::once(&bytes.len())) {
    p.feed(Stream::Stdout, &bytes[start..end], 0, &mut c);
    start = end;
  }
  p.flush(0, &mut c);
  c.lines
}

#[test]
fn an_unterminated_osc_at_the_end_does_not_swallow_the_output() {
  // `printf '\033]0;'; seq 1 100`: no terminator ever comes, so the OSC
  // alternative fails and the CSI-style one takes `ESC ] 0 ; 1` (parameters
  // `0;1`, then `\n` is no final, so the last digit serves as the final),
  // leaving an empty first line, then 2, …, 100.
  let mut input = b"\x1b]0;".to_vec();
  for n in 1..=100 {
    input.extend_from_slice(format!("{n}\n").as_bytes());
  }
  let expected = lines_of_strip_ansi(&input);
  let numbers: Vec<String> = (2..=100).map(|n| n.to_string()).collect();
  assert_eq!(expected, numbers);
  for cut in 0..=input.len() {
    assert_eq!(monitor_lines(&input, &[cut]), expected, "cut at {cut}");
  }
}

/// Streaming property (§3.17) through the whole pipeline: random text that
/// ends in an unterminated OSC (short, or open past the 4096-char bound),
/// in random reads, gives line by line what `stripAnsi` of the whole gives.
#[test]
fn text_ending_in_an_unterminated_osc_gives_the_lines_of_strip_ansi() {
  let prefix: [&[u8]; 12] = [
    b"x",
    b"\n",
    b"\x1b[31m",
    b"\x1b]0;t\x07",
    b"\x1b]8;;u\x1b\\",
    b"\xc2\x9b1m",
    "你".as_bytes(),
    b"\xe2",
    b"1",
    b";",
    b" ",
    b"\x1b",
  ];
  // Nothing that could terminate an OSC: no BEL, no `ESC \`, no U+009C.
  let body: [&[u8]; 11] = [
    b"x",
    b"\n",
    b"\n",
    b"12",
    b";",
    b"\x1b[1m",
    b"\x1b]",
    "😀".as_bytes(),
    b"\xe2",
    b"\t ",
    b"]",
  ];
  let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
  let mut next = move |bound: usize| {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    (seed % bound as u64) as usize
  };
  for round in 0..300 {
    let mut input = Vec::new();
    for _ in 0..next(12) {
      input.extend_from_slice(prefix[next(prefix.len())]);
    }
    input.extend_from_slice(b"\x1b]");
    // Every 10th body is long: the OSC stays open past the bound.
    let body_len = if round % 10 == 0 { 2000 } else { next(30) };
    for _ in 0..body_len {
      input.extend_from_slice(body[next(body.len())]);
    }
    let expected = lines_of_strip_ansi(&input);
    for _ in 0..20 {
      let mut cuts: Vec<usize> = (0..1 + next(6)).map(|_| next(input.len() + 1)).collect();
      cuts.sort_unstable();
      assert_eq!(
        monitor_lines(&input, &cuts),
        expected,
        "{input:x?} cut at {cuts:?}"
      );
    }
  }
}

#[test]
fn terminal_frames_give_the_last_frame_of_each_line_for_any_cut() {
  let bytes = b"\x1b[2K\rprogress 10%\x1b[0K\rprogress 20%\r\n\x1b[32mdone\x1b[0m\r\nprompt> ";
  for cut in 0..=bytes.len() {
    let mut p = unthrottled();
    p.set_frames(true);
    let mut c = Collect::default();
    p.feed(Stream::Stdout, &bytes[..cut], 0, &mut c);
    p.feed(Stream::Stdout, &bytes[cut..], 0, &mut c);
    p.flush(0, &mut c);
    assert_eq!(c.lines, ["progress 20%", "done", "prompt>"], "cut at {cut}");
  }
}

#[test]
fn closed_pipeline_discards() {
  let mut p = unthrottled();
  let mut c = Collect::default();
  p.feed(Stream::Stdout, b"pending", 0, &mut c);
  p.close();
  p.feed(Stream::Stdout, b"more\n", 0, &mut c);
  p.flush(0, &mut c);
  assert!(c.lines.is_empty());
}

#[test]
fn an_over_long_line_gives_one_event_and_counts_its_rest() {
  // §3.10 N row, through the pipeline, on both streams.
  for stream in [Stream::Stdout, Stream::Stderr] {
    let mut p = unthrottled();
    let mut c = Collect::default();
    let first = format!("abc\n{}", "d".repeat(5000));
    p.feed(stream, first.as_bytes(), 0, &mut c);
    assert_eq!(
      c.lines,
      ["abc".to_owned(), format!("{}...", "d".repeat(4096))]
    );
    p.feed(stream, b"e", 0, &mut c);
    p.feed(stream, b"\nf\n", 0, &mut c);
    p.flush(0, &mut c);
    assert_eq!(c.lines.len(), 3);
    assert_eq!(c.lines[2], "f");
    assert_eq!(p.truncated_bytes(), 905);
  }
}

#[test]
fn lines_seen_counts_pieces() {
  let mut p = unthrottled();
  let mut c = Collect::default();
  p.feed(Stream::Stdout, b"a\n\nb\n", 0, &mut c);
  p.feed(Stream::Stderr, b"c", 0, &mut c);
  p.flush(0, &mut c);
  assert_eq!(p.lines_seen(), 4);
}

mod equivalence;
