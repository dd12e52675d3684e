//! Native monitors: a spawned command streamed by the reactor (CONTRACT.md
//! §2.10). Reads of both pipes feed one [`LinePipeline`]; when the leader
//! exits, the pipes are drained until EOF, or until 1000 ms after the exit
//! when a descendant still holds one; then the monitor flushes, settles
//! through the hub and kills whatever of the tree is left. No thread of its
//! own: the reactor reads the pipes, learns of the exit and runs the drain
//! deadline (see `core::reactor`).

use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::hub::{Clock, MonitorHub, NativeTask};
use super::pipeline::{LinePipeline, LineSink, Stream};
use super::registry::{AbortKind, Effect, ExitInfo, MonitorRegistry};
use super::throttle::ThrottleConfig;
use crate::core::process::{self, ExitStatusInfo, ProcessGroup, SpawnedProcess};
use crate::core::reactor::{ExitHandler, PipeHandler, PipeKey, Reactor};
use crate::core::sync::lock;

/// How long a monitor keeps reading after its leader exited (§2.10 "Exit and settle").
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(1000);

/// Collects a batch of pipeline decisions, applied to the registry at once.
#[derive(Default)]
struct Batch {
  accepted: Vec<String>,
  dropped: u64,
  /// Every line, accepted or dropped, while the pipeline observes lines.
  seen: Vec<String>,
}

impl Batch {
  /// Shows the lines to the entry's waits, runs the accepted lines through
  /// `emitEvent` and counts the dropped ones.
  fn apply(&self, r: &mut MonitorRegistry, id: &str, wall_ms: f64, mono_ms: i64) -> Vec<Effect> {
    let mut effects = r.observe_lines(id, &self.seen, mono_ms);
    for line in &self.accepted {
      effects.extend(r.emit_event(id, line, wall_ms, mono_ms));
    }
    r.record_dropped(id, self.dropped);
    effects
  }
}

impl LineSink for Batch {
  fn seen(&mut self, line: &str) {
    self.seen.push(line.to_owned());
  }
  fn accepted(&mut self, line: &str) {
    self.accepted.push(line.to_owned());
  }
  fn dropped(&mut self) {
    self.dropped += 1;
  }
}

/// Where the monitor's process side stands.
#[derive(Default)]
struct Io {
  /// Pipes that reached EOF (or failed).
  eofs: u8,
  /// The leader's exit, once reaped.
  exit: Option<ExitStatusInfo>,
  /// The monitor settled (at most once).
  finished: bool,
  pipes: Vec<PipeKey>,
}

/// The process side of one native monitor.
pub struct NativeMonitor<C: Clock> {
  /// This monitor, for the drain deadline's job.
  me: Weak<Self>,
  id: String,
  group: ProcessGroup,
  hub: Weak<MonitorHub>,
  reactor: Arc<Reactor>,
  pipeline: Mutex<LinePipeline>,
  clock: C,
  aborted: AtomicBool,
  killed: AtomicBool,
  /// The pipeline must build every line (see [`NativeTask::observe_lines`]).
  observing: AtomicBool,
  io: Mutex<Io>,
}

fn stream_of(tag: u8) -> Stream {
  if tag == Stream::Stderr as u8 {
    Stream::Stderr
  } else {
    Stream::Stdout
  }
}

impl<C: Clock + Send + Sync + 'static> NativeMonitor<C> {
  /// Wraps a spawned process whose entry is already registered in `hub`, adds
  /// it to the hub and hands its pipes and its exit to a reactor.
  pub fn start(
    hub: &Arc<MonitorHub>,
    id: &str,
    spawned: SpawnedProcess,
    throttle: Option<ThrottleConfig>,
    clock: C,
  ) -> std::io::Result<Arc<Self>> {
    let observing = hub.registry().observes_lines(id);
    let reactor = Reactor::pick()?;
    let SpawnedProcess {
      group,
      stdout,
      stderr,
      child,
      ..
    } = spawned;
    let monitor = Arc::new_cyclic(|me| Self {
      me: me.clone(),
      id: id.to_owned(),
      group,
      hub: Arc::downgrade(hub),
      reactor: Arc::clone(&reactor),
      pipeline: Mutex::new(LinePipeline::new(throttle, clock.mono_ms())),
      clock,
      aborted: AtomicBool::new(false),
      killed: AtomicBool::new(false),
      observing: AtomicBool::new(observing),
      io: Mutex::new(Io::default()),
    });
    hub.add_native(id, monitor.clone());
    let pipes = [(Stream::Stdout, stdout), (Stream::Stderr, stderr)]
      .into_iter()
      .map(|(stream, file)| reactor.watch_pipe(file, stream as u8, monitor.clone()))
      .collect();
    lock(&monitor.io).pipes = pipes;
    if let Err(error) = reactor.watch_exit(child, monitor.clone()) {
      process::kill_now(&monitor.group);
      return Err(error);
    }
    Ok(monitor)
  }

  /// One read: bytes counted (the idle deadline moves), lines decided, then the
  /// accepted ones run through `emitEvent`, all under the pipeline lock so the
  /// two streams' effects reach the outbox in the order their lines completed.
  fn ingest(&self, hub: &MonitorHub, stream: Stream, bytes: &[u8]) {
    let now = self.clock.mono_ms();
    let mut settled_now = false;
    let mut settle_armed = false;
    {
      let mut pipeline = lock(&self.pipeline);
      if pipeline.is_closed() {
        return;
      }
      pipeline.set_observing(self.observing.load(Ordering::Acquire));
      let mut batch = Batch::default();
      pipeline.feed(stream, bytes, now, &mut batch);
      let (lines_seen, truncated) = (pipeline.lines_seen(), pipeline.truncated_bytes());
      let wall = self.clock.wall_ms();
      hub.apply(|r| {
        settle_armed = r.record_bytes(&self.id, bytes.len() as u64, now);
        r.record_splitter_counts(&self.id, lines_seen, truncated);
        let effects = batch.apply(r, &self.id, wall, now);
        settled_now = !r.is_running(&self.id);
        // A wait that resolved may have been the last one that needed lines.
        self
          .observing
          .store(r.observes_lines(&self.id), Ordering::Release);
        effects
      });
    }
    if settle_armed {
      hub.poke_idle_watcher();
    }
    if settled_now {
      // Max events: the kill must not wait for the JavaScript thread.
      self.abort(hub, AbortKind::Flush);
    }
    hub.wake_js();
  }

  /// Settles once the leader exited and both pipes are done (or the drain
  /// deadline passed): flush, settle through the hub, kill what is left of
  /// the tree, stop reading.
  fn finish(&self) {
    let (exit, pipes) = {
      let mut io = lock(&self.io);
      if io.finished {
        return;
      }
      let Some(exit) = io.exit else {
        return;
      };
      io.finished = true;
      (exit, std::mem::take(&mut io.pipes))
    };
    if let Some(hub) = self.hub.upgrade() {
      self.cleanup(&hub);
      let exit = ExitInfo {
        code: exit.code,
        signal: exit.signal.map(process::signal_name),
      };
      let aborted = self.aborted.load(Ordering::Acquire);
      let wall = self.clock.wall_ms();
      hub.apply(|r| r.settle_from_exit(&self.id, &exit, aborted, wall));
      hub.wake_js();
    }
    // Batched with other settles on the timer thread: a dead tree is
    // forgotten (the tracked set stays small), a live one is killed.
    process::terminate_leftovers(&self.group);
    for key in pipes {
      self.reactor.close_pipe(key);
    }
  }

  /// `cleanup()`, at most once: flush what was read, then close the pipeline.
  fn cleanup(&self, hub: &MonitorHub) {
    let mut pipeline = lock(&self.pipeline);
    if !pipeline.is_closed() {
      self.flush_locked(hub, &mut pipeline);
      pipeline.close();
    }
  }

  fn flush_locked(&self, hub: &MonitorHub, pipeline: &mut LinePipeline) {
    let now = self.clock.mono_ms();
    let mut batch = Batch::default();
    pipeline.set_observing(self.observing.load(Ordering::Acquire));
    pipeline.flush(now, &mut batch);
    let (lines_seen, truncated) = (pipeline.lines_seen(), pipeline.truncated_bytes());
    let wall = self.clock.wall_ms();
    hub.apply(|r| {
      r.record_splitter_counts(&self.id, lines_seen, truncated);
      batch.apply(r, &self.id, wall, now)
    });
    let dropped = hub.registry().get(&self.id).map_or(0, |e| e.dropped_lines);
    if dropped > 0 {
      tracing::debug!(
        "Monitor {} dropped {dropped} lines due to throttling",
        self.id
      );
    }
  }
}

impl<C: Clock + Send + Sync + 'static> PipeHandler for NativeMonitor<C> {
  fn data(&self, tag: u8, bytes: &[u8]) {
    if let Some(hub) = self.hub.upgrade() {
      self.ingest(&hub, stream_of(tag), bytes);
    }
  }

  fn closed(&self, _tag: u8, error: Option<io::Error>) {
    if let Some(error) = error {
      tracing::debug!(id = %self.id, %error, "taskstream: monitor pipe read failed");
    }
    let ready = {
      let mut io = lock(&self.io);
      io.eofs += 1;
      io.eofs >= 2 && io.exit.is_some()
    };
    if ready {
      self.finish();
    }
  }
}

impl<C: Clock + Send + Sync + 'static> ExitHandler for NativeMonitor<C> {
  fn exited(&self, status: io::Result<ExitStatus>) {
    let exit = match status {
      Ok(status) => ExitStatusInfo::from(status),
      Err(error) => {
        tracing::warn!(id = %self.id, %error, "taskstream: waiting for a monitor failed");
        ExitStatusInfo {
          code: None,
          signal: None,
        }
      }
    };
    let drained = {
      let mut io = lock(&self.io);
      io.exit = Some(exit);
      io.eofs >= 2
    };
    if drained {
      self.finish();
      return;
    }
    // A descendant may hold a pipe: settle 1000 ms after the exit at the latest.
    let me = self.me.clone();
    self.reactor.after(DRAIN_AFTER_EXIT, move || {
      if let Some(me) = me.upgrade() {
        me.finish();
      }
    });
  }
}

impl<C: Clock + Send + Sync + 'static> NativeTask for NativeMonitor<C> {
  fn stop_reading(&self, hub: &MonitorHub, kind: AbortKind) {
    if self.aborted.swap(true, Ordering::AcqRel) {
      return;
    }
    let mut pipeline = lock(&self.pipeline);
    if !pipeline.is_closed() {
      if kind == AbortKind::Flush {
        self.flush_locked(hub, &mut pipeline);
      }
      pipeline.close();
    }
  }

  fn kill(&self) {
    if !self.killed.swap(true, Ordering::AcqRel) {
      process::terminate(&self.group);
    }
  }

  fn observe_lines(&self, on: bool) {
    self.observing.store(on, Ordering::Release);
  }
}
