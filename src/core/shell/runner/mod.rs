//! Running a background shell's process (CONTRACT.md §2.15 steps 8–10 and
//! 12, §2.19, §4 items 10, 11 and 16).
//!
//! The reactor drains stdout and stderr into one [`OutputWriter`], one read
//! at a time, always to EOF, and reaps the leader (see `core::reactor`).
//! Whichever of the three ends last settles the run: the file is finished and
//! closed, and only then does `on_settle` run, exactly once. A descendant
//! that keeps a pipe open keeps the shell running (unlike monitors, which
//! stop draining 1000 ms after the exit).

use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::output::{OutputCounters, OutputWriter, Stream};
use super::runs::ShellVerdict;
use super::signals::{RunSignal, RunSignals};
use crate::clock::{Clock, SharedClock};
use crate::end::{EndReason, EndVia, TaskEnd};
use crate::process::{self, ExitStatusInfo, ProcessGroup, SpawnedProcess};
use crate::reactor::{ExitHandler, PipeHandler, Reactor};
use crate::sync::{lock, SelfRef};
use crate::terminal::{ScreenSnapshot, TaskTerminal, TerminalError, TerminalSize};
use crate::wait::{WaitOutcome, WaitSpec};
mod persisted;
pub(crate) use persisted::ShellPersisted;

/// What must end before the run settles: the leader, stdout and stderr.
const PARTS: u8 = 3;
/// The exit of a leader that could not be waited for.
const NO_EXIT: ExitStatusInfo = ExitStatusInfo {
  code: None,
  signal: None,
};

/// How a run ended, for the settle step of §2.15 step 9.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellOutcome {
  pub exit: ExitStatusInfo,
  /// [`ShellRun::cancel`] ran before the run settled.
  pub aborted: bool,
  /// Who asked for that cancel, when known (see [`ShellRun::cancel_via`]).
  pub cancelled_via: Option<EndVia>,
  /// A limit of the run (API.md §6.8) stopped it: `timeoutMs`, the output cap.
  pub stopped_by: Option<RunLimit>,
  /// A pipe read, wait or output-file write error, by its message.
  pub spawn_or_io_error: Option<String>,
  pub counters: OutputCounters,
  /// A persisted run: the end its keeper recorded (docs/persistence.md),
  /// and when (ms since the epoch).
  pub recorded_end: Option<TaskEnd>,
  pub recorded_end_time: Option<u64>,
}

impl ShellOutcome {
  /// The outcome of a shell that never started (its spawn, keeper or output
  /// file failed with `error`): no exit status, nothing read.
  pub fn failed_to_start(error: &str) -> Self {
    ShellOutcome {
      exit: NO_EXIT,
      aborted: false,
      cancelled_via: None,
      stopped_by: None,
      spawn_or_io_error: Some(error.to_owned()),
      counters: Default::default(),
      recorded_end: None,
      recorded_end_time: None,
    }
  }

  /// How this end settles the entry (§2.15 step 9, items 3–5): aborted →
  /// cancelled; else a spawn or I/O error, then a signal
  /// (`terminated by signal <n>`), then a non-zero code
  /// (`exited with code <c>`) → failed; else completed.
  pub fn verdict(&self) -> ShellVerdict {
    if let Some(end) = &self.recorded_end {
      match end.reason {
        EndReason::Cancelled | EndReason::Restarted => return ShellVerdict::Cancelled,
        EndReason::Exited | EndReason::Signaled => {}
        _ => {
          return ShellVerdict::Failed(
            end
              .detail
              .clone()
              .unwrap_or_else(|| end.reason_str().to_owned()),
          )
        }
      }
    }
    if self.aborted {
      ShellVerdict::Cancelled
    } else if let Some(limit) = self.stopped_by {
      ShellVerdict::Failed(limit.error())
    } else if let Some(error) = &self.spawn_or_io_error {
      ShellVerdict::Failed(error.clone())
    } else if let Some(signal) = self.exit.signal {
      ShellVerdict::Failed(format!("terminated by signal {signal}"))
    } else if let Some(code) = self.exit.code.filter(|c| *c != 0) {
      ShellVerdict::Failed(format!("exited with code {code}"))
    } else {
      ShellVerdict::Completed(self.exit.code.unwrap_or(0))
    }
  }

  /// Who ended the run (API.md §6.3), in the order of [`Self::verdict`]. A
  /// cancel whose asker is unknown was an abort of the shell's controller or
  /// of the caller's signal: `via: 'signal'`.
  pub fn end(&self) -> TaskEnd {
    if let Some(end) = &self.recorded_end {
      return end.clone();
    }
    if self.aborted {
      TaskEnd::cancelled(self.cancelled_via.unwrap_or(EndVia::Signal))
    } else if let Some(limit) = self.stopped_by {
      limit.end()
    } else if let Some(error) = &self.spawn_or_io_error {
      TaskEnd::io_error(error)
    } else if let Some(signal) = self.exit.signal {
      TaskEnd::signaled(&process::signal_name(signal))
    } else {
      TaskEnd::exited(Some(self.exit.code.unwrap_or(0)))
    }
  }
}

/// A limit that stopped a run (API.md §6.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunLimit {
  /// `timeoutMs` passed, after this many ms.
  Timeout(u64),
  /// The output reached `maxOutputBytes` (this many) with `onOutputCap: 'stop'`.
  OutputCap(u64),
  /// The tree hit `limits.memoryBytes` (this many).
  Memory(u64),
}

impl RunLimit {
  /// The shell's `error` (the shell texts' lower case).
  pub fn error(self) -> String {
    match self {
      Self::Timeout(ms) => format!("timed out after {ms} ms"),
      Self::OutputCap(max) => format!("output limit of {max} bytes reached"),
      Self::Memory(max) => format!("memory limit of {max} bytes reached"),
    }
  }

  pub fn end(self) -> TaskEnd {
    match self {
      Self::Timeout(ms) => TaskEnd::timeout(ms),
      Self::OutputCap(max) => TaskEnd::output_limit(max),
      Self::Memory(max) => TaskEnd::memory_limit(max),
    }
  }
}

type OnSettle = Box<dyn FnOnce(ShellOutcome) + Send>;

struct RunState {
  parts_left: u8,
  exit: ExitStatusInfo,
  io_error: Option<String>,
  aborted: bool,
  cancelled_via: Option<EndVia>,
  /// A limit stopped the tree (the first one).
  stopped_by: Option<RunLimit>,
  settled: bool,
  on_settle: Option<OnSettle>,
}

type OnSignal = Box<dyn Fn(RunSignal) + Send + Sync>;

/// The process side of one background shell.
pub struct ShellRun {
  /// What its timers hold (see [`SelfRef`]).
  me: SelfRef<Self>,
  pid: u32,
  /// The task's tree; `None` for a persisted run (its keeper's child).
  group: Option<ProcessGroup>,
  /// The output file; `None` for a persisted run (its keeper writes it).
  writer: Mutex<Option<OutputWriter>>,
  persisted: Option<ShellPersisted>,
  state: Mutex<RunState>,
  /// Waits and the settle timer; locked before `writer` when both are held.
  signals: Mutex<RunSignals>,
  /// When the timer for `signals` is set to fire, if it is.
  timer_at: Mutex<Option<i64>>,
  on_signal: OnSignal,
  /// Every reading of time in the run (waits, settles, the screen); real outside tests.
  clock: SharedClock,
  reactor: Mutex<Option<Arc<Reactor>>>,
  /// Terminal mode (API.md §6.5): the terminal, its screen and the
  /// `settleMs` judged on that screen.
  terminal: Option<(TaskTerminal, Option<u64>)>,
  /// `onOutputCap: 'stop'` (API.md §6.8).
  stop_at_cap: AtomicBool,
  /// What the tree used, read at the settle (its cgroup goes with it).
  final_usage: Mutex<Option<process::Usage>>,
}

impl ShellRun {
  /// Hands the pipes and the exit to a reactor. If that cannot be done, the
  /// tree is killed, `on_settle` is dropped uncalled and the error returned;
  /// the caller then fails the entry.
  pub fn start(
    spawned: SpawnedProcess,
    writer: OutputWriter,
    on_settle: Box<dyn FnOnce(ShellOutcome) + Send>,
  ) -> io::Result<Arc<Self>> {
    Self::start_with_signals(spawned, writer, None, Box::new(|_| {}), on_settle)
  }

  /// [`Self::start`] with a settled notification after `settle_ms` without
  /// output, and `on_signal` told of every [`RunSignal`] (waits, settles).
  pub fn start_with_signals(
    spawned: SpawnedProcess,
    writer: OutputWriter,
    settle_ms: Option<u64>,
    on_signal: OnSignal,
    on_settle: Box<dyn FnOnce(ShellOutcome) + Send>,
  ) -> io::Result<Arc<Self>> {
    Self::start_on_clock(
      SharedClock::default(),
      spawned,
      writer,
      settle_ms,
      on_signal,
      on_settle,
    )
  }

  /// [`Self::start_with_signals`] reading the time from `clock` (tests inject one).
  pub fn start_on_clock(
    clock: SharedClock,
    spawned: SpawnedProcess,
    writer: OutputWriter,
    settle_ms: Option<u64>,
    on_signal: OnSignal,
    on_settle: Box<dyn FnOnce(ShellOutcome) + Send>,
  ) -> io::Result<Arc<Self>> {
    let mut writer = writer;
    let terminal = spawned.terminal.clone().map(|handle| {
      writer.set_frames();
      let now = clock.wall_ms() as u64;
      (TaskTerminal::new(handle, settle_ms, now), settle_ms)
    });
    // A terminal's settle is judged on its screen, not on bytes.
    let byte_settle_ms = settle_ms.filter(|_| terminal.is_none());
    let SpawnedProcess {
      pid,
      group,
      stdout,
      stderr,
      child,
      ..
    } = spawned;
    let run = Arc::new_cyclic(|me| Self {
      me: SelfRef::new(me),
      pid,
      group: Some(group),
      writer: Mutex::new(Some(writer)),
      persisted: None,
      state: Mutex::new(RunState {
        parts_left: PARTS,
        exit: NO_EXIT,
        io_error: None,
        aborted: false,
        cancelled_via: None,
        stopped_by: None,
        settled: false,
        on_settle: Some(on_settle),
      }),
      signals: Mutex::new(RunSignals::new(byte_settle_ms)),
      timer_at: Mutex::new(None),
      on_signal,
      clock,
      reactor: Mutex::new(None),
      terminal,
      stop_at_cap: AtomicBool::new(false),
      final_usage: Mutex::new(None),
    });
    let watched = Reactor::pick().and_then(|reactor| {
      *lock(&run.reactor) = Some(Arc::clone(&reactor));
      for (stream, pipe) in [(Stream::Stdout, stdout), (Stream::Stderr, stderr)] {
        reactor.watch_pipe(pipe, stream as u8, run.clone());
      }
      reactor.watch_exit(child, run.clone())
    });
    if let Err(error) = watched {
      lock(&run.state).on_settle = None;
      if let Some(group) = &run.group {
        process::kill_now(group);
      }
      return Err(error);
    }
    if run
      .group
      .as_ref()
      .is_some_and(|g| process::memory_limit_of(g).is_some())
    {
      run.watch_memory_limit();
    }
    Ok(run)
  }

  /// `limits.memoryBytes` (API.md §6.8): every [`process::MEMORY_LIMIT_POLL`] while
  /// the run lasts, whether the kernel stopped the tree at its memory limit; then the run is
  /// stopped as a cancel stops it and fails with its end `limit` (`memory`). The settle looks
  /// once more, for a tree that died of it between two looks.
  fn watch_memory_limit(&self) {
    let Some(reactor) = lock(&self.reactor).clone() else {
      return;
    };
    let me = self.me.for_timer();
    reactor.after(process::MEMORY_LIMIT_POLL, move || {
      let Some(run) = me.upgrade() else {
        return;
      };
      if run.is_settled() {
        return;
      }
      match run.group.as_ref().and_then(process::memory_limit_hit) {
        Some(bytes) => run.stop_by(RunLimit::Memory(bytes)),
        None => run.watch_memory_limit(),
      }
    });
  }

  /// What the tree used so far (API.md §6.8 `usage`): `None` without limits. Read at the
  /// settle and kept, since the tree's cgroup goes with it.
  pub fn usage(&self) -> Option<process::Usage> {
    if let Some(usage) = *lock(&self.final_usage) {
      return Some(usage);
    }
    self.group.as_ref().and_then(process::tree_usage)
  }

  /// §2.15 step 10: marks the run aborted and kills the tree (SIGTERM, then
  /// SIGKILL 200 ms later). The run then settles once the pipes close. A
  /// no-op once the run has settled (the settle already terminated whatever
  /// was left of the tree).
  pub fn cancel(&self) {
    let mut state = lock(&self.state);
    if !state.settled && !state.aborted {
      state.aborted = true;
      if let Some(persisted) = &self.persisted {
        // A persisted run is never signalled from here: its keeper is asked.
        let via = state.cancelled_via.unwrap_or(EndVia::Signal);
        persisted.link.request_cancel(via);
        return;
      }
      if let Some(group) = &self.group {
        process::terminate(group);
      }
    }
  }

  /// `timeoutMs` (API.md §6.8): `timeout_ms` from now the run is stopped as a cancel stops it
  /// (SIGTERM, then SIGKILL), and it fails with `timed out after <ms> ms` and its end
  /// `timeout`. Nothing happens if it settled or was cancelled first.
  pub fn set_deadline(&self, timeout_ms: u64) {
    let Some(reactor) = lock(&self.reactor).clone() else {
      return;
    };
    let me = self.me.for_timer();
    reactor.after(Duration::from_millis(timeout_ms), move || {
      if let Some(run) = me.upgrade() {
        run.stop_by(RunLimit::Timeout(timeout_ms));
      }
    });
  }

  /// `onOutputCap: 'stop'` (API.md §6.8): once the output file reaches its cap, the run is
  /// stopped as a cancel stops it and fails with its end `limit` (`output`).
  pub fn stop_at_output_cap(&self) {
    self.stop_at_cap.store(true, Ordering::Release);
    // The cap may be reached already.
    if self.cap_reached() {
      self.stop_by(self.output_cap());
    }
  }

  fn cap_reached(&self) -> bool {
    lock(&self.writer)
      .as_ref()
      .is_some_and(OutputWriter::cap_reached)
  }

  fn output_cap(&self) -> RunLimit {
    RunLimit::OutputCap(
      lock(&self.writer)
        .as_ref()
        .map_or(0, OutputWriter::max_bytes),
    )
  }

  /// A limit passed: the tree is stopped (once; not after a cancel or the settle).
  fn stop_by(&self, limit: RunLimit) {
    let mut state = lock(&self.state);
    if state.settled || state.aborted || state.stopped_by.is_some() {
      return;
    }
    state.stopped_by = Some(limit);
    if let Some(group) = &self.group {
      process::terminate(group);
    }
  }

  /// Records who is about to cancel the run (the caller's `signal`), for its
  /// [`ShellOutcome::end`]; the first one named wins.
  pub fn cancel_via(&self, via: EndVia) {
    let mut state = lock(&self.state);
    if !state.settled && !state.aborted {
      state.cancelled_via.get_or_insert(via);
    }
  }

  /// A `waitFor` on this run (API.md §6.1): `match`, `quiet` and `timeout`
  /// are judged here; the binding resolves `exit` at the settle.
  pub fn add_wait(&self, id: u64, spec: WaitSpec) {
    lock(&self.signals).add_wait(id, spec, self.clock.mono_ms());
    self.schedule_timer();
  }

  /// A wait's signal fired: its `aborted` outcome, if it was pending here.
  pub fn abort_wait(&self, id: u64) -> Option<WaitOutcome> {
    lock(&self.signals).abort_wait(id, self.clock.mono_ms())
  }

  /// Whether the run has a terminal.
  pub fn has_terminal(&self) -> bool {
    self.terminal.is_some()
  }

  /// `screen()`: `None` without a terminal.
  pub fn screen(&self) -> Option<ScreenSnapshot> {
    self.terminal.as_ref().map(|(t, _)| t.snapshot())
  }

  /// `write()`: `None` without a terminal.
  pub fn write_terminal(&self, bytes: &[u8]) -> Option<Result<(), TerminalError>> {
    self.terminal.as_ref().map(|(t, _)| t.write(bytes))
  }

  /// `resize()`: `None` without a terminal.
  pub fn resize_terminal(&self, size: TerminalSize) -> Option<Result<(), TerminalError>> {
    let (terminal, _) = self.terminal.as_ref()?;
    let now = self.clock.wall_ms() as u64;
    Some(terminal.resize(size, now).map(|arm| {
      if let Some(at) = arm {
        self.arm_screen_timer(at, now);
      }
    }))
  }

  fn arm_screen_timer(&self, at: u64, now: u64) {
    let Some(reactor) = lock(&self.reactor).clone() else {
      return;
    };
    let me = self.me.for_timer();
    reactor.after(
      Duration::from_millis(at.saturating_sub(now).max(1)),
      move || {
        if let Some(run) = me.upgrade() {
          run.screen_due();
        }
      },
    );
  }

  /// The screen's timer fired: a settled screen is told with its text.
  fn screen_due(&self) {
    let Some((terminal, settle_ms)) = &self.terminal else {
      return;
    };
    let now = self.clock.wall_ms() as u64;
    let tick = terminal.tick(now);
    if let (Some(screen), Some(settle_ms)) = (tick.settled_text, settle_ms) {
      (self.on_signal)(RunSignal::ScreenSettled {
        settle_ms: *settle_ms,
        screen,
      });
    }
    if let Some(at) = tick.next {
      self.arm_screen_timer(at, now);
    }
  }

  /// Makes sure the reactor's timer fires by the signals' next deadline.
  fn schedule_timer(&self) {
    let Some(deadline) = lock(&self.signals).next_deadline() else {
      return;
    };
    {
      let mut timer_at = lock(&self.timer_at);
      if timer_at.is_some_and(|at| at <= deadline) {
        return;
      }
      *timer_at = Some(deadline);
    }
    let Some(reactor) = lock(&self.reactor).clone() else {
      return;
    };
    let delay = (deadline - self.clock.mono_ms()).max(0) as u64;
    let me = self.me.for_timer();
    reactor.after(Duration::from_millis(delay), move || {
      if let Some(run) = me.upgrade() {
        run.tick();
      }
    });
  }

  /// The timer fired: what is due is told, and the next deadline scheduled.
  fn tick(&self) {
    *lock(&self.timer_at) = None;
    let mut out = Vec::new();
    let now = self.clock.mono_ms();
    if lock(&self.signals).ports_due(now) {
      // Read without the lock: a process scan may take a few ms.
      let ports = self.listening_ports();
      lock(&self.signals).on_ports(&ports, now, &mut out);
    }
    lock(&self.signals).take_due(self.clock.mono_ms(), &mut out);
    for signal in out {
      (self.on_signal)(signal);
    }
    self.schedule_timer();
  }

  pub fn pid(&self) -> u32 {
    self.pid
  }

  /// Whether the run settled.
  pub fn is_settled(&self) -> bool {
    lock(&self.state).settled
  }

  /// The TCP ports the run's tree listens on (API.md §6.8), sorted; empty where they cannot
  /// be read (a persisted run, this platform, a read error).
  pub fn listening_ports(&self) -> Vec<u16> {
    self
      .group
      .as_ref()
      .and_then(process::listening_ports)
      .and_then(Result::ok)
      .unwrap_or_default()
  }

  /// Whether the run is a keeper's (it outlives this host; docs/persistence.md).
  pub fn is_persisted(&self) -> bool {
    self.persisted.is_some()
  }

  /// The task's tree (not for a persisted run).
  pub fn group(&self) -> &ProcessGroup {
    self
      .group
      .as_ref()
      .expect("a persisted run has no process group of ours")
  }

  /// Records a finished part; the last one settles: the writer is finished
  /// (flushed and closed) before `on_settle` runs.
  fn part_done(&self, record: impl FnOnce(&mut RunState)) {
    let (exit, aborted, io_error, on_settle) = {
      let mut state = lock(&self.state);
      record(&mut state);
      state.parts_left -= 1;
      if state.parts_left > 0 {
        return;
      }
      state.settled = true;
      (
        state.exit,
        (state.aborted, state.cancelled_via, state.stopped_by),
        state.io_error.take(),
        state.on_settle.take(),
      )
    };
    lock(&self.signals).stop();
    if let Some((terminal, _)) = &self.terminal {
      terminal.finish();
    }
    let (aborted, cancelled_via, mut stopped_by) = aborted;
    if let Some(group) = &self.group {
      // A tree that died of its memory limit before the watch looked.
      if stopped_by.is_none() && !aborted {
        stopped_by = process::memory_limit_hit(group).map(RunLimit::Memory);
      }
      *lock(&self.final_usage) = process::tree_usage(group);
    }
    let counters = lock(&self.writer)
      .as_mut()
      .map(|writer| {
        writer.finish();
        writer.counters()
      })
      .unwrap_or_default();
    let outcome = ShellOutcome {
      exit,
      aborted,
      cancelled_via,
      stopped_by,
      spawn_or_io_error: io_error.or_else(|| counters.write_error.clone()),
      counters,
      recorded_end: None,
      recorded_end_time: None,
    };
    if let Some(on_settle) = on_settle {
      on_settle(outcome);
    }
    // Whatever is left of the tree (a `nohup … &` or a daemon that let go of
    // the pipes) dies with the task, as for monitors; a dead tree is forgotten.
    if let Some(group) = &self.group {
      process::terminate_leftovers(group);
    }
  }
}

/// Reads go straight into the writer; the cap and binary output never stop
/// the reading, so the child never blocks.
impl PipeHandler for ShellRun {
  fn data(&self, tag: u8, bytes: &[u8]) {
    let stream = if tag == Stream::Stderr as u8 {
      Stream::Stderr
    } else {
      Stream::Stdout
    };
    if let Some((terminal, _)) = &self.terminal {
      let wall = self.clock.wall_ms() as u64;
      if let Some(at) = terminal.feed(bytes, wall) {
        self.arm_screen_timer(at, wall);
      }
    }
    let now = self.clock.mono_ms();
    let mut out = Vec::new();
    let armed = {
      let mut signals = lock(&self.signals);
      let mut writer = lock(&self.writer);
      if let Some(writer) = writer.as_mut() {
        if signals.observes_lines() {
          let mut tap = |text: &str| signals.on_text(stream, text, now, &mut out);
          writer.write_tapped(stream, bytes, Some(&mut tap));
        } else {
          writer.write(stream, bytes);
        }
      }
      signals.on_read(now)
    };
    if self.stop_at_cap.load(Ordering::Acquire) && self.cap_reached() {
      self.stop_by(self.output_cap());
    }
    if armed {
      self.schedule_timer();
    }
    for signal in out {
      (self.on_signal)(signal);
    }
  }

  fn closed(&self, _tag: u8, error: Option<io::Error>) {
    let error = error.map(|e| e.to_string());
    self.part_done(move |state| {
      state.io_error = state.io_error.take().or(error);
    });
  }
}

impl ExitHandler for ShellRun {
  fn exited(&self, status: io::Result<ExitStatus>) {
    let (exit, error) = match status {
      Ok(status) => (ExitStatusInfo::from(status), None),
      Err(error) => (NO_EXIT, Some(error.to_string())),
    };
    self.part_done(move |state| {
      state.exit = exit;
      state.io_error = state.io_error.take().or(error);
    });
  }
}
