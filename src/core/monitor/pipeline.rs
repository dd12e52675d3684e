//! The native monitor's byte-to-event pipeline (CONTRACT.md §2.3 layers 1–5,
//! §2.10 "Reading", "throttledEmit", "flushPartialLineBuffers"): per stream a
//! streaming UTF-8 decoder, a streaming ANSI stripper and a line splitter; one
//! token bucket shared by both streams.

use super::splitter::LineSplitter;
use super::throttle::{ThrottleConfig, TokenBucket};
use crate::core::text::{find_either, is_ecma_whitespace, sanitize_monitor_line, CleanTextStream};

pub use crate::core::task::Stream;

/// Receives what the pipeline decides about each line.
pub trait LineSink {
  /// A sanitised line that passed the throttle: run `emitEvent` with it.
  fn accepted(&mut self, line: &str);
  /// A non-blank line the throttle dropped.
  fn dropped(&mut self);
  /// `lines` non-blank lines the throttle dropped.
  fn dropped_many(&mut self, lines: u64) {
    for _ in 0..lines {
      self.dropped();
    }
  }
}

#[derive(Default)]
struct StreamState {
  text: CleanTextStream,
  splitter: LineSplitter,
}

impl StreamState {
  /// One read in which no line can be accepted. The read is cut where a line
  /// starts afresh: before that point (the end of a partial or discarded line,
  /// or of a held character or escape sequence) and after its last newline, bytes take the
  /// usual way; in between, plain text is counted straight from the raw bytes
  /// in one pass ([`LineSplitter::count_plain_lines`]). Cutting a read changes nothing: the
  /// decoder, stripper and splitter are streaming.
  fn push_counting(&mut self, bytes: &[u8], dropped: &mut u64, emit: &mut impl FnMut(&str)) {
    let head_len = if self.text.is_idle() && !self.splitter.mid_line() {
      0
    } else {
      find_either(bytes, b'\n', b'\n').map_or(bytes.len(), |i| i + 1)
    };
    let (head, mut rest) = bytes.split_at(head_len);
    if !head.is_empty() {
      let text = self.text.push(head);
      self.splitter.push_counting(text, dropped, emit);
    }
    if self.text.is_idle() {
      rest = &rest[self.splitter.count_plain_lines(rest, dropped)..];
    }
    if !rest.is_empty() {
      let text = self.text.push(rest);
      self.splitter.push_counting(text, dropped, emit);
    }
  }
}

pub struct LinePipeline {
  streams: [StreamState; 2],
  bucket: Option<TokenBucket>,
  closed: bool,
  /// Use [`LineSplitter::push_counting`] for reads the throttle rejects whole
  /// (off only in tests that compare it with the exact path).
  fast_counting: bool,
}

impl LinePipeline {
  /// `throttle: None` turns throttling off.
  pub fn new(throttle: Option<ThrottleConfig>, start_mono_ms: i64) -> Self {
    Self {
      streams: Default::default(),
      bucket: throttle.map(|c| TokenBucket::new(c, start_mono_ms)),
      closed: false,
      fast_counting: true,
    }
  }

  /// Pieces produced by both splitters (`linesSeen`).
  pub fn lines_seen(&self) -> u64 {
    self.streams.iter().map(|s| s.splitter.pieces()).sum()
  }

  /// Bytes of over-long lines cut off by both splitters (`truncatedBytes`).
  pub fn truncated_bytes(&self) -> u64 {
    self
      .streams
      .iter()
      .map(|s| s.splitter.truncated_bytes())
      .sum()
  }

  pub fn is_closed(&self) -> bool {
    self.closed
  }

  /// Processes one read. Ignored once the pipeline is closed.
  pub fn feed(&mut self, stream: Stream, bytes: &[u8], now_mono_ms: i64, sink: &mut impl LineSink) {
    if self.closed {
      return;
    }
    let state = &mut self.streams[stream as usize];
    let bucket = &mut self.bucket;
    // The read's time is fixed, so once the bucket is empty no line of this
    // read can pass: lines then only need counting (the firehose case).
    let throttled_out =
      self.fast_counting && bucket.as_ref().is_some_and(|b| !b.has_token(now_mono_ms));
    if throttled_out {
      let mut dropped = 0;
      state.push_counting(bytes, &mut dropped, &mut |line| {
        throttled_emit(bucket, line, now_mono_ms, sink)
      });
      if let Some(bucket) = bucket.as_mut().filter(|_| dropped > 0) {
        // The counted lines' `try_take`: it fails, but a clock that went back (reader
        // threads take their time before the pipeline lock) moves the refill point.
        let taken = bucket.try_take(now_mono_ms);
        debug_assert!(!taken, "no token at a throttled-out read's time");
      }
      sink.dropped_many(dropped);
    } else {
      let text = state.text.push(bytes);
      state.splitter.push(text, &mut |line| {
        throttled_emit(bucket, line, now_mono_ms, sink)
      });
    }
  }

  /// Finishes decoding (an incomplete UTF-8 sequence becomes U+FFFD) and
  /// releases a still-held escape sequence as unterminated, as `stripAnsi`
  /// resolves the end of a text (CONTRACT.md §3.17: the text after an
  /// unterminated `ESC ]` is never swallowed), then passes on stdout's and
  /// stderr's partial lines. Idempotent. Does not close the pipeline.
  pub fn flush(&mut self, now_mono_ms: i64, sink: &mut impl LineSink) {
    if self.closed {
      return;
    }
    let bucket = &mut self.bucket;
    for state in &mut self.streams {
      let text = state.text.finish();
      state.splitter.push(text, &mut |line| {
        throttled_emit(bucket, line, now_mono_ms, sink)
      });
      state
        .splitter
        .flush(&mut |line| throttled_emit(bucket, line, now_mono_ms, sink));
    }
  }

  /// Stops processing: later reads are discarded, pending partial lines dropped.
  pub fn close(&mut self) {
    self.closed = true;
    for state in &mut self.streams {
      state.splitter.discard();
      state.text.discard_pending();
    }
  }
}

/// §2.10 throttledEmit: lines that sanitise to blank cost no token; the rest
/// take a token or are counted as dropped. The blank check runs before the
/// (allocating) sanitiser so a flood of dropped lines costs no allocation.
fn throttled_emit(
  bucket: &mut Option<TokenBucket>,
  line: &str,
  now_mono_ms: i64,
  sink: &mut impl LineSink,
) {
  if sanitizes_to_blank(line) {
    return;
  }
  if let Some(bucket) = bucket {
    if !bucket.try_take(now_mono_ms) {
      sink.dropped();
      return;
    }
  }
  sink.accepted(&sanitize_monitor_line(line));
}

/// True when `sanitize_monitor_line(line)` would be empty or whitespace-only:
/// every char is a removed control (C0 but TAB, C1) or ECMAScript whitespace.
fn sanitizes_to_blank(line: &str) -> bool {
  line.chars().all(|c| {
    let removed = (c < '\u{20}' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c);
    removed || is_ecma_whitespace(c)
  })
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::core::text::{ecma_trim, strip_ansi};

  #[derive(Default)]
  struct Collect {
    lines: Vec<String>,
    dropped: u64,
  }

  impl LineSink for Collect {
    fn accepted(&mut self, line: &str) {
      self.lines.push(line.to_owned());
    }
    fn dropped(&mut self) {
      self.dropped += 1;
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
  fn closed_pipeline_discards() {
    let mut p = unthrottled();
    let mut c = Collect::default();
    p.feed(Stream::Stdout, b"pending", 0, &mut c);
    p.close();
    p.feed(Stream::Stdout, b"more\n", 0, &mut c);
    p.flush(0, &mut c);
    assert!(c.lines.is_empty());
  }

  /// The counting fast path gives exactly what the exact path gives, on text
  /// mixing blank, control-only, non-ASCII, long and partial lines.
  #[test]
  fn counting_fast_path_matches_the_exact_path() {
    let pieces = [
      "y\n",
      "\n",
      "   \n",
      "\t\r\n",
      "\x01\x02\n",
      "\x7f\n",
      "a\r\n",
      " x \n",
      "é\n",
      "\u{a0}\n",
      "\u{feff}\n",
      "\u{85}\n",
      "<result>\n",
      "part",
      "ial",
      "\x1b[31mred\x1b[0m\n",
      "\x1b]0;title\x07t\n",
      "你好\n",
      "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n",
    ];
    let long_blank = format!("{}\x01\n", "\x01".repeat(5000));
    let long_line = format!("{}\n", "z".repeat(4097));
    // No newline: a few of these in a row go over the cap as a partial line,
    // and the rest of that line is discarded until a later newline.
    let long_partial = "w".repeat(3000);
    let long_partial_ansi = format!("\x1b[1m{}é", "v".repeat(2500));
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      seed
    };
    let mut truncated_somewhere = false;
    for _round in 0..200 {
      let mut fast = throttled();
      let mut exact = throttled();
      exact.fast_counting = false;
      let (mut a, mut b) = (Collect::default(), Collect::default());
      let mut now = 0;
      for _read in 0..20 {
        let mut chunk = String::new();
        for _ in 0..(next() % 12) {
          match next() % 40 {
            0 => chunk.push_str(&long_blank),
            1 => chunk.push_str(&long_line),
            2 | 3 => chunk.push_str(&long_partial),
            4 => chunk.push_str(&long_partial_ansi),
            k => chunk.push_str(pieces[k as usize % pieces.len()]),
          }
        }
        now += (next() % 700) as i64;
        let stream = if next() % 3 == 0 {
          Stream::Stderr
        } else {
          Stream::Stdout
        };
        // Cut the read anywhere, inside a character or escape sequence too:
        // the fast path must pick up where a held piece ends.
        let bytes = chunk.as_bytes();
        let cut = (next() as usize) % (bytes.len() + 1);
        for part in [&bytes[..cut], &bytes[cut..]] {
          fast.feed(stream, part, now, &mut a);
          exact.feed(stream, part, now, &mut b);
        }
        assert_eq!(a.lines, b.lines);
        assert_eq!(a.dropped, b.dropped);
        assert_eq!(fast.lines_seen(), exact.lines_seen());
        assert_eq!(fast.truncated_bytes(), exact.truncated_bytes());
      }
      fast.flush(now, &mut a);
      exact.flush(now, &mut b);
      assert_eq!((a.lines, a.dropped), (b.lines, b.dropped));
      assert_eq!(fast.truncated_bytes(), exact.truncated_bytes());
      truncated_somewhere |= fast.truncated_bytes() > 0;
    }
    assert!(truncated_somewhere, "the rounds exercise the discard state");
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

  /// Found by fuzz/fuzz_targets/monitor_pipeline.rs: with a clock that went back, the fast
  /// path's token probe moved the refill point on a read without a complete line (the exact
  /// path never looks at the bucket then), and a later line got a token early. Counted
  /// lines must move it as the exact path's `try_take` does.
  #[test]
  fn counting_fast_path_matches_the_exact_path_when_the_clock_goes_back() {
    let reads: [(&[u8], i64); 7] = [
      (b"a\nb\nc\nd\ne\n", 0),
      (b"partial", -1000),
      (b"x", 0),
      (b"\n", 0),
      (b"y\n", -1000),
      (b"z\n", 0),
      (b"w\n", 1000),
    ];
    let mut fast = throttled();
    let mut exact = throttled();
    exact.fast_counting = false;
    let (mut a, mut b) = (Collect::default(), Collect::default());
    for (bytes, now) in reads {
      fast.feed(Stream::Stdout, bytes, now, &mut a);
      exact.feed(Stream::Stdout, bytes, now, &mut b);
      assert_eq!((&a.lines, a.dropped), (&b.lines, b.dropped), "at {now}");
    }
    assert_eq!(b.lines, ["a", "b", "c", "d", "e", "z", "w"]);
    assert_eq!(b.dropped, 2);
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
}
