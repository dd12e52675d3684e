//! Native monitors: a spawned command streamed by the reactor (CONTRACT.md
//! §2.10). Reads of both pipes feed one [`LinePipeline`]; when the leader
//! exits, the pipes are drained until EOF, or until 1000 ms after the exit
//! when a descendant still holds one; then the monitor flushes, settles
//! through the hub and kills whatever of the tree is left. No thread of its
//! own: the reactor reads the pipes, learns of the exit and runs the drain
//! deadline and, with an API.md §6.7 lane, its timer (a window due, held lines at the refill; see
//! `core::reactor`). What is read goes through a [`Reader`].

use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::hub::{Clock, MonitorHub, NativeTask};
use super::pipeline::{Observe, Stream};
use super::reader::{ReadOutcome, Reader};
use super::registry::{AbortKind, ExitInfo};
use super::signal::SignalConfig;
use super::throttle::ThrottleConfig;
use crate::process::{self, ExitStatusInfo, ProcessGroup, SpawnedProcess};
use crate::reactor::{ExitHandler, PipeHandler, PipeKey, Reactor};
use crate::sync::{lock, SelfRef};
use crate::terminal::{ScreenSnapshot, TaskTerminal, TerminalError, TerminalSize};

mod persisted;
pub use persisted::{FollowFrom, Persisted};

/// How long a monitor keeps reading after its leader exited (§2.10 "Exit and settle").
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(1000);

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
  /// What its timers hold (see [`SelfRef`]).
  me: SelfRef<Self>,
  id: String,
  /// The task's tree; `None` for a persisted task (its keeper's child).
  group: Option<ProcessGroup>,
  /// A persisted task: the keeper link and the file follower.
  persisted: Option<Persisted>,
  hub: Weak<MonitorHub>,
  reactor: Arc<Reactor>,
  /// The pipeline and its signal lane; see [`Reader`] for the lock order.
  reader: Mutex<Reader>,
  clock: C,
  aborted: AtomicBool,
  killed: AtomicBool,
  /// Which lines the pipeline must build (see [`NativeTask::observe_lines`]).
  observing: Mutex<Observe>,
  io: Mutex<Io>,
  /// Terminal mode (API.md §6.5): the terminal and its screen, and the
  /// `settleMs` judged on that screen.
  terminal: Option<(TaskTerminal, Option<u64>)>,
  /// What the tree used (API.md §6.8 `usage`), read at the settle (its cgroup goes with it).
  final_usage: Mutex<Option<process::Usage>>,
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
  /// it to the hub and hands its pipes and its exit to a reactor. `signal`:
  /// the §6.7 options (default: the token bucket alone); `max_events`: the
  /// entry's `maxEvents`.
  #[allow(clippy::too_many_arguments)] // each is one independent option of the entry
  pub fn start(
    hub: &Arc<MonitorHub>,
    id: &str,
    spawned: SpawnedProcess,
    throttle: Option<ThrottleConfig>,
    signal: SignalConfig,
    max_events: u64,
    screen_settle_ms: Option<u64>,
    clock: C,
  ) -> std::io::Result<Arc<Self>> {
    let observing = hub.registry().observation(id);
    let mut reader = Reader::new(id, throttle, signal, max_events, clock.mono_ms());
    let terminal = spawned.terminal.clone().map(|handle| {
      reader.set_frames(true);
      let now = clock.wall_ms() as u64;
      (
        TaskTerminal::new(handle, screen_settle_ms, now),
        screen_settle_ms,
      )
    });
    if reader.has_lane() {
      hub.registry().set_signal_lane(id);
    }
    let reactor = Reactor::pick()?;
    let SpawnedProcess {
      group,
      stdout,
      stderr,
      child,
      ..
    } = spawned;
    let monitor = Arc::new_cyclic(|me| Self {
      me: SelfRef::new(me),
      id: id.to_owned(),
      group: Some(group),
      persisted: None,
      hub: Arc::downgrade(hub),
      reactor: Arc::clone(&reactor),
      reader: Mutex::new(reader),
      clock,
      aborted: AtomicBool::new(false),
      killed: AtomicBool::new(false),
      observing: Mutex::new(observing),
      io: Mutex::new(Io::default()),
      terminal,
      final_usage: Mutex::new(None),
    });
    hub.add_native(id, monitor.clone());
    let pipes = [(Stream::Stdout, stdout), (Stream::Stderr, stderr)]
      .into_iter()
      .map(|(stream, file)| reactor.watch_pipe(file, stream as u8, monitor.clone()))
      .collect();
    lock(&monitor.io).pipes = pipes;
    if let Err(error) = reactor.watch_exit(child, monitor.clone()) {
      if let Some(group) = &monitor.group {
        process::kill_now(group);
      }
      return Err(error);
    }
    if monitor
      .group
      .as_ref()
      .is_some_and(|g| process::memory_limit_of(g).is_some())
    {
      monitor.watch_memory_limit();
    }
    Ok(monitor)
  }

  /// `limits.memoryBytes` (API.md §6.8): every [`process::MEMORY_LIMIT_POLL`] while
  /// the monitor runs, whether the kernel stopped its tree at the limit; then it is stopped as
  /// its `timeoutMs` stops it, with the end `limit` (`memory`). [`Self::finish`] looks once
  /// more, for a tree that died of it between two looks.
  fn watch_memory_limit(&self) {
    let me = self.me.for_timer();
    self.reactor.after(process::MEMORY_LIMIT_POLL, move || {
      let Some(monitor) = me.upgrade() else {
        return;
      };
      if lock(&monitor.io).finished || monitor.aborted.load(Ordering::Acquire) {
        return;
      }
      let hit = monitor.group.as_ref().and_then(process::memory_limit_hit);
      match (hit, monitor.hub.upgrade()) {
        (Some(bytes), Some(hub)) => hub.native_memory_limit(&monitor.clock, &monitor.id, bytes),
        (None, Some(_)) => monitor.watch_memory_limit(),
        (_, None) => {}
      }
    });
  }

  /// One read, decided and queued under the reader lock (see [`Reader::read`]).
  fn ingest(&self, hub: &MonitorHub, stream: Stream, bytes: &[u8]) {
    let now = self.clock.mono_ms();
    let wall = self.clock.wall_ms();
    if let Some((terminal, _)) = &self.terminal {
      if let Some(at) = terminal.feed(bytes, wall as u64) {
        self.arm_screen_timer(at, wall as u64);
      }
    }
    let outcome = lock(&self.reader).read(hub, stream, bytes, &self.observing, now, wall);
    if let Some(outcome) = outcome {
      self.follow_up(hub, outcome, now);
    }
  }

  fn arm_screen_timer(&self, at: u64, now: u64) {
    let me = self.me.for_timer();
    let delay = Duration::from_millis(at.saturating_sub(now).max(1));
    self.reactor.after(delay, move || {
      if let Some(me) = me.upgrade() {
        me.screen_due();
      }
    });
  }

  /// The screen's timer fired: a pending check runs, and a settled screen
  /// sends its settled notification.
  fn screen_due(&self) {
    let Some((terminal, settle_ms)) = &self.terminal else {
      return;
    };
    let wall = self.clock.wall_ms();
    let tick = terminal.tick(wall as u64);
    if let (Some(text), Some(settle_ms), Some(hub)) =
      (&tick.settled_text, settle_ms, self.hub.upgrade())
    {
      let now = self.clock.mono_ms();
      let outcome = lock(&self.reader).screen_settled(&hub, *settle_ms, text, now, wall);
      self.follow_up(&hub, outcome, now);
    }
    if let Some(at) = tick.next {
      self.arm_screen_timer(at, wall as u64);
    }
  }

  /// The lane's timer (§6.7: a `batchMs` window, or held lines waiting for
  /// the refill), armed for `at`, fired.
  fn window_due(&self, at: i64) {
    let Some(hub) = self.hub.upgrade() else {
      return;
    };
    let now = self.clock.mono_ms();
    let outcome = lock(&self.reader).on_timer(&hub, at, now, self.clock.wall_ms());
    self.follow_up(&hub, outcome, now);
  }

  /// What a read, a timer or a settled notification leaves to do, with the
  /// reader lock released.
  fn follow_up(&self, hub: &MonitorHub, outcome: ReadOutcome, now: i64) {
    if outcome.settle_armed {
      hub.poke_idle_watcher();
    }
    if let Some(at) = outcome.timer {
      let me = self.me.for_timer();
      // At least 1 ms: the reactor's clock and ours round differently.
      let delay = Duration::from_millis(at.saturating_sub(now).max(1) as u64);
      self.reactor.after(delay, move || {
        if let Some(me) = me.upgrade() {
          me.window_due(at);
        }
      });
    }
    if outcome.settled {
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
    if let Some((terminal, _)) = &self.terminal {
      terminal.finish();
    }
    // Only the hub's own task for the id speaks for it. A run `restart(id)` replaced does not
    // (its end was recorded): neither once the next run is attached, nor in between, when the
    // hub holds no task for the id while the next run's entry is already registered (settling
    // then cancelled the new run, seen in a CI run of the demo). Without a task in the hub the
    // entry has left the registry anyway.
    let replaced = self.hub.upgrade().is_some_and(|hub| {
      hub
        .native(&self.id)
        .is_none_or(|n| !std::ptr::addr_eq(Arc::as_ptr(&n), self as *const Self))
    });
    if let Some(hub) = self.hub.upgrade().filter(|_| !replaced) {
      self.cleanup(&hub);
      let exit = ExitInfo {
        code: exit.code,
        signal: exit.signal.map(process::signal_name),
      };
      let aborted = self.aborted.load(Ordering::Acquire);
      let wall = self.clock.wall_ms();
      // A tree that died of its memory limit before the watch looked.
      let memory_limit = self
        .group
        .as_ref()
        .filter(|_| !aborted)
        .and_then(process::memory_limit_hit);
      if let Some(group) = &self.group {
        *lock(&self.final_usage) = process::tree_usage(group);
      }
      hub.apply(|r| match memory_limit {
        Some(bytes) => r.limit_finish(&self.id, crate::end::TaskEnd::memory_limit(bytes), wall),
        None => r.settle_from_exit(&self.id, &exit, aborted, wall),
      });
      hub.wake_js();
    }
    // Batched with other settles on the timer thread: a dead tree is
    // forgotten (the tracked set stays small), a live one is killed.
    if let Some(group) = &self.group {
      process::terminate_leftovers(group);
    }
    for key in pipes {
      self.reactor.close_pipe(key);
    }
  }

  /// `cleanup()`, at most once: flush what was read, then close the pipeline.
  fn cleanup(&self, hub: &MonitorHub) {
    let mut reader = lock(&self.reader);
    if !reader.is_closed() {
      self.flush_locked(hub, &mut reader);
      reader.close();
    }
  }

  fn flush_locked(&self, hub: &MonitorHub, reader: &mut MutexGuard<'_, Reader>) {
    let observing = lock(&self.observing).clone();
    reader.flush(hub, observing, self.clock.mono_ms(), self.clock.wall_ms());
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
    let me = self.me.for_timer();
    self.reactor.after(DRAIN_AFTER_EXIT, move || {
      if let Some(me) = me.upgrade() {
        me.finish();
      }
    });
  }
}

impl<C: Clock + Send + Sync + 'static> NativeTask for NativeMonitor<C> {
  fn usage(&self) -> Option<process::Usage> {
    if let Some(usage) = *lock(&self.final_usage) {
      return Some(usage);
    }
    self.group.as_ref().and_then(process::tree_usage)
  }

  fn listening_ports(&self) -> Vec<u16> {
    self
      .group
      .as_ref()
      .and_then(crate::process::listening_ports)
      .and_then(Result::ok)
      .unwrap_or_default()
  }

  fn stop_reading(&self, hub: &MonitorHub, kind: AbortKind) {
    if self.aborted.swap(true, Ordering::AcqRel) {
      return;
    }
    let mut reader = lock(&self.reader);
    if !reader.is_closed() {
      if kind == AbortKind::Flush {
        self.flush_locked(hub, &mut reader);
      }
      reader.close();
    }
  }

  fn kill(&self) {
    if !self.killed.swap(true, Ordering::AcqRel) {
      if let Some(persisted) = &self.persisted {
        // A persisted task is never signalled from here: its keeper is asked.
        let via = self
          .hub
          .upgrade()
          .and_then(|hub| {
            let registry = hub.registry();
            let entry = registry.get(&self.id)?;
            entry.end.as_ref().or(entry.ending.as_ref())?.via
          })
          .unwrap_or(crate::end::EndVia::Cancel);
        persisted.request_cancel(via);
        return;
      }
      if let Some(group) = &self.group {
        process::terminate(group);
      }
    }
  }

  fn is_persisted(&self) -> bool {
    self.persisted.is_some()
  }

  fn observe_lines(&self, observe: Observe) {
    *lock(&self.observing) = observe;
  }

  fn has_terminal(&self) -> bool {
    self.terminal.is_some()
  }

  fn screen(&self) -> Option<ScreenSnapshot> {
    self.terminal.as_ref().map(|(t, _)| t.snapshot())
  }

  fn write_terminal(&self, bytes: &[u8]) -> Option<Result<(), TerminalError>> {
    self.terminal.as_ref().map(|(t, _)| t.write(bytes))
  }

  fn resize_terminal(&self, size: TerminalSize) -> Option<Result<(), TerminalError>> {
    let (terminal, _) = self.terminal.as_ref()?;
    let now = self.clock.wall_ms() as u64;
    Some(terminal.resize(size, now).map(|arm| {
      if let Some(at) = arm {
        self.arm_screen_timer(at, now);
      }
    }))
  }

  fn settle_due(&self, hub: &MonitorHub) {
    let now = self.clock.mono_ms();
    let outcome = lock(&self.reader).settle_due(hub, now, self.clock.wall_ms());
    self.follow_up(hub, outcome, now);
  }
}
