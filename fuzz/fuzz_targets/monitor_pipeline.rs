//! The native monitor's byte-to-event pipeline (CONTRACT.md §2.3 layers 1–5, §2.10, §3.10):
//! `LinePipeline` with its firehose fast path, over fuzzer-chosen reads on stdout and stderr,
//! clock steps (backwards too), throttle settings, mid-stream flushes and a close.
//!
//! Input: `[config][h][n × (u16 LE length, u8 control)][payload]`, `h` as in
//! `taskstream_fuzz::Cuts` (low 5 bits `n`, high 3 bits the repeat). `config` bit 0 turns the
//! throttle on, bits 1–2 pick its burst and bits 3–4 its refill interval. Each read's control
//! byte: bit 0 the stream, bits 1–4 a clock step, bit 5 a flush after the read, bits 6 and 7
//! together a close after it.
//!
//! For every input: the pipeline gives, after every step, the same accepted lines, dropped
//! count and `lines_seen` as a model of its exact path built from the public pieces
//! (`CleanTextStream`, `LineSplitter::push`, `TokenBucket`, `sanitize_monitor_line`), the
//! reference of `counting_fast_path_matches_the_exact_path` (src/core/monitor/pipeline/tests/equivalence.rs).
//!
//! For inputs meeting the streaming preconditions (every sequence decided within 4096 chars,
//! every clean line within 4096 units): the payload on one stream at one time, in the chosen
//! reads, gives the events, drops and `lines_seen` of the payload in one read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskstream_core::monitor::pipeline::{LinePipeline, LineSink, Stream};
use taskstream_core::monitor::throttle::{ThrottleConfig, TokenBucket};
use taskstream_core::text::{
  ecma_trim, sanitize_monitor_line, strip_ansi, CleanTextStream, LineSplitter,
};
use taskstream_fuzz::{controlled_reads, lines_within_cap, within_hold_bound};

/// Clock steps in ms, by bits 1–4 of a read's control byte.
const CLOCK_STEPS: [i64; 16] = [
  0, 0, 0, 1, 10, 100, 333, 999, 1000, 1001, 2000, 5000, -1, -1000, 100_000, 0,
];

#[derive(Debug, Default, PartialEq, Eq, Clone)]
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

/// The exact path, from the public pieces.
struct Model {
  streams: [(CleanTextStream, LineSplitter); 2],
  bucket: Option<TokenBucket>,
  closed: bool,
}

impl Model {
  fn new(throttle: Option<ThrottleConfig>) -> Self {
    Model {
      streams: Default::default(),
      bucket: throttle.map(|c| TokenBucket::new(c, 0)),
      closed: false,
    }
  }

  fn feed(&mut self, stream: Stream, bytes: &[u8], now: i64, sink: &mut Collect) {
    if self.closed {
      return;
    }
    let (text, splitter) = &mut self.streams[stream as usize];
    let bucket = &mut self.bucket;
    let clean = text.push(bytes);
    splitter.push(clean, &mut |line| emit(bucket, line, now, sink));
  }

  fn flush(&mut self, now: i64, sink: &mut Collect) {
    if self.closed {
      return;
    }
    let bucket = &mut self.bucket;
    for (text, splitter) in &mut self.streams {
      // As LinePipeline::flush ends its streams: a held sequence is released as unterminated
      // (CONTRACT.md §3.17).
      let clean = text.finish();
      splitter.push(clean, &mut |line| emit(bucket, line, now, sink));
      splitter.flush(&mut |line| emit(bucket, line, now, sink));
    }
  }

  fn close(&mut self) {
    self.closed = true;
    for (text, splitter) in &mut self.streams {
      splitter.discard();
      text.discard_pending();
    }
  }

  fn lines_seen(&self) -> u64 {
    self.streams.iter().map(|(_, s)| s.pieces()).sum()
  }
}

/// §2.10 throttledEmit by its definition: a line that sanitises to blank costs nothing.
fn emit(bucket: &mut Option<TokenBucket>, line: &str, now: i64, sink: &mut Collect) {
  let sanitized = sanitize_monitor_line(line);
  if ecma_trim(&sanitized).is_empty() {
    return;
  }
  if let Some(bucket) = bucket {
    if !bucket.try_take(now) {
      sink.dropped();
      return;
    }
  }
  sink.accepted(&sanitized);
}

fuzz_target!(|data: &[u8]| {
  let (config, rest) = data.split_first().map_or((0, data), |(c, r)| (*c, r));
  let (header, rest) = rest.split_first().map_or((0, rest), |(h, r)| (*h, r));
  let throttle = (config & 1 == 1).then(|| ThrottleConfig {
    burst: [5, 1, 0, 3][usize::from(config >> 1 & 3)],
    refill_ms: [1000, 1, 0, 250][usize::from(config >> 3 & 3)],
  });
  let (bytes, steps) = controlled_reads(header, rest);

  // (A) The pipeline against the model of its exact path, step by step.
  let mut pipeline = LinePipeline::new(throttle, 0);
  let mut model = Model::new(throttle);
  let (mut got, mut want) = (Collect::default(), Collect::default());
  let mut now = 0i64;
  for (index, &((start, end), control)) in steps.iter().enumerate() {
    let stream = if control & 1 == 0 {
      Stream::Stdout
    } else {
      Stream::Stderr
    };
    now += CLOCK_STEPS[usize::from(control >> 1 & 0xf)];
    pipeline.feed(stream, &bytes[start..end], now, &mut got);
    model.feed(stream, &bytes[start..end], now, &mut want);
    assert_eq!(got, want, "after read {index}");
    assert_eq!(
      pipeline.lines_seen(),
      model.lines_seen(),
      "lines_seen after read {index}"
    );
    if control & 0x20 != 0 {
      pipeline.flush(now, &mut got);
      model.flush(now, &mut want);
      assert_eq!(got, want, "after the flush after read {index}");
    }
    if control & 0xc0 == 0xc0 {
      pipeline.close();
      model.close();
      assert!(pipeline.is_closed());
    }
  }
  for _ in 0..2 {
    pipeline.flush(now, &mut got);
    model.flush(now, &mut want);
    assert_eq!(got, want, "after the final flush");
    assert_eq!(
      pipeline.lines_seen(),
      model.lines_seen(),
      "final lines_seen"
    );
  }
  pipeline.close();
  let before = got.clone();
  pipeline.feed(Stream::Stdout, b"late line\n", now, &mut got);
  pipeline.flush(now, &mut got);
  assert_eq!(got, before, "a closed pipeline emitted");

  // (B) Cuts change nothing, for inputs meeting the streaming preconditions.
  let whole = String::from_utf8_lossy(&bytes);
  if within_hold_bound(&whole) && lines_within_cap(&strip_ansi(&whole)) {
    let run = |reads: &[(usize, usize)]| {
      let mut pipeline = LinePipeline::new(throttle, 0);
      let mut sink = Collect::default();
      for &(start, end) in reads {
        pipeline.feed(Stream::Stdout, &bytes[start..end], 0, &mut sink);
      }
      pipeline.flush(0, &mut sink);
      (sink, pipeline.lines_seen())
    };
    let ranges: Vec<(usize, usize)> = steps.iter().map(|&(range, _)| range).collect();
    assert_eq!(
      run(&ranges),
      run(&[(0, bytes.len())]),
      "the reads changed the events"
    );
  }
});
