//! The shell registry's hub (the counterpart of `monitor/hub.rs` for background shells): the
//! registry together with what lives beside an entry until it leaves (its run, its pending
//! waits, its last screen) and the rules that tie them (API.md §4, §6.1, §6.5):
//!
//! - a wait ends with the settle (`exit`, the status settled), or `cancelled` when a `reset()`
//!   removes an entry that has no run of ours to wait for;
//! - a wait on a shell with no run of ours (registered from JavaScript) sees no output: only its
//!   clock (the earlier of `quietMs` and `timeoutMs`, counted from the call) ends it before the
//!   settle;
//! - settling from JavaScript (`complete()`/`fail()`) stops a run we started;
//! - a cancel of a persisted run tells its keeper who asked, for the end it records;
//! - a terminal shell's last screen, and what a run used (`usage`), answer until the entry
//!   leaves.
//!
//! The host owns the hub on its one thread and carries out the [`ShellOutgoing`] items in order
//! (callbacks, promises, objects); the runs report to the host, which feeds the hub.

use std::collections::HashMap;
use std::sync::Arc;

use super::entry::{ShellEntry, ShellStatus};
use super::registry::{ShellEffect, ShellRegistry};
use super::runner::ShellRun;
use super::runs::{ShellSettled, ShellVerdict};
use crate::clock::{Clock, SharedClock};
use crate::end::TaskEnd;
use crate::process::{Usage, PORTS_SUPPORTED};
use crate::terminal::{InputError, ScreenSnapshot, TerminalInput, TerminalRefusal, TerminalTasks};
use crate::wait::{WaitOutcome, WaitReason, WaitSpec};

/// What the host does after a transition, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum ShellOutgoing {
  /// [`ShellEffect::Registered`].
  Registered(String),
  /// [`ShellEffect::StatusChanged`].
  StatusChanged(Option<String>),
  /// [`ShellEffect::Notify`]: the host reads the caller's `pid`, then
  /// [`ShellRegistry::take_notification`].
  Notify(String),
  /// [`ShellEffect::Abort`].
  Abort(String),
  /// Resolve this wait with this outcome (its `elapsedMs` measured from the `waitFor` call).
  ResolveWait(u64, WaitOutcome),
  /// These entries left: the host lets their objects go (after every other item).
  Forget(Vec<String>),
}

/// How a new wait is judged, once [`ShellHub::add_wait`] took it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPlan {
  /// By the shell's run, which reads its output (it reports the outcome).
  OnRun,
  /// No output reaches us: a timer of this many ms ends it with this reason, unless the settle
  /// comes first.
  Timer(u64, WaitReason),
  /// Only the settle ends it.
  Settle,
}

/// A run of ours, linked to its entry.
struct Linked {
  id: String,
  /// The key the host gave the entry's object (its controller stops this run).
  object: u64,
  run: Arc<ShellRun>,
}

/// The registry of background shells and what lives beside its entries.
pub struct ShellHub {
  registry: ShellRegistry,
  /// The runs `executeBackground` started (or `recover` adopted), by the registry's token for
  /// each, until they settle. A shell id names the newest run of that id (a shell `reset()`
  /// removed may still run while a new one takes its id).
  runs: HashMap<u64, Linked>,
  /// What a settled run used, by shell id, until its entry leaves.
  final_usage: HashMap<String, Usage>,
  /// Pending `waitFor` ids, by shell id, each with its start on [`Self::clock`] (monotonic ms).
  waits: HashMap<String, Vec<(u64, i64)>>,
  /// The last screen of terminal shells that ended, until their entry leaves.
  last_screens: HashMap<String, ScreenSnapshot>,
  /// What a wait's `elapsedMs` is measured on.
  clock: SharedClock,
}

impl ShellHub {
  pub fn new(registry: ShellRegistry) -> Self {
    Self::with_clock(registry, SharedClock::default())
  }

  /// A hub whose waits are timed on `clock` (a test's `ManualClock`).
  pub fn with_clock(registry: ShellRegistry, clock: SharedClock) -> Self {
    Self {
      registry,
      runs: HashMap::new(),
      final_usage: HashMap::new(),
      waits: HashMap::new(),
      last_screens: HashMap::new(),
      clock,
    }
  }

  /// `outcome` of a wait begun at `started`, its `elapsedMs` measured now.
  fn timed(&self, started: i64, outcome: WaitOutcome) -> WaitOutcome {
    let elapsed_ms = (self.clock.mono_ms() - started).max(0) as f64;
    WaitOutcome {
      elapsed_ms,
      ..outcome
    }
  }

  pub fn registry(&self) -> &ShellRegistry {
    &self.registry
  }

  pub fn registry_mut(&mut self) -> &mut ShellRegistry {
    &mut self.registry
  }

  pub fn entry(&self, id: &str) -> Option<&ShellEntry> {
    self.registry.get(id)
  }

  fn is_running(&self, id: &str) -> bool {
    self.entry(id).is_some_and(ShellEntry::is_running)
  }

  /// A transition's effects as the host carries them out: the registry's effects in order,
  /// then the waits they end, then the entries that left (their screens forgotten here).
  pub fn outgoing(&mut self, effects: Vec<ShellEffect>) -> Vec<ShellOutgoing> {
    let mut out = Vec::with_capacity(effects.len() + 1);
    let mut settled = Vec::new();
    let mut removed = Vec::new();
    for effect in effects {
      out.push(match effect {
        ShellEffect::Registered(id) => ShellOutgoing::Registered(id),
        ShellEffect::StatusChanged(id) => {
          settled.extend(id.clone());
          ShellOutgoing::StatusChanged(id)
        }
        ShellEffect::Notify(id) => ShellOutgoing::Notify(id),
        ShellEffect::Abort(id) => ShellOutgoing::Abort(id),
        ShellEffect::Removed(ids) => {
          removed.extend(ids);
          continue;
        }
      });
    }
    // Waits end with the settle; a shell `reset()` removed while its run goes on keeps its
    // waits until that run ends, one with no run of ours resolves now, `cancelled`.
    for id in settled {
      if let Some(status) = self
        .entry(&id)
        .filter(|e| !e.is_running())
        .map(|e| e.status)
      {
        out.extend(self.settle_waits(&id, status));
      }
    }
    for id in &removed {
      if self.entry(id).is_none() && self.run_of(id).is_none() {
        out.extend(self.settle_waits(id, ShellStatus::Cancelled));
      }
    }
    if !removed.is_empty() {
      for id in &removed {
        self.last_screens.remove(id);
        self.final_usage.remove(id);
      }
      out.push(ShellOutgoing::Forget(removed));
    }
    out
  }

  /// The shell settled (or left with no run to wait for): every pending wait ends with `exit`
  /// and `status`.
  pub fn settle_waits(&mut self, id: &str, status: ShellStatus) -> Vec<ShellOutgoing> {
    let waits = self.waits.remove(id).unwrap_or_default();
    let outcome = WaitOutcome {
      reason: WaitReason::Exit,
      line: None,
      port: None,
      status,
      elapsed_ms: 0.0,
    };
    waits
      .into_iter()
      .map(|(wait, started)| ShellOutgoing::ResolveWait(wait, self.timed(started, outcome.clone())))
      .collect()
  }

  /// `waitFor` on a running shell: the wait is pending until the plan's end or the settle.
  pub fn add_wait(&mut self, id: &str, wait: u64, spec: WaitSpec) -> WaitPlan {
    let started = self.clock.mono_ms();
    self
      .waits
      .entry(id.to_owned())
      .or_default()
      .push((wait, started));
    if let Some(run) = self.run_of(id) {
      run.add_wait(wait, spec);
      return WaitPlan::OnRun;
    }
    match (spec.quiet_ms, spec.timeout_ms) {
      (Some(q), Some(t)) if t < q => WaitPlan::Timer(t, WaitReason::Timeout),
      (Some(q), _) => WaitPlan::Timer(q, WaitReason::Quiet),
      (None, Some(t)) => WaitPlan::Timer(t, WaitReason::Timeout),
      (None, None) => WaitPlan::Settle,
    }
  }

  /// A wait ended (its outcome is the host's to deliver): it is no longer pending. When it
  /// was, its start.
  pub fn forget_wait(&mut self, id: &str, wait: u64) -> Option<i64> {
    let waits = self.waits.get_mut(id)?;
    let at = waits.iter().position(|(w, _)| *w == wait)?;
    Some(waits.remove(at).1)
  }

  /// A wait's signal fired: its `aborted` outcome (the run's, when it judged the wait), or
  /// `None` when it had ended already.
  pub fn abort_wait(&mut self, id: &str, wait: u64) -> Option<WaitOutcome> {
    let started = self.forget_wait(id, wait)?;
    let outcome = self.run_of(id).and_then(|run| run.abort_wait(wait));
    let outcome = outcome.unwrap_or(WaitOutcome {
      reason: WaitReason::Aborted,
      line: None,
      port: None,
      status: ShellStatus::Running,
      elapsed_ms: 0.0,
    });
    Some(self.timed(started, outcome))
  }

  /// The timer of a [`WaitPlan::Timer`] fired: the wait's outcome with `reason`, or `None` when
  /// it had ended already (the settle won the race).
  pub fn wait_timer_fired(
    &mut self,
    id: &str,
    wait: u64,
    reason: WaitReason,
  ) -> Option<WaitOutcome> {
    let started = self.forget_wait(id, wait)?;
    let outcome = WaitOutcome {
      reason,
      line: None,
      port: None,
      status: ShellStatus::Running,
      elapsed_ms: 0.0,
    };
    Some(self.timed(started, outcome))
  }

  /// Whether the wait is still pending (its timer may have lost the race with the settle).
  pub fn is_waiting(&self, id: &str, wait: u64) -> bool {
    self
      .waits
      .get(id)
      .is_some_and(|w| w.iter().any(|(w, _)| *w == wait))
  }

  /// A run of ours begins for entry `id` (just registered): the registry's token for it.
  pub fn begin_run(&mut self, id: &str) -> u64 {
    self.registry.track_run(id)
  }

  /// Links started run `token` to its entry, whose object the host knows as `object`. A run
  /// whose entry already settled (a callback stopped it before the run existed), or whose
  /// controller was `aborted` meanwhile, is cancelled: the result says so.
  pub fn attach_run(
    &mut self,
    id: &str,
    token: u64,
    object: u64,
    run: Arc<ShellRun>,
    aborted: bool,
  ) -> bool {
    let stopped = !self.is_running(id) || aborted;
    if stopped {
      run.cancel();
    }
    let id = id.to_owned();
    self.runs.insert(token, Linked { id, object, run });
    stopped
  }

  /// Run `token` of `id` ended (§2.15 step 9): the registry settles a held running entry with
  /// `verdict` (its effects as the host carries them out, and what the run's `done` reports);
  /// the run is unlinked, its last screen and what it used kept while the entry stays (unless
  /// a newer run took the id).
  pub fn finish_run(
    &mut self,
    id: &str,
    token: u64,
    verdict: ShellVerdict,
    end: TaskEnd,
    end_time: f64,
  ) -> (Vec<ShellOutgoing>, ShellSettled) {
    if let Some(Linked { run, .. }) = self.runs.remove(&token) {
      if self.entry(id).is_some() && self.run_of(id).is_none() {
        if let Some(screen) = run.screen() {
          self.last_screens.insert(id.to_owned(), screen);
        }
        if let Some(usage) = run.usage() {
          self.final_usage.insert(id.to_owned(), usage);
        }
      }
    }
    let (effects, settled) = (self.registry).finish_run(id, token, verdict, end, end_time);
    (self.outgoing(effects), settled)
  }

  /// The run of shell `id` (its newest), while it has one.
  pub fn run_of(&self, id: &str) -> Option<Arc<ShellRun>> {
    let linked = self.runs.iter().filter(|(_, l)| l.id == id);
    let (_, newest) = linked.max_by_key(|(token, _)| **token)?;
    Some(Arc::clone(&newest.run))
  }

  /// The controller of the entry object the host knows as `object` was aborted: its run is
  /// cancelled. A persisted run first learns who cancelled it (the registry's `cancel()`,
  /// `abortAll()`, …), for the end its keeper records.
  pub fn cancel_run(&self, object: u64) {
    let Some(linked) = self.runs.values().find(|l| l.object == object) else {
      return;
    };
    let run = &linked.run;
    if run.is_persisted() {
      let entry = self.entry(&linked.id);
      if let Some(via) = entry.and_then(|e| e.end.as_ref().or(e.ending.as_ref())?.via) {
        run.cancel_via(via);
      }
    }
    run.cancel();
  }

  /// `entry.ports` (API.md §6.8): the TCP ports the tree of shell `id`'s run listens on, while
  /// it runs and where they can be read.
  pub fn ports(&self, id: &str) -> Option<Vec<u16>> {
    let run = self.run_of(id).filter(|run| !run.is_settled())?;
    PORTS_SUPPORTED.then(|| run.listening_ports())
  }

  /// `entry.usage` (API.md §6.8): what shell `id`'s run used, live while it runs and final
  /// after, until the entry leaves (a run without limits has none).
  pub fn usage(&self, id: &str) -> Option<Usage> {
    match self.run_of(id) {
      Some(run) => run.usage(),
      None => self.final_usage.get(id).copied(),
    }
  }

  /// `complete()`/`fail()` from JavaScript settled a shell whose run we started: the run is
  /// stopped too (its tree ended), never left running unreachable.
  pub fn stop_run_if_settled(&self, id: &str) {
    if !self.is_running(id) {
      if let Some(run) = self.run_of(id) {
        run.cancel();
      }
    }
  }

  /// The run whose terminal takes `write()`/`resize()`, or why there is none.
  pub fn live_terminal(&self, id: &str) -> Result<Arc<ShellRun>, TerminalRefusal> {
    let run = self.run_of(id).filter(|run| run.has_terminal());
    let (known, running) = (self.entry(id).is_some(), self.is_running(id));
    TerminalRefusal::check(known, running, run, self.last_screens.contains_key(id))
  }
}

impl TerminalTasks for ShellHub {
  /// The screen of a terminal shell: live, or the last one once it ended.
  fn screen(&self, id: &str) -> Result<Option<ScreenSnapshot>, TerminalRefusal> {
    if self.entry(id).is_none() {
      return Err(TerminalRefusal::Unknown);
    }
    let live = self.run_of(id).and_then(|run| run.screen());
    Ok(live.or_else(|| self.last_screens.get(id).cloned()))
  }

  fn send_input(&self, id: &str, input: TerminalInput) -> Result<(), InputError> {
    let run = self.live_terminal(id).map_err(InputError::Refused)?;
    input.deliver(|b| run.write_terminal(b), |s| run.resize_terminal(s))
  }
}
