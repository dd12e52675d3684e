//! The fast paths against the exact path (`LinePipeline::set_fast_paths(false)`): random
//! reads, every shape of output a monitor meets, with and without a signal lane, at every
//! split.

use super::*;

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
    exact.fast_paths = false;
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

/// One pipeline with the fast paths and one without, fed the same reads;
/// they must agree on everything after every read and after the flush.
struct Twins {
  fast: LinePipeline,
  exact: LinePipeline,
  fast_out: Collect,
  exact_out: Collect,
}

impl Twins {
  fn new(throttle: Option<ThrottleConfig>) -> Self {
    Self::with_signal(throttle, SignalConfig::default())
  }

  fn with_signal(throttle: Option<ThrottleConfig>, signal: SignalConfig) -> Self {
    let mut exact = LinePipeline::with_signal(throttle, signal.clone(), 1_000_000, 0);
    exact.fast_paths = false;
    Self {
      fast: LinePipeline::with_signal(throttle, signal, 1_000_000, 0),
      exact,
      fast_out: Collect::default(),
      exact_out: Collect::default(),
    }
  }

  fn feed(&mut self, stream: Stream, bytes: &[u8], now: i64, what: &dyn Fn() -> String) {
    self.fast.feed(stream, bytes, now, &mut self.fast_out);
    self.exact.feed(stream, bytes, now, &mut self.exact_out);
    self.check(what);
  }

  /// Five lines that spend the burst at 0, `input` in two reads cut at `cut` at 1, a last
  /// line at 2, and the flush.
  fn feed_split(&mut self, input: &[u8], cut: usize, what: &dyn Fn() -> String) {
    self.feed(Stream::Stdout, b"1\n2\n3\n4\n5\n", 0, what);
    self.feed(Stream::Stdout, &input[..cut], 1, what);
    self.feed(Stream::Stdout, &input[cut..], 1, what);
    self.feed(Stream::Stdout, b"tail\n", 2, what);
    self.flush(2, what);
  }

  fn flush(&mut self, now: i64, what: &dyn Fn() -> String) {
    self.fast.flush(now, &mut self.fast_out);
    self.exact.flush(now, &mut self.exact_out);
    self.check(what);
    assert_eq!(
      self.fast.take_digest(),
      self.exact.take_digest(),
      "the terminal digest; {}",
      what()
    );
  }

  fn poll(&mut self, now: i64, what: &dyn Fn() -> String) {
    self.fast.poll(now, &mut self.fast_out);
    self.exact.poll(now, &mut self.exact_out);
    self.check(what);
  }

  fn check(&self, what: &dyn Fn() -> String) {
    // Compared without printing megabytes of lines when they differ.
    let (a, b) = (&self.fast_out, &self.exact_out);
    if a.lines != b.lines {
      let at = a.lines.iter().zip(&b.lines).position(|(x, y)| x != y);
      let show = |l: Option<&String>| l.map(|l| l.chars().take(200).collect::<String>());
      let at = at.unwrap_or(a.lines.len().min(b.lines.len()));
      panic!(
        "events differ at {at} ({} vs {}): {:?} vs {:?}; {}",
        a.lines.len(),
        b.lines.len(),
        show(a.lines.get(at)),
        show(b.lines.get(at)),
        what()
      );
    }
    assert_eq!(a.dropped, b.dropped, "droppedLines; {}", what());
    assert_eq!(a.notes, b.notes, "notifications and digests; {}", what());
    assert_eq!(
      self.fast.lines_seen(),
      self.exact.lines_seen(),
      "linesSeen; {}",
      what()
    );
    assert_eq!(
      self.fast.truncated_bytes(),
      self.exact.truncated_bytes(),
      "truncatedBytes; {}",
      what()
    );
  }
}

/// The shapes of output a monitor meets, as pieces to string together.
fn shape_pieces(shape: usize, rng: &mut XorShift) -> Vec<u8> {
  let pick = |rng: &mut XorShift, options: &[&[u8]]| options[rng.below(options.len())].to_vec();
  match shape {
    // Plain lines, blank and control-only ones among them.
    0 => pick(
      rng,
      &[
        b"y\n",
        b"\n",
        b"   \n",
        b"\t\r\n",
        b"\x01\x02\n",
        b"\x7f\n",
        b"a b c\n",
        b"ok",
      ],
    ),
    // Lines with ANSI colour and other escape sequences.
    1 => pick(
      rng,
      &[
        b"\x1b[32mINFO\x1b[0m some log text here\n",
        b"\x1b[1;31mERR\x1b[m x\n",
        b"\x1b[38;5;196mred\x1b[39m\n",
        b"\x1b[38;2;255;128;0mrgb\x1b[0m\n",
        b"\x1b[2K\r\x1b[1A\n",
        b"\x1b[0m\x1b[32m\x1b[0m\n",
        b"\x1b[12345mfive digits\n",
        b"\x1b[?25l\x1b[?25h\n",
        b"\x1b[1:2m\x1b[;1m\x1b[:5m\n",
        b"\x1b]0;title\x07t\n",
        b"\x1b]8;;https://x.test/\x1b\\link\x1b]8;;\x1b\\\n",
        b"\x1b]0;multi\nline\x07 osc\n",
        b"\x1b]0;unterminated ",
        b"\x1bDx\x1bW\x1b\n",
        b"\x1b[1;x\x1b[",
        b"\xc2\x9b31mc1\xc2\x9b0m\n",
        b"\x1b[32m",
      ],
    ),
    // Over-long lines: with and without newline, blank ones, whitespace at
    // the cap, escape sequences and non-ASCII in them.
    2 => match rng.below(7) {
      0 => vec![b'a'; 1 + rng.below(9000)],
      1 => {
        let mut line = vec![b' '; rng.below(10)];
        line.extend(std::iter::repeat_n(b'x', 4090 + rng.below(12)));
        line.extend(std::iter::repeat_n(b' ', rng.below(12)));
        line.push(b'\n');
        line
      }
      2 => [vec![b' '; 4000 + rng.below(200)], b"\x01\n".to_vec()].concat(),
      3 => "\x1b[32mINFO\x1b[0m no newline ever "
        .repeat(1 + rng.below(300))
        .into_bytes(),
      4 => "长".repeat(1 + rng.below(3000)).into_bytes(),
      5 => [vec![b'z'; 5000], b"\xff\xfe".to_vec()].concat(),
      _ => b"\n".to_vec(),
    },
    // `\r` redraws that never print `\n` (and rarely do).
    3 => match rng.below(6) {
      0 => format!("\rprogress {}%", rng.below(101)).into_bytes(),
      1 => format!("\r{}", "=".repeat(59)).into_bytes(),
      2 => format!(
        "\r\x1b[32m[{}]\x1b[0m {}%",
        "#".repeat(rng.below(20)),
        rng.below(101)
      )
      .into_bytes(),
      3 => b"\r\x1b[2K".to_vec(),
      4 if rng.below(20) == 0 => b"\n".to_vec(),
      _ => b"\r".to_vec(),
    },
    // Non-ASCII, invalid UTF-8, long OSC.
    _ => match rng.below(6) {
      0 => "你好世界，这是一行日志输出\n".as_bytes().to_vec(),
      1 => "é\u{a0}\u{3000}\u{feff}\u{85}\n".as_bytes().to_vec(),
      2 => b"\xe4\xbd\n\xff\n".to_vec(),
      3 => format!("\x1b]0;{}\x07after\n", "t\n".repeat(rng.below(3000))).into_bytes(),
      4 => format!("\x1b]0;{}", "u".repeat(rng.below(5000))).into_bytes(),
      _ => "😀 end\n".as_bytes().to_vec(),
    },
  }
}

/// Random text of one shape (or all mixed), read in random pieces on both
/// streams with the clock moving so that the throttle is sometimes full,
/// sometimes empty, and sometimes off: the fast paths give the exact path's
/// events, linesSeen, droppedLines and truncatedBytes, after every read.
#[test]
fn fast_paths_match_the_exact_path_for_every_shape() {
  let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
  let mut truncated = 0;
  for round in 0..600 {
    let mixed = round % 6 == 5;
    let shape = round % 6;
    let throttle = match round % 7 {
      0 => None,
      1 => Some(ThrottleConfig {
        burst: 2,
        refill_ms: 10,
      }),
      _ => Some(ThrottleConfig::default()),
    };
    let mut twins = Twins::new(throttle);
    let mut now = 0;
    let reads = 1 + rng.below(12);
    for read in 0..reads {
      let mut chunk = Vec::new();
      let bound = [64, 4096, 70_000][rng.below(3)];
      let size = rng.below(bound);
      while chunk.len() < size {
        let s = if mixed { rng.below(5) } else { shape };
        chunk.extend(shape_pieces(s, &mut rng));
      }
      now += [0, 0, 1, 300, 1000, 5000][rng.below(6)];
      let stream = if rng.below(4) == 0 {
        Stream::Stderr
      } else {
        Stream::Stdout
      };
      // Cut the chunk into reads of at most 64 KiB, anywhere.
      let mut start = 0;
      while start < chunk.len() || start == 0 {
        let end = (start + 1 + rng.below(65_536)).min(chunk.len());
        let end = if rng.below(3) == 0 {
          (start + rng.below(80)).min(chunk.len())
        } else {
          end
        };
        let bytes = &chunk[start..end];
        twins.feed(stream, bytes, now, &|| {
          format!(
            "round {round}, read {read}, bytes {start}..{end} of {}",
            chunk.len()
          )
        });
        start = end;
        if chunk.is_empty() {
          break;
        }
      }
    }
    twins.flush(now, &|| format!("round {round}, flush"));
    truncated += u64::from(twins.fast.truncated_bytes() > 0);
  }
  assert!(truncated > 50, "{truncated} rounds truncated");
}

/// With a signal lane in place of the bucket (§6.7), the counting fast
/// path (allowed while the lane `counts_only`) gives the exact path's lines,
/// in the same windows, and the same drops and digests; with `important` or
/// `digest`, runs of plain lines are counted (the plain-lines path, see
/// `plain_fast_path_matches_the_exact_path_with_important_and_digest`).
#[test]
fn fast_paths_match_the_exact_path_with_a_signal_lane() {
  use crate::monitor::signal::SignalOptions;
  let signals = [
    (Some(10.0), Some(1.0), None, false),
    (Some(200.0), None, None, false),
    (Some(1000.0), Some(3.0), None, false),
    (Some(200.0), None, Some("(?i)err|y"), true),
    (None, None, Some("x"), false),
    (None, None, None, true),
  ];
  let mut rng = XorShift(0x51C_4A1E);
  let mut counted_rounds = 0;
  for round in 0..240 {
    let (batch_ms, max_batch_lines, important, digest) = signals[round % signals.len()];
    let signal = SignalConfig::new(SignalOptions {
      batch_ms,
      max_batch_lines,
      important,
      digest,
      ..Default::default()
    })
    .unwrap();
    let throttle = match round % 5 {
      0 => None,
      1 => Some(ThrottleConfig {
        burst: 2,
        refill_ms: 10,
      }),
      _ => Some(ThrottleConfig::default()),
    };
    let mut twins = Twins::with_signal(throttle, signal);
    let mut now = 0;
    for read in 0..(1 + rng.below(10)) {
      let mut chunk = Vec::new();
      let bound = [64, 4096, 70_000][rng.below(3)];
      let size = rng.below(bound);
      while chunk.len() < size {
        let shape = rng.below(5);
        chunk.extend(shape_pieces(shape, &mut rng));
      }
      now += [0, 0, 1, 5, 300, 1000][rng.below(6)];
      if rng.below(3) == 0 {
        twins.fast.poll(now, &mut twins.fast_out);
        twins.exact.poll(now, &mut twins.exact_out);
      }
      let stream = if rng.below(4) == 0 {
        Stream::Stderr
      } else {
        Stream::Stdout
      };
      let cut = rng.below(chunk.len() + 1);
      for (part, bytes) in [&chunk[..cut], &chunk[cut..]].into_iter().enumerate() {
        twins.feed(stream, bytes, now, &|| {
          format!("round {round}, read {read}.{part}")
        });
      }
      counted_rounds += usize::from(twins.fast.admission.counts_only(now));
    }
    twins.flush(now, &|| format!("round {round}, flush"));
  }
  assert!(counted_rounds > 50, "{counted_rounds} reads ended counting");
}

/// Lines a lane with `important` and `digest` meets: a firehose (`y`), important lines plain
/// and padded, and lines that are important only after sanitising (controls inside, a final
/// `\r`, ANSI, C1 and Unicode whitespace at the ends), or that look important raw and are not
/// (a `\r` redraw), tags, long lines around the cap, blank lines and partial lines.
fn signal_piece(rng: &mut XorShift) -> Vec<u8> {
  let pieces: [&[u8]; 34] = [
    b"ready\n",
    b"  ready  \n",
    b"\tERROR: boom\t\n",
    b"server listening on 3000\n",
    b"errors\n",
    b"readying\n",
    b"not ready yet\n",
    b"fail",
    b"\x1b[31merror\x1b[0m\n",
    b"\x1b[32mINFO\x1b[0m y\n",
    b"err\x01or\n",
    b"fa\x7fil\n",
    b"<result>fail</result>\n",
    b"x <b> y\n",
    b"ready\r\n",
    b"y\r\n",
    b"x\rready\n",
    b"ready\rx\n",
    b"\r\n",
    b"\xc2\x85panic\xc2\x85\n",
    "\u{a0}ready\u{3000}\n".as_bytes(),
    "é error\n".as_bytes(),
    b"\xff panic\n",
    b"   \n",
    b"\t\t\n",
    b"\n",
    b"\x01\n",
    b"y y\n",
    b" y\n",
    b"y \n",
    b"P\n",
    b"\x1b]0;ready\x07y\n",
    b"\x1b[",
    b"ERROR",
  ];
  match rng.below(40) {
    0..=24 => b"y\n".to_vec(),
    25 => {
      let mut long = vec![b'a'; 4094 + rng.below(5)];
      if rng.below(2) == 0 {
        long.extend_from_slice(b" ready");
      }
      long.push(b'\n');
      long
    }
    26 => [b"ready".as_slice(), &vec![b' '; 4093 + rng.below(5)], b"\n"].concat(),
    _ => pieces[rng.below(pieces.len())].to_vec(),
  }
}

/// A lane with `important` and/or `digest` on firehose-like and adversarial text, read in
/// pieces cut anywhere (inside lines, chars and escape sequences), with the throttle empty
/// most of the time: the plain-lines fast path gives the exact path's notifications, lines,
/// drops and digests, for patterns with and without anchors and word boundaries.
#[test]
fn plain_fast_path_matches_the_exact_path_with_important_and_digest() {
  use crate::monitor::signal::SignalOptions;
  let patterns = [
    "(?i)error|fail|exception|panic|listening|ready",
    "^ready$",
    "^error",
    "(?i)fail$",
    r"\bpanic\b",
    r"\Aready\z",
    "(?m)^y$",
    "(?i)^p$",
    "^$|x*",
    "\u{200B}",
    "ERROR",
    "y",
    r"y\s",
    r"\ty",
  ];
  let mut rng = XorShift(0x00DE_C1DE);
  let mut plain_reads = 0;
  for round in 0..400 {
    let pattern = patterns[round % patterns.len()];
    let (batch_ms, max_batch_lines, important, digest) = match (round / patterns.len()) % 6 {
      0 => (None, None, Some(pattern), true),
      1 => (Some(200.0), None, Some(pattern), true),
      2 => (Some(10.0), Some(3.0), Some(pattern), false),
      3 => (None, None, Some(pattern), false),
      4 => (Some(200.0), Some(1.0), None, true),
      _ => (None, None, None, true),
    };
    let signal = SignalConfig::new(SignalOptions {
      batch_ms,
      max_batch_lines,
      important,
      digest,
      ..Default::default()
    })
    .unwrap();
    let throttle = match round % 9 {
      0 => None,
      1 | 2 => Some(ThrottleConfig {
        burst: 2,
        refill_ms: 10,
      }),
      _ => Some(ThrottleConfig::default()),
    };
    let mut twins = Twins::with_signal(throttle, signal);
    let mut now = 0;
    for read in 0..(1 + rng.below(12)) {
      let mut chunk = Vec::new();
      let bound = [64, 4096, 70_000][rng.below(3)];
      let size = rng.below(bound);
      while chunk.len() < size {
        chunk.extend(signal_piece(&mut rng));
      }
      now += [0, 0, 0, 1, 5, 300, 1000][rng.below(7)];
      if rng.below(4) == 0 {
        twins.poll(now, &|| format!("round {round} ({pattern}), poll {read}"));
      }
      let stream = if rng.below(4) == 0 {
        Stream::Stderr
      } else {
        Stream::Stdout
      };
      let mut start = 0;
      loop {
        let end = if rng.below(3) == 0 {
          start + rng.below(80)
        } else {
          start + 1 + rng.below(65_536)
        }
        .min(chunk.len());
        plain_reads += usize::from(
          twins.fast.admission.counts_plain(now) != Counting::Off
            && !twins.fast.admission.counts_only(now),
        );
        twins.feed(stream, &chunk[start..end], now, &|| {
          format!(
            "round {round} ({pattern}, {batch_ms:?}, digest {digest}), read {read}, bytes {start}..{end} of {}",
            chunk.len()
          )
        });
        start = end;
        if start >= chunk.len() {
          break;
        }
      }
    }
    twins.flush(now, &|| format!("round {round} ({pattern}), flush"));
  }
  assert!(plain_reads > 500, "{plain_reads} reads took the plain path");
}

/// A firehose of plain lines with important, coloured, control, over-long and non-ASCII lines
/// after it, and where to split it in two reads: at every offset, but for every 97th inside
/// the over-long line.
fn split_input() -> (Vec<u8>, Vec<usize>) {
  let input = [
    "y\n".repeat(40).as_str(),
    "  ready  \ny\ny\n",
    "err\x01or\n",
    "y\r\n".repeat(10).as_str(),
    "\x1b[31mpanic\x1b[0m\ny\n",
    "fail\n",
    &format!("{}\ny\n", "x".repeat(4097)),
    "\u{a0}listening\n",
    &"y\n".repeat(30),
    "not ready",
  ]
  .concat()
  .into_bytes();
  let x = input.windows(4).position(|w| w == b"xxxx").unwrap();
  let long = x + 8..x + 4088;
  let cuts = (0..=input.len())
    .filter(|&cut| !long.contains(&cut) || (cut - long.start).is_multiple_of(97))
    .collect();
  (input, cuts)
}

/// The same, with a two-read split at every offset of one input, after the burst is spent.
#[test]
fn plain_fast_path_matches_the_exact_path_at_every_split() {
  use crate::monitor::signal::SignalOptions;
  let (input, cuts) = split_input();
  let input = input.as_slice();
  for pattern in [
    "(?i)error|fail|panic|listening|ready",
    "^ready$",
    r"\bfail\b",
    "y$",
  ] {
    for (batch_ms, digest) in [(None, true), (Some(200.0), true), (Some(10.0), false)] {
      let signal = SignalConfig::new(SignalOptions {
        batch_ms,
        max_batch_lines: None,
        important: Some(pattern),
        digest,
        ..Default::default()
      })
      .unwrap();
      for &cut in &cuts {
        let mut twins = Twins::with_signal(Some(ThrottleConfig::default()), signal.clone());
        let what = || format!("{pattern}, {batch_ms:?}, digest {digest}, cut at {cut}");
        twins.feed_split(input, cut, &what);
      }
    }
  }
}

/// The budget options (`sampleLines`, `contextBefore`/`contextAfter`, `digest: 'templates'`):
/// the fast path parks and drops what the exact path does, at every split.
#[test]
fn budget_fast_path_matches_the_exact_path_at_every_split() {
  use crate::monitor::signal::SignalOptions;
  let (input, cuts) = split_input();
  let input = input.as_slice();
  for pattern in ["(?i)error|fail|panic|listening|ready", r"\bfail\b"] {
    for (batch_ms, samples, before, after, templates) in [
      (200.0, 1.0, 3.0, 3.0, true),
      (200.0, 0.0, 0.0, 2.0, false),
      (1000.0, 2.0, 5.0, 0.0, true),
      (10.0, 0.0, 8.0, 8.0, true),
      // Sampling without context: runs are counted by the plain path alone.
      (200.0, 1.0, 0.0, 0.0, true),
      (1000.0, 0.0, 0.0, 0.0, false),
    ] {
      let signal = SignalConfig::new(SignalOptions {
        batch_ms: Some(batch_ms),
        important: Some(pattern),
        digest: true,
        digest_templates: templates,
        sample_lines: Some(samples),
        context_before: Some(before),
        context_after: Some(after),
        ..Default::default()
      })
      .unwrap();
      for &cut in &cuts {
        let mut twins = Twins::with_signal(Some(ThrottleConfig::default()), signal.clone());
        let what =
          || format!("{pattern}, {batch_ms} {samples} {before} {after} {templates}, cut at {cut}");
        twins.feed_split(input, cut, &what);
      }
    }
  }
}

/// Pending `match` waits and `settleMs` ([`Observe::Lines`]): the fast paths count the runs
/// of plain lines in which no pattern can match and show the sink every other line, so the
/// lines the waits' patterns match, in order, the last line (for `settleMs`) and every event,
/// drop and digest are those of the exact path observing every line; with a two-read split
/// at every offset, after the burst is spent, under the token bucket and under lanes.
#[test]
fn wait_patterns_see_every_line_they_match_at_every_split() {
  use crate::monitor::signal::SignalOptions;
  use crate::wait::{WaitSet, WaitSpec};
  use regex::Regex;
  let (input, cuts) = split_input();
  let input = input.as_slice();
  // One line per window, so the five lines before the input spend the burst.
  let lanes = [
    SignalConfig::default(),
    SignalConfig::new(SignalOptions {
      batch_ms: Some(200.0),
      max_batch_lines: Some(1.0),
      important: Some("(?i)fail"),
      digest: true,
      ..Default::default()
    })
    .unwrap(),
    SignalConfig::new(SignalOptions {
      batch_ms: Some(10.0),
      max_batch_lines: Some(1.0),
      important: None,
      digest: false,
      ..Default::default()
    })
    .unwrap(),
  ];
  for patterns in [
    &["(?i)error|fail|panic|listening|ready"][..],
    &["^ready$"],
    &[r"\bfail\b", "^y$"],
    &["y$"],
    &["never"],
    &[],
  ] {
    let mut waits = WaitSet::default();
    for (id, pattern) in patterns.iter().enumerate() {
      let spec = WaitSpec {
        matcher: Some(Regex::new(pattern).unwrap()),
        ..WaitSpec::default()
      };
      waits.add(id as u64, spec, 0);
    }
    assert!(waits.line_matcher().is_none(), "built on refresh");
    waits.refresh_line_matcher();
    let matcher = waits.line_matcher();
    assert_eq!(
      matcher.is_some(),
      !patterns.is_empty(),
      "plain-searchable patterns"
    );
    let regexes: Vec<Regex> = patterns.iter().map(|p| Regex::new(p).unwrap()).collect();
    let matched = |lines: &[String]| -> Vec<String> {
      lines
        .iter()
        .filter(|l| regexes.iter().any(|r| r.is_match(l)))
        .cloned()
        .collect()
    };
    for signal in &lanes {
      let mut counted_somewhere = false;
      for &cut in &cuts {
        let mut twins = Twins::with_signal(Some(ThrottleConfig::default()), signal.clone());
        // Without patterns: `settleMs` alone.
        let last_line = patterns.is_empty() || cut % 2 == 0;
        twins.fast.set_observing(Observe::Lines {
          matcher: matcher.clone(),
          last_line,
        });
        twins.exact.set_observing(Observe::Every);
        let what = || format!("{patterns:?}, {signal:?}, cut at {cut}");
        twins.feed_split(input, cut, &what);
        assert_eq!(
          matched(&twins.fast_out.seen),
          matched(&twins.exact_out.seen),
          "matching lines seen; {}",
          what()
        );
        if last_line {
          assert_eq!(
            twins.fast_out.last.as_ref(),
            twins.exact_out.seen.last(),
            "the last line; {}",
            what()
          );
        }
        counted_somewhere |= twins.fast_out.seen.len() < twins.exact_out.seen.len();
      }
      // Unless a pattern matches the flood's own lines, some of them were only counted.
      let flood_matches = regexes.iter().any(|r| r.is_match("y"));
      assert!(
        counted_somewhere || flood_matches,
        "{patterns:?}, {signal:?}: lines no pattern matches were only counted"
      );
    }
  }
}

/// Two-read splits of inputs of each shape (every one near the cap and the
/// ends, some elsewhere), throttle full, empty and off: the fast paths agree
/// with the exact path.
#[test]
fn fast_paths_match_the_exact_path_at_every_split() {
  let long = "l".repeat(5000);
  let inputs: Vec<Vec<u8>> = vec![
    format!("{}\nnext\n", "a".repeat(4200)).into_bytes(),
    "a".repeat(4100).into_bytes(),
    format!("  {}  \x01\n{long}\nq\n", "x".repeat(4095)).into_bytes(),
    "\x1b[32mINFO\x1b[0m some log text here\n"
      .repeat(3)
      .into_bytes(),
    format!(
      "{}\x1b[32mINFO\x1b[0m x\n",
      "\x1b[32mINFO\x1b[0m no newline ever ".repeat(140)
    )
    .into_bytes(),
    (0..400)
      .map(|i| format!("\rprogress {i}%"))
      .collect::<String>()
      .into_bytes(),
    format!(
      "{}\r\x1b[32m[###]\x1b[0m\nok\n",
      "\r\x1b[32m[##########]\x1b[0m 50%".repeat(130)
    )
    .into_bytes(),
    format!("{long}\x1b]0;t\nx\x07y\x1b[1;31mz\nw\n").into_bytes(),
    format!("{long}\x1b]0;{}\x07after\nw\n", "t".repeat(4100)).into_bytes(),
    format!("{long}é你\u{85}\n\x1b[3").into_bytes(),
  ];
  for (n, input) in inputs.iter().enumerate() {
    for throttle in [None, Some(ThrottleConfig::default())] {
      for now in [0, 1] {
        let near = |cut: usize| {
          cut < 150
            || cut + 150 > input.len()
            || (4040..4160).contains(&cut)
            || cut.is_multiple_of(97)
        };
        for cut in (0..=input.len()).filter(|&cut| near(cut)) {
          let mut twins = Twins::new(throttle);
          if now > 0 {
            // Spend the burst first: every read of the input is throttled out.
            twins.feed(Stream::Stdout, b"1\n2\n3\n4\n5\n", 0, &|| String::new());
          }
          let what = || format!("input {n}, {throttle:?}, now {now}, cut at {cut}");
          twins.feed(Stream::Stdout, &input[..cut], 0, &what);
          twins.feed(Stream::Stdout, &input[cut..], 0, &what);
          twins.feed(Stream::Stdout, b"tail\n", 0, &what);
          twins.flush(0, &what);
        }
      }
    }
  }
}

/// `\r` is no line separator (CONTRACT.md §2.10): the frames of a progress
/// bar that never prints `\n` are one physical line, cut once at 4096
/// units (the sanitiser then removes the CRs from the event) and discarded
/// from there up to the `\n` that finally comes. The fast paths agree, with
/// the throttle full, empty and off, in any reads.
#[test]
fn carriage_return_redraws_are_one_physical_line() {
  let frames: String = (0..2000).map(|i| format!("\rprogress {i}%")).collect();
  let cut: String = frames[1..]
    .chars()
    .take(4096)
    .filter(|&c| c != '\r')
    .collect();
  for throttle in [None, Some(ThrottleConfig::default())] {
    for spent in [false, true] {
      for read in [100, 4096, 5000, 65536] {
        let mut twins = Twins::new(throttle);
        if spent {
          twins.feed(Stream::Stdout, b"1\n2\n3\n4\n5\n", 0, &String::new);
        }
        for piece in frames.as_bytes().chunks(read) {
          twins.feed(Stream::Stdout, piece, 0, &|| format!("reads of {read}"));
        }
        twins.feed(Stream::Stdout, b"\ndone\n", 1000, &String::new);
        let events = &twins.fast_out.lines[if spent { 5 } else { 0 }..];
        if spent && throttle.is_some() {
          assert_eq!(events, ["done"]);
        } else {
          assert_eq!(events, [format!("{cut}..."), "done".to_owned()]);
        }
        // Everything after the kept units but the leading `\r` (trimmed).
        assert_eq!(
          twins.fast.truncated_bytes(),
          (frames.len() - 1 - 4096) as u64
        );
      }
    }
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
  exact.fast_paths = false;
  let (mut a, mut b) = (Collect::default(), Collect::default());
  for (bytes, now) in reads {
    fast.feed(Stream::Stdout, bytes, now, &mut a);
    exact.feed(Stream::Stdout, bytes, now, &mut b);
    assert_eq!((&a.lines, a.dropped), (&b.lines, b.dropped), "at {now}");
  }
  assert_eq!(b.lines, ["a", "b", "c", "d", "e", "z", "w"]);
  assert_eq!(b.dropped, 2);
}
