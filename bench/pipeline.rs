//! Throughput of the native monitor's line pipeline (decode, strip, split,
//! sanitise check, throttle) on the output shapes a monitor meets, without any
//! process: the CPU cost per MB that a monitor pays for its pipeline alone.
//!
//! Each row feeds one stream as 64 KiB reads (the native read size) into one
//! pipeline with the default throttle, one millisecond of clock per 1000
//! reads, so after the first burst the throttle has no token (the firehose
//! case). Reported: MB (10^6 bytes) per second of this thread's CPU time, the
//! best of three runs, and what the pipeline decided.
//!
//! Run: `cargo bench --bench pipeline` (a benchmark, never a test); `ONLY=<text>`
//! runs the rows whose name holds it. Numbers drift with the machine's load;
//! compare rows of one run.

use std::time::Instant;

use taskstream_core::monitor::pipeline::{LinePipeline, LineSink, Stream};
use taskstream_core::monitor::signal::config::{SignalConfig, SignalOptions, RECOMMENDED};
use taskstream_core::monitor::throttle::ThrottleConfig;

const READ: usize = 64 * 1024;
const RUNS: usize = 3;

#[derive(Default)]
struct Count {
  accepted: u64,
  dropped: u64,
}

impl LineSink for Count {
  fn accepted(&mut self, _line: &str) {
    self.accepted += 1;
  }
  fn dropped(&mut self) {
    self.dropped += 1;
  }
}

/// This thread's CPU time in seconds (wall time where there is no such clock).
#[cfg(unix)]
fn cpu_seconds() -> f64 {
  let mut ts = libc::timespec {
    tv_sec: 0,
    tv_nsec: 0,
  };
  // SAFETY: `ts` is a valid timespec to write to.
  unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
  ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(not(unix))]
fn cpu_seconds() -> f64 {
  use std::sync::OnceLock;
  static START: OnceLock<Instant> = OnceLock::new();
  START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// A stream made of `unit` repeated to at least `min_len` bytes, cut into
/// 64 KiB reads, the last one shorter. The reads are fed in a cycle.
fn reads_of(unit: &[u8], min_len: usize) -> Vec<Vec<u8>> {
  let copies = min_len.div_ceil(unit.len()).max(1);
  unit
    .repeat(copies)
    .chunks(READ)
    .map(<[u8]>::to_vec)
    .collect()
}

fn run(name: &str, reads: &[Vec<u8>], total_mb: usize) {
  run_with(name, reads, total_mb, &SignalOptions::default());
}

/// The earlier recommended setting (200 ms windows, no sampling, no context).
const RECOMMENDED_200: SignalOptions<'static> = SignalOptions {
  batch_ms: Some(200.0),
  max_batch_lines: None,
  important: Some("(?i)error|fail|exception|panic|listening|ready"),
  digest: true,
  digest_templates: false,
  context_before: None,
  context_after: None,
  sample_lines: None,
};

/// [`run`] with §6.7 options (a signal lane when they are not the default).
fn run_with(name: &str, reads: &[Vec<u8>], total_mb: usize, signal: &SignalOptions) {
  if std::env::var("ONLY").is_ok_and(|only| !name.contains(&only)) {
    return;
  }
  let per_cycle: usize = reads.iter().map(Vec::len).sum();
  let cycles = (total_mb * 1_000_000).div_ceil(per_cycle);
  let mut best = f64::INFINITY;
  let mut sink = Count::default();
  for _ in 0..RUNS {
    let config = SignalConfig::new(*signal).expect("valid options");
    let mut pipeline =
      LinePipeline::with_signal(Some(ThrottleConfig::default()), config, 10_000, 0);
    sink = Count::default();
    let start = cpu_seconds();
    let mut i = 0usize;
    for _ in 0..cycles {
      for read in reads {
        pipeline.feed(Stream::Stdout, read, (i / 1000) as i64, &mut sink);
        i += 1;
      }
    }
    best = best.min(cpu_seconds() - start);
  }
  let mb = (cycles * per_cycle) as f64 / 1e6;
  println!(
    "{name:<40} {:>8.0} MB/s  ({} accepted, {} dropped)",
    mb / best,
    sink.accepted,
    sink.dropped
  );
}

fn main() {
  let wall = Instant::now();
  // Lines the throttle rejects: only counted.
  let yes = format!("{}\n", "y".repeat(59));
  run("yes, 60-byte lines", &reads_of(yes.as_bytes(), READ), 1024);
  // The line of bench/signal.mjs's firehose.
  let firehose = "firehose 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMN\n";
  run(
    "firehose lines, default",
    &reads_of(firehose.as_bytes(), READ),
    1024,
  );
  run_with(
    "firehose lines, recommended lane",
    &reads_of(firehose.as_bytes(), READ),
    1024,
    &RECOMMENDED.options(),
  );
  run_with(
    "firehose lines, 200 ms lane",
    &reads_of(firehose.as_bytes(), READ),
    1024,
    &RECOMMENDED_200,
  );
  run_with(
    "yes (y), recommended lane",
    &reads_of(b"y\n", READ),
    1024,
    &RECOMMENDED.options(),
  );
  run_with(
    "yes (y), batchMs alone",
    &reads_of(b"y\n", READ),
    1024,
    &SignalOptions {
      batch_ms: Some(200.0),
      ..SignalOptions::default()
    },
  );
  run("yes (y), default", &reads_of(b"y\n", READ), 1024);
  let seq: String = (1..=9000).map(|n| format!("{}\n", 1_000_000 + n)).collect();
  run(
    "seq-like 8-byte lines",
    &reads_of(seq.as_bytes(), READ),
    512,
  );
  let colored = "\x1b[32mINFO\x1b[0m request served in 12ms path=/api/items\n";
  run(
    "ANSI-coloured log lines",
    &reads_of(colored.as_bytes(), READ),
    512,
  );
  let yes_ansi = "\x1b[32mINFO\x1b[0m some log text here\n";
  run(
    "yes $'\\e[32mINFO\\e[0m some log text here'",
    &reads_of(yes_ansi.as_bytes(), READ),
    512,
  );
  // Text that is all letters a CSI sequence may hold: each line is decided on its own.
  let csi_letters = "\x1b[32mINFO\x1b[0m OK\n";
  run(
    "coloured lines of CSI letters only",
    &reads_of(csi_letters.as_bytes(), READ),
    256,
  );
  let cjk = "你好世界，这是一行日志输出\n";
  run("CJK lines", &reads_of(cjk.as_bytes(), READ), 256);

  // Over-long lines: one event, the rest discarded up to the line's end.
  run(
    "over-long line, no newline (tr a)",
    &reads_of(b"a", READ),
    2048,
  );
  let long = format!("{}\n", "a".repeat(99_999));
  run(
    "over-long lines, 100 KB each",
    &reads_of(long.as_bytes(), 16 * READ),
    1024,
  );
  let colored_long = "\x1b[32mINFO\x1b[0m no newline ever ";
  run(
    "over-long ANSI-coloured line, no newline",
    &reads_of(colored_long.as_bytes(), READ),
    512,
  );

  let cjk_long = "长".repeat(20_000);
  run(
    "over-long CJK line, no newline",
    &reads_of(cjk_long.as_bytes(), READ),
    512,
  );
  let ansi_long = format!(
    "{}\n",
    "\x1b[32mINFO\x1b[0m a long coloured line ".repeat(300)
  );
  run(
    "over-long ANSI-coloured lines, 10 KB each",
    &reads_of(ansi_long.as_bytes(), READ),
    512,
  );

  // `\r` redraws that never print `\n`: one physical line.
  let progress: String = (0..20_000).map(|i| format!("\rprogress {}%", i)).collect();
  run(
    "\\r progress counter, no newline",
    &reads_of(progress.as_bytes(), READ),
    1024,
  );
  let frame = format!("\r{}", "=".repeat(59));
  run(
    "\\r 60-char frames, no newline",
    &reads_of(frame.as_bytes(), READ),
    1024,
  );
  let bar = "\r\x1b[32m[##########          ]\x1b[0m 50% eta 0:01";
  run(
    "\\r ANSI-coloured bar, no newline",
    &reads_of(bar.as_bytes(), READ),
    512,
  );

  // Not text: random bytes (invalid UTF-8, stray ESCs, a newline every 256
  // bytes or so). Whatever it is, it must not cost much more than text.
  let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
  let random: Vec<u8> = (0..4 * READ)
    .map(|_| {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      (seed >> 32) as u8
    })
    .collect();
  run(
    "random bytes (cat /dev/urandom)",
    &reads_of(&random, READ),
    256,
  );
  eprintln!("(wall time {:.1} s)", wall.elapsed().as_secs_f64());
}
