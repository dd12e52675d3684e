//! The native monitor's pipeline with a §6.7 signal lane (`batchMs`, `maxBatchLines`,
//! `important`, `digest`): with its fast paths (runs of plain lines counted and searched from
//! the raw bytes, the first-byte skip, whole clean blocks) against the same pipeline with the
//! fast paths off, over fuzzer-chosen reads on stdout and stderr, clock steps, window polls,
//! flushes and a close.
//!
//! Input: `[config][options][h][n × (u16 LE length, u8 control)][payload]`, `h` as in
//! `taskstream_fuzz::Cuts`. `config` bit 0 turns the throttle on, bits 1–2 pick its burst and
//! bits 3–4 its refill interval. `options`: bits 0–3 pick `important` from [`PATTERNS`] (none
//! past its end), bits 4–5 `batchMs` (none, 10, 200, 1000), bits 6 `maxBatchLines` 3 (else the
//! default 20) and bit 7 `digest`. Each read's control byte: bit 0 the stream, bits 1–4 a clock
//! step, bit 5 a window poll after the read, bit 6 a flush after it, bits 6 and 7 together a
//! close instead.
//!
//! For every input, after every step: the same notifications (lines, batches, digests), drops
//! and `lines_seen`; no batch (a window, or important lines held for the next token) over
//! `maxBatchLines` lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskstream_core::monitor::pipeline::{LinePipeline, LineSink, Stream};
use taskstream_core::monitor::signal::{Out, SignalConfig, SignalOptions};
use taskstream_core::monitor::throttle::ThrottleConfig;
use taskstream_fuzz::controlled_reads;

/// `important` patterns: the README's, anchors, word boundaries, case folding, classes, one
/// that may match the empty string, and non-ASCII.
const PATTERNS: [&str; 12] = [
  "(?i)error|fail|exception|panic|listening|ready",
  "^ready$",
  "^error",
  "(?i)fail$",
  r"\bpanic\b",
  r"\Aready\z",
  "(?i)k",
  "[0-9]+ failed",
  "^$|x*",
  "é",
  "y",
  r"\ty",
];

/// Clock steps in ms, by bits 1–4 of a read's control byte.
const CLOCK_STEPS: [i64; 16] = [
  0, 0, 0, 1, 5, 10, 100, 199, 200, 201, 999, 1000, 1001, 5000, -1, 0,
];

#[derive(Debug, Default, PartialEq, Eq)]
struct Collect {
  out: Vec<Out>,
  accepted: Vec<String>,
  dropped: u64,
}

impl LineSink for Collect {
  fn accepted(&mut self, line: &str) {
    self.accepted.push(line.to_owned());
  }
  fn dropped(&mut self) {
    self.dropped += 1;
  }
  fn dropped_many(&mut self, lines: u64) {
    self.dropped += lines;
  }
  fn out(&mut self, out: Out) {
    self.out.push(out);
  }
}

fuzz_target!(|data: &[u8]| {
  let (config, rest) = data.split_first().map_or((0, data), |(c, r)| (*c, r));
  let (options, rest) = rest.split_first().map_or((0, rest), |(o, r)| (*o, r));
  let (header, rest) = rest.split_first().map_or((0, rest), |(h, r)| (*h, r));
  let throttle = (config & 1 == 1).then(|| ThrottleConfig {
    burst: [5, 1, 0, 3][usize::from(config >> 1 & 3)],
    refill_ms: [1000, 1, 0, 250][usize::from(config >> 3 & 3)],
  });
  let max_batch_lines: u32 = if options & 0x40 != 0 { 3 } else { 20 };
  let signal = SignalConfig::new(SignalOptions {
    batch_ms: [None, Some(10.0), Some(200.0), Some(1000.0)][usize::from(options >> 4 & 3)],
    max_batch_lines: (options & 0x40 != 0).then_some(f64::from(max_batch_lines)),
    important: PATTERNS.get(usize::from(options & 0xf)).copied(),
    digest: options & 0x80 != 0,
    ..Default::default()
  })
  .expect("valid options");
  let (bytes, steps) = controlled_reads(header, rest);

  let mut fast = LinePipeline::with_signal(throttle, signal.clone(), 1_000_000, 0);
  let mut exact = LinePipeline::with_signal(throttle, signal, 1_000_000, 0);
  exact.set_fast_paths(false);
  let (mut got, mut want) = (Collect::default(), Collect::default());
  let mut now = 0i64;
  for (index, &((start, end), control)) in steps.iter().enumerate() {
    let stream = if control & 1 == 0 {
      Stream::Stdout
    } else {
      Stream::Stderr
    };
    now += CLOCK_STEPS[usize::from(control >> 1 & 0xf)];
    fast.feed(stream, &bytes[start..end], now, &mut got);
    exact.feed(stream, &bytes[start..end], now, &mut want);
    assert_eq!(got, want, "after read {index}");
    assert_eq!(
      fast.lines_seen(),
      exact.lines_seen(),
      "lines_seen after read {index}"
    );
    if control & 0x20 != 0 {
      fast.poll(now, &mut got);
      exact.poll(now, &mut want);
      assert_eq!(got, want, "after the poll after read {index}");
    }
    match control & 0xc0 {
      0xc0 => {
        fast.close();
        exact.close();
      }
      0x40 => {
        fast.flush(now, &mut got);
        exact.flush(now, &mut want);
        assert_eq!(got, want, "after the flush after read {index}");
      }
      _ => {}
    }
  }
  fast.flush(now, &mut got);
  exact.flush(now, &mut want);
  assert_eq!(got, want, "after the last flush");
  for out in &got.out {
    if let Out::Batch { lines, .. } = out {
      assert!(
        (1..=max_batch_lines as usize).contains(&lines.len()),
        "a batch of {} lines",
        lines.len()
      );
    }
  }
});
