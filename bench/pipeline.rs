//! Throughput of the native monitor's line pipeline (decode, strip, split,
//! sanitise check, throttle) on `yes`-style input, without any process: the
//! CPU cost per MB that a monitor's reader thread pays.
//!
//! Run: `cargo bench --bench pipeline` (a benchmark, never a test).

use std::time::Instant;

use taskstream::core::monitor::pipeline::{LinePipeline, LineSink, Stream};
use taskstream::core::monitor::throttle::ThrottleConfig;

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

fn run(name: &str, chunk: &[u8], total_mb: usize) {
  let mut pipeline = LinePipeline::new(Some(ThrottleConfig::default()), 0);
  let mut sink = Count::default();
  let reads = total_mb * 1024 * 1024 / chunk.len();
  let start = Instant::now();
  for i in 0..reads {
    pipeline.feed(Stream::Stdout, chunk, (i / 1000) as i64, &mut sink);
  }
  let secs = start.elapsed().as_secs_f64();
  let mb = (reads * chunk.len()) as f64 / 1e6;
  println!(
    "{name:<28} {:>8.0} MB/s  ({} accepted, {} dropped)",
    mb / secs,
    sink.accepted,
    sink.dropped
  );
}

fn main() {
  let yes_line = format!("{}\n", "y".repeat(59));
  let yes: Vec<u8> = yes_line.repeat(65536 / yes_line.len()).into_bytes();
  run("yes, 60-byte lines", &yes, 2048);
  let colored_line = "\x1b[32mINFO\x1b[0m request served in 12ms path=/api/items\n";
  let colored: Vec<u8> = colored_line.repeat(65536 / colored_line.len()).into_bytes();
  run("ANSI-coloured log lines", &colored, 1024);
  let cjk_line = "你好世界，这是一行日志输出\n";
  let cjk: Vec<u8> = cjk_line.repeat(65536 / cjk_line.len()).into_bytes();
  run("CJK lines", &cjk, 1024);
  let seq: Vec<u8> = (1..=9000)
    .map(|n| format!("{}\n", 1_000_000 + n))
    .collect::<String>()
    .into_bytes();
  run("seq-like 8-byte lines", &seq[..65536.min(seq.len())], 1024);
  let long: Vec<u8> = vec![b'a'; 65536];
  run("no newline at all", &long, 2048);
}
