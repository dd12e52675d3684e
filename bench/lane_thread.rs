//! What a thread of its own for the signal lane would give a firehose (issue 30's
//! last goal: ingest with `RECOMMENDED_SIGNAL` ≥ 0.9× the default's), before
//! building it into the reactor: `yes <bench/signal.mjs's line>` into a real
//! pipe, read in 64 KiB reads (the native read size) for BYTES bytes, then
//! killed; wall-clock MB/s for three ways of reading it:
//!
//! - `default`: one thread reads and feeds the default pipeline (the token bucket);
//! - `recommended, one thread`: the same with `RECOMMENDED` (what ships);
//! - `recommended, lane thread`: one thread reads into pooled buffers and hands
//!   each to a second thread through a bounded queue (`QUEUE` reads: the
//!   back-pressure), which feeds the recommended pipeline and returns the buffer.
//!
//! Rounds alternate the three; the medians and the ratios to the default of the
//! same round are printed. Run: `cargo bench -p taskstream-core --bench
//! lane_thread` (`ROUNDS`, `BYTES` in the environment). A benchmark, never a test;
//! Unix only (it needs `yes`).

#[cfg(unix)]
mod unix {
  use std::io::Read;
  use std::process::{Child, ChildStdout, Command, Stdio};
  use std::sync::mpsc;
  use std::time::Instant;

  use taskstream_core::monitor::pipeline::{LinePipeline, LineSink, Stream};
  use taskstream_core::monitor::signal::config::{SignalConfig, SignalOptions, RECOMMENDED};
  use taskstream_core::monitor::throttle::ThrottleConfig;

  const READ: usize = 64 * 1024;
  const QUEUE: usize = 8;
  const LINE: &str = "firehose 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMN";

  /// The lines go nowhere: what is measured is reading them; `LinePipeline::lines_seen` counts them.
  struct Discard;

  impl LineSink for Discard {
    fn accepted(&mut self, _line: &str) {}
    fn dropped(&mut self) {}
  }

  fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
      .ok()
      .and_then(|v| v.parse().ok())
      .unwrap_or(default)
  }

  fn pipeline(config: SignalConfig) -> LinePipeline {
    LinePipeline::with_signal(Some(ThrottleConfig::default()), config, 10_000, 0)
  }

  fn config(signal: &SignalOptions) -> SignalConfig {
    SignalConfig::new(*signal).expect("valid options")
  }

  fn now_ms(start: Instant) -> i64 {
    start.elapsed().as_millis() as i64
  }

  /// CPU seconds of this process and of its waited-for children (`yes`), so far.
  fn cpu_seconds() -> f64 {
    let of = |who| {
      // SAFETY: `usage` is a valid rusage to write to.
      let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
      unsafe { libc::getrusage(who, &mut usage) };
      let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
      seconds(usage.ru_utime) + seconds(usage.ru_stime)
    };
    of(libc::RUSAGE_SELF) + of(libc::RUSAGE_CHILDREN)
  }

  /// What one way of reading gave: wall-clock MB/s, CPU (the reader, the lane, `yes`) in
  /// nanoseconds a byte, and the lines the pipeline split.
  #[derive(Clone, Copy, Default)]
  struct Result {
    mb_per_s: f64,
    cpu_ns_per_byte: f64,
    lines: u64,
  }

  fn result(total: usize, wall: Instant, cpu: f64, lines: u64) -> Result {
    Result {
      mb_per_s: total as f64 / 1e6 / wall.elapsed().as_secs_f64(),
      cpu_ns_per_byte: (cpu_seconds() - cpu) * 1e9 / total as f64,
      lines,
    }
  }

  fn producer() -> (Child, ChildStdout) {
    let mut child = Command::new("yes")
      .arg(LINE)
      .stdout(Stdio::piped())
      .spawn()
      .expect("yes starts");
    let out = child.stdout.take().expect("a piped stdout");
    (child, out)
  }

  fn one_thread(signal: &SignalOptions, bytes: usize) -> Result {
    let cpu = cpu_seconds();
    let (mut child, mut out) = producer();
    let start = Instant::now();
    let (mut pipeline, clock) = (pipeline(config(signal)), start);
    let mut sink = Discard;
    let mut buf = vec![0u8; READ];
    let mut total = 0;
    while total < bytes {
      let n = out.read(&mut buf).expect("read");
      pipeline.feed(Stream::Stdout, &buf[..n], now_ms(clock), &mut sink);
      total += n;
    }
    let _ = child.kill();
    let _ = child.wait();
    result(total, start, cpu, pipeline.lines_seen())
  }

  fn lane_thread(signal: &SignalOptions, bytes: usize) -> Result {
    let cpu = cpu_seconds();
    let (mut child, mut out) = producer();
    let start = Instant::now();
    let (full_tx, full_rx) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
    let config = config(signal);
    let lane = std::thread::spawn(move || {
      let (mut pipeline, clock) = (pipeline(config), start);
      let mut sink = Discard;
      for buf in full_rx {
        pipeline.feed(Stream::Stdout, &buf, now_ms(clock), &mut sink);
        let _ = empty_tx.send(buf);
      }
      pipeline.lines_seen()
    });
    let mut total = 0;
    while total < bytes {
      let mut buf = empty_rx.try_recv().unwrap_or_default();
      buf.resize(READ, 0);
      let n = out.read(&mut buf).expect("read");
      buf.truncate(n);
      full_tx.send(buf).expect("the lane thread runs");
      total += n;
    }
    drop(full_tx);
    let lines = lane.join().expect("the lane thread ends");
    let _ = child.kill();
    let _ = child.wait();
    result(total, start, cpu, lines)
  }

  fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
  }

  pub fn main() {
    let rounds = env_number("ROUNDS", 7);
    let bytes = env_number("BYTES", 2_000_000_000);
    let recommended = RECOMMENDED.options();
    let default = SignalOptions::default();
    let names = [
      "default",
      "recommended, one thread",
      "recommended, lane thread",
    ];
    let mut all: [Vec<Result>; 3] = Default::default();
    for round in 0..rounds {
      // The order turns each round, so no way always runs first.
      let mut results = [Result::default(); 3];
      for k in 0..3 {
        let way = (round + k) % 3;
        results[way] = match way {
          0 => one_thread(&default, bytes),
          1 => one_thread(&recommended, bytes),
          _ => lane_thread(&recommended, bytes),
        };
      }
      let base = results[0].mb_per_s;
      let row: Vec<String> = names
        .iter()
        .zip(&results)
        .map(|(name, r)| {
          format!(
            "{name} {:.0} MB/s ({:.2}×, {:.3} ns CPU/B, {} lines)",
            r.mb_per_s,
            r.mb_per_s / base,
            r.cpu_ns_per_byte,
            r.lines
          )
        })
        .collect();
      println!("round {}: {}", round + 1, row.join("; "));
      for (way, r) in results.into_iter().enumerate() {
        all[way].push(Result {
          mb_per_s: r.mb_per_s / base,
          ..r
        });
      }
    }
    println!("median of {rounds} rounds:");
    for (name, results) in names.iter().zip(&all) {
      let ratio = median(results.iter().map(|r| r.mb_per_s).collect());
      let cpu = median(results.iter().map(|r| r.cpu_ns_per_byte).collect());
      // What two fully busy cores could read at this CPU a byte.
      println!(
        "  {name:<26} {ratio:.2}× of the default's MB/s; CPU {cpu:.3} ns a byte (two busy cores: at most {:.0} MB/s)",
        2.0 / cpu * 1e3
      );
    }
  }
}

fn main() {
  #[cfg(unix)]
  unix::main();
}
