//! The hub between the registry and the outside world (CONTRACT.md §2.1
//! "Re-entrancy", §2.10 "Delivery to JavaScript", §2.19).
//!
//! Every transition runs under the registry lock and appends its effects to
//! one outbox **before** the lock is released, so the outbox holds all effects
//! (from JavaScript calls and from native reader threads alike) in the order the
//! registry produced them. Only the JavaScript thread drains the outbox, in
//! order, with no lock held while the host runs; a host call that re-enters
//! (an abort listener calling `emitEvent`) drains in place, so the global order
//! is kept. Threads that add effects wake the JavaScript thread through the
//! waker the binding installs.
//!
//! Re-entry is bounded: deliveries nest at most [`MAX_NESTED_DELIVERIES`] deep
//! on one thread (across every hub). A call made deeper than that changes the
//! registry at once, but leaves its effects in the outbox and asks for a
//! wake-up, so they are delivered, in order, when the JavaScript thread is
//! next free. A callback that re-enters without end (an `emitEvent` from every
//! notification, a `start()` retried on every `failed`) therefore turns into a
//! loop over event-loop turns instead of exhausting the native stack.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::entry::Registration;
use super::notification::Notification;
use super::pipeline::Observe;
use super::registry::{
  AbortKind, Effect, MonitorRegistry, RegisterError, RegistryConfig, RunCounters, UnknownEntry,
};
use crate::end::EndVia;
use crate::sync::lock;
use crate::terminal::{InputError, ScreenSnapshot, TerminalInput, TerminalRefusal, TerminalTasks};
use crate::wait::{WaitOutcome, WaitSpec};

/// How many deliveries may nest on one thread before further ones are
/// deferred to the next wake-up (see the module docs). A level costs a few
/// tens of KiB of native stack in the binding, so this stays far below any
/// thread's stack, a Worker's included.
pub const MAX_NESTED_DELIVERIES: usize = 16;

thread_local! {
  static DELIVERY_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// One level of delivery on this thread; dropped when the level ends.
struct DeliveryLevel(());

impl DeliveryLevel {
  fn enter() -> Option<Self> {
    DELIVERY_DEPTH.with(|depth| {
      let d = depth.get();
      (d < MAX_NESTED_DELIVERIES).then(|| {
        depth.set(d + 1);
        DeliveryLevel(())
      })
    })
  }
}

impl Drop for DeliveryLevel {
  fn drop(&mut self) {
    DELIVERY_DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
  }
}

/// What effects ask of the outside world; implemented by the binding (and by tests).
pub trait MonitorHost {
  fn registered(&mut self, id: &str);
  fn status_changed(&mut self, id: Option<&str>);
  fn notify(&mut self, notification: Notification);
  /// Abort the entry's JavaScript controller. Native work (flush, kill) has
  /// already been done by the hub when this runs.
  fn abort(&mut self, id: &str, kind: AbortKind);
  fn wake(&mut self, agent_id: &str);
  fn removed(&mut self, ids: &[String]);
  /// Resolve the `waitFor` promise `wait` (of entry `id`).
  fn wait_resolved(&mut self, id: &str, wait: u64, outcome: WaitOutcome);
  /// Right before a terminal notification is built: copy fields the caller wrote
  /// on its entry object (fed `pid`, `droppedLines`) into the registry.
  fn before_terminal(&mut self, _hub: &MonitorHub, _id: &str) {}
}

pub use crate::clock::Clock;

/// A native monitor's process side, as the hub needs it.
pub trait NativeTask: Send + Sync {
  /// Marks the task aborted and flushes (or discards) its pending partial lines
  /// through the hub; later reads are discarded. Idempotent.
  fn stop_reading(&self, hub: &MonitorHub, kind: AbortKind);
  /// SIGTERM to the process tree (from a Rust thread, within milliseconds), SIGKILL 200 ms later.
  fn kill(&self);
  /// Which lines the reader must build (for waits and `settleMs`) rather
  /// than only count the ones the throttle drops.
  fn observe_lines(&self, _observe: Observe) {}
  /// Terminal mode (API.md §6.5): whether the task has a terminal.
  fn has_terminal(&self) -> bool {
    false
  }
  /// Terminal mode (API.md §6.5): the screen, `None` without a terminal.
  fn screen(&self) -> Option<crate::terminal::ScreenSnapshot> {
    None
  }
  /// Input for the terminal; `None` without a terminal.
  fn write_terminal(&self, _bytes: &[u8]) -> Option<Result<(), crate::terminal::TerminalError>> {
    None
  }
  /// A new size for the terminal; `None` without a terminal.
  fn resize_terminal(
    &self,
    _size: crate::terminal::TerminalSize,
  ) -> Option<Result<(), crate::terminal::TerminalError>> {
    None
  }
  /// With a signal lane (API.md §6.7): the settled notification is due, per
  /// [`MonitorRegistry::lane_settles_due`]; flush the open window, then send
  /// it through [`MonitorRegistry::fire_settled`] (or disarm it if reading stopped).
  fn settle_due(&self, _hub: &MonitorHub) {}
  /// A persisted task (its keeper's child): it outlives this host, so a
  /// registry that goes away leaves it running.
  fn is_persisted(&self) -> bool {
    false
  }
  /// The TCP ports the task's tree listens on (API.md §6.8), sorted; empty where they cannot
  /// be read.
  fn listening_ports(&self) -> Vec<u16> {
    Vec::new()
  }
  /// What the tree used (API.md §6.8 `usage`); `None` for a task without limits.
  fn usage(&self) -> Option<crate::process::Usage> {
    None
  }
  /// [`Self::stop_reading`], then [`Self::kill`].
  fn abort(&self, hub: &MonitorHub, kind: AbortKind) {
    self.stop_reading(hub, kind);
    self.kill();
  }
}

/// An outbox item: a registry effect.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
  Effect(Effect),
}

impl Outgoing {
  fn entry_id(&self) -> Option<&str> {
    match self {
      Self::Effect(effect) => effect.entry_id(),
    }
  }
}

pub struct MonitorHub {
  registry: Mutex<MonitorRegistry>,
  outbox: Mutex<VecDeque<Outgoing>>,
  natives: Mutex<HashMap<String, Arc<dyn NativeTask>>>,
  waker: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
  wake_pending: AtomicBool,
  /// Pokes the idle watcher when a new, possibly earlier, deadline appears.
  idle_poke: (Mutex<bool>, Condvar),
}

impl MonitorHub {
  pub fn new(config: RegistryConfig) -> Self {
    Self::with_clock(config, crate::clock::SharedClock::default())
  }

  /// A hub whose registry reads `clock` where a transition needs the time its caller did not
  /// pass (tests; see `MonitorRegistry::with_clock`).
  pub fn with_clock(config: RegistryConfig, clock: crate::clock::SharedClock) -> Self {
    Self {
      registry: Mutex::new(MonitorRegistry::with_clock(config, clock)),
      outbox: Mutex::new(VecDeque::new()),
      natives: Mutex::new(HashMap::new()),
      waker: Mutex::new(None),
      wake_pending: AtomicBool::new(false),
      idle_poke: (Mutex::new(false), Condvar::new()),
    }
  }

  /// Installs the function that makes the JavaScript thread call [`Self::drain`].
  pub fn set_waker(&self, waker: Box<dyn Fn() + Send + Sync>) {
    *lock(&self.waker) = Some(waker);
  }

  /// Read access to the registry (never hold it across a host call).
  pub fn registry(&self) -> MutexGuard<'_, MonitorRegistry> {
    lock(&self.registry)
  }

  /// The registry if no one holds it (tests check what runs under its lock).
  #[cfg(test)]
  pub fn try_registry(&self) -> Option<MutexGuard<'_, MonitorRegistry>> {
    self.registry.try_lock().ok()
  }

  /// Runs a transition and queues its effects before the registry lock is released.
  pub fn apply(&self, transition: impl FnOnce(&mut MonitorRegistry) -> Vec<Effect>) {
    let mut registry = lock(&self.registry);
    let mut effects = transition(&mut registry);
    effects.extend(registry.take_resolved_waits());
    if !effects.is_empty() {
      lock(&self.outbox).extend(effects.into_iter().map(Outgoing::Effect));
    }
  }

  /// `waitFor` (API.md §6.1): `Ok(Some(outcome))` when the entry already
  /// settled; otherwise the wait resolves through the host's `wait_resolved`.
  pub fn add_wait(
    &self,
    id: &str,
    wait: u64,
    spec: WaitSpec,
    now_mono_ms: i64,
  ) -> Result<Option<WaitOutcome>, UnknownEntry> {
    let native = self.native(id);
    // The reader's observation changes under the registry lock together with the waits (a
    // read sets it there too, from the registry): a read decided after the wait is in place
    // builds the lines it needs. Set after the lock was released, a read in between would
    // count the lines the new wait needs without building them, and then set the observation
    // back from the registry as it was before the wait.
    {
      let mut registry = lock(&self.registry);
      let immediate = registry.add_wait(id, wait, spec, now_mono_ms)?;
      if immediate.is_some() {
        return Ok(immediate);
      }
      if let Some(native) = &native {
        // With the pending patterns compiled for runs of plain lines: the lines they may match.
        native.observe_lines(registry.refresh_line_matcher(id));
      }
    }
    self.poke_idle_watcher();
    Ok(None)
  }

  /// A wait's signal fired.
  pub fn abort_wait(&self, id: &str, wait: u64, now_mono_ms: i64) {
    self.apply(|r| r.abort_wait(id, wait, now_mono_ms));
  }

  /// [`Self::apply`] for `register`, which may refuse.
  pub fn register(&self, reg: Registration, now_mono_ms: i64) -> Result<(), RegisterError> {
    let mut registry = lock(&self.registry);
    let effects = registry.register(reg, now_mono_ms)?;
    lock(&self.outbox).extend(effects.into_iter().map(Outgoing::Effect));
    drop(registry);
    self.poke_idle_watcher();
    Ok(())
  }

  pub fn poke_idle_watcher(&self) {
    let (flag, condvar) = &self.idle_poke;
    *lock(flag) = true;
    condvar.notify_all();
  }

  /// The idle timeout of a native entry, off the JavaScript thread: abort (the
  /// native flush runs here, the controller abort is queued), re-check, settle.
  pub fn native_idle_timeout(&self, clock: &impl Clock, id: &str) {
    self.native_limit(
      clock,
      id,
      |r, now| r.idle_begin(id, now),
      |r, wall| r.idle_finish(id, wall),
    );
  }

  /// A native entry's `timeoutMs` deadline passed (API.md §6.8), on the watcher thread: as
  /// the idle timeout, flush, settle failed with the timeout's end, then the tree is stopped
  /// as a cancel stops it.
  pub fn native_timeout(&self, clock: &impl Clock, id: &str) {
    self.native_limit(
      clock,
      id,
      |r, now| r.timeout_begin(id, now),
      |r, wall| r.timeout_finish(id, wall),
    );
  }

  /// A native entry's tree hit its `limits.memoryBytes` (API.md §6.8), on the reactor's timer:
  /// as the timeout, with the end `limit` (`memory`).
  pub fn native_memory_limit(&self, clock: &impl Clock, id: &str, memory_bytes: u64) {
    let end = crate::end::TaskEnd::memory_limit(memory_bytes);
    let again = end.clone();
    self.native_limit(
      clock,
      id,
      |r, _now| r.limit_begin(id, end),
      |r, wall| r.limit_finish(id, again, wall),
    );
  }

  /// A limit of a native entry passed: `begin` (at the monotonic time) queues its abort if it
  /// really applies; then the flush, `finish` (at the wall time) settles, and the tree is
  /// stopped. The settle comes before the kill, so it never races the child's death.
  fn native_limit(
    &self,
    clock: &impl Clock,
    id: &str,
    begin: impl FnOnce(&mut MonitorRegistry, i64) -> Vec<Effect>,
    finish: impl FnOnce(&mut MonitorRegistry, f64) -> Vec<Effect>,
  ) {
    let mut applies = false;
    self.apply(|r| {
      let effects = begin(r, clock.mono_ms());
      applies = !effects.is_empty();
      effects
    });
    if !applies {
      return;
    }
    let native = self.native(id);
    if let Some(native) = &native {
      native.stop_reading(self, AbortKind::Flush);
    }
    self.apply(|r| finish(r, clock.wall_ms()));
    if let Some(native) = &native {
      native.kill();
    }
    self.wake_js();
  }

  /// Starts the thread that watches idle deadlines. It holds the hub weakly and
  /// ends once the hub is gone. Only native entries have Rust deadlines: fed
  /// entries use JavaScript timers, as in TypeScript (see the binding).
  pub fn spawn_idle_watcher<C: Clock + Send + 'static>(
    hub: &Arc<Self>,
    clock: C,
  ) -> std::io::Result<()> {
    let weak: Weak<Self> = Arc::downgrade(hub);
    std::thread::Builder::new()
      .name("taskstream-idle".into())
      .spawn(move || idle_watch_loop(weak, clock))
      .map(|_| ())
  }

  /// Queues an item from a thread other than the JavaScript thread and wakes it.
  pub fn push_and_wake(&self, item: Outgoing) {
    lock(&self.outbox).push_back(item);
    self.wake_js();
  }

  /// Wakes the JavaScript thread unless a wake-up is already pending.
  pub fn wake_js(&self) {
    if lock(&self.outbox).is_empty() || self.wake_pending.swap(true, Ordering::AcqRel) {
      return;
    }
    if let Some(waker) = lock(&self.waker).as_ref() {
      waker();
    }
  }

  pub fn has_pending(&self) -> bool {
    !lock(&self.outbox).is_empty()
  }

  /// Delivers every queued item, in order: what the JavaScript thread does
  /// when it is free (the waker's callback) and for registry-wide calls.
  pub fn drain(&self, host: &mut impl MonitorHost) {
    let Some(_level) = DeliveryLevel::enter() else {
      return self.defer();
    };
    self.wake_pending.store(false, Ordering::Release);
    while let Some(item) = self.pop_next(|_| true) {
      self.deliver(host, item);
    }
  }

  /// Delivers at most `budget` queued items, in order, and asks for another
  /// wake-up if more are left, so a flood of events never holds the JavaScript
  /// thread for long: timers and I/O run between batches.
  pub fn drain_some(&self, host: &mut impl MonitorHost, budget: usize) {
    let Some(_level) = DeliveryLevel::enter() else {
      return self.defer();
    };
    self.wake_pending.store(false, Ordering::Release);
    for _ in 0..budget {
      match self.pop_next(|_| true) {
        Some(item) => self.deliver(host, item),
        None => return,
      }
    }
    self.wake_js();
  }

  /// Delivers, in order, the queued items of one entry only: what a JavaScript
  /// call about that entry does, so its callbacks run inside the call and after
  /// the entry's earlier effects, while other entries' native events wait for
  /// the JavaScript thread to be free (as their I/O callbacks would in Node).
  pub fn drain_for(&self, host: &mut impl MonitorHost, id: &str) {
    let Some(_level) = DeliveryLevel::enter() else {
      return self.defer();
    };
    while let Some(item) = self.pop_next(|key| key == Some(id)) {
      self.deliver(host, item);
    }
  }

  /// A drain refused for depth: deliver on the next wake-up instead.
  fn defer(&self) {
    tracing::debug!("taskstream: deliveries nested too deep; the rest follow on the next tick");
    self.wake_js();
  }

  fn pop_next(&self, wanted: impl Fn(Option<&str>) -> bool) -> Option<Outgoing> {
    let mut outbox = lock(&self.outbox);
    let index = outbox.iter().position(|item| wanted(item.entry_id()))?;
    outbox.remove(index)
  }

  fn deliver(&self, host: &mut impl MonitorHost, item: Outgoing) {
    match item {
      Outgoing::Effect(effect) => self.execute(host, effect),
    }
  }

  fn execute(&self, host: &mut impl MonitorHost, effect: Effect) {
    match effect {
      Effect::Registered(id) => host.registered(&id),
      Effect::StatusChanged(id) => {
        if let Some(id) = &id {
          lock(&self.registry).publish_status(id);
        }
        host.status_changed(id.as_deref());
      }
      Effect::Notify(n) => host.notify(*n),
      Effect::Terminal { id, detail } => {
        host.before_terminal(self, &id);
        let built = lock(&self.registry).take_terminal(&id, detail.as_deref());
        if let Some(n) = built {
          host.notify(n);
        }
      }
      Effect::Abort { id, kind } => {
        if let Some(native) = self.native(&id) {
          native.abort(self, kind);
        }
        host.abort(&id, kind);
      }
      Effect::Wake { agent_id, .. } => host.wake(&agent_id),
      Effect::WaitResolved { id, wait, outcome } => host.wait_resolved(&id, wait, outcome),
      Effect::Removed { ids, .. } => {
        let mut natives = lock(&self.natives);
        for id in &ids {
          natives.remove(id);
        }
        drop(natives);
        host.removed(&ids);
      }
    }
  }

  pub fn add_native(&self, id: &str, task: Arc<dyn NativeTask>) {
    lock(&self.natives).insert(id.to_owned(), task);
  }

  pub fn native(&self, id: &str) -> Option<Arc<dyn NativeTask>> {
    lock(&self.natives).get(id).cloned()
  }

  /// A native entry that is no longer running has nothing left to read or
  /// run: its readers stop (the rest is discarded) and its tree is killed.
  /// For settles that reach a native entry without an abort: `complete()` or
  /// `fail()` called from JavaScript, and a cancel from a callback during
  /// `start()`, before the process was attached. A task whose entry is gone
  /// (pruned meanwhile) is also dropped from the hub.
  pub fn stop_if_settled(&self, id: &str) {
    let (running, known) = {
      let registry = self.registry();
      (registry.is_running(id), registry.get(id).is_some())
    };
    if running {
      return;
    }
    let native = if known {
      self.native(id)
    } else {
      lock(&self.natives).remove(id)
    };
    if let Some(native) = native {
      native.abort(self, AbortKind::Discard);
    }
  }

  /// The task whose terminal takes `write()`/`resize()`, or why there is none (the rule of
  /// `shell::ShellHub::live_terminal`).
  pub fn live_terminal(&self, id: &str) -> Result<Arc<dyn NativeTask>, TerminalRefusal> {
    let (known, running) = {
      let registry = self.registry();
      (registry.get(id).is_some(), registry.is_running(id))
    };
    let task = self.native(id).filter(|task| task.has_terminal());
    // A monitor's task stays until its entry leaves, so its ended terminal is still `task`.
    TerminalRefusal::check(known, running, task, false)
  }

  /// Every native task, for a synchronous kill at host exit.
  pub fn natives(&self) -> Vec<Arc<dyn NativeTask>> {
    lock(&self.natives).values().cloned().collect()
  }

  /// `cancel(id, {notify})`: silent settles before it aborts; user-visible aborts
  /// first (flushed lines are delivered) and re-checks (§2.1).
  pub fn cancel(
    &self,
    host: &mut impl MonitorHost,
    clock: &impl Clock,
    id: &str,
    notify: bool,
    via: EndVia,
  ) {
    if notify {
      if !self.registry().is_running(id) {
        self.drain_for(host, id);
        return;
      }
      self.apply(|r| r.cancel_begin(id, via));
      self.drain_for(host, id);
      self.apply(|r| r.cancel_finish(id, via, clock.wall_ms()));
    } else {
      self.apply(|r| r.cancel_silent(id, via, clock.wall_ms()));
    }
    self.drain_for(host, id);
  }

  /// `restart(id)`'s stop (API.md §6.8): a running monitor is cancelled as a cancel stops it, its
  /// end `restarted`; then its settled entry leaves the registry. The counters its last run ended
  /// with, which the next run carries on from; `None` while it still runs (an abort under way).
  pub fn stop_for_restart(
    &self,
    host: &mut impl MonitorHost,
    clock: &impl Clock,
    id: &str,
  ) -> Option<RunCounters> {
    self.cancel(host, clock, id, true, EndVia::Restart);
    let mut counters = None;
    self.apply(|r| match r.take_for_restart(id) {
      Some((carried, effects)) => {
        counters = Some(carried);
        effects
      }
      None => Vec::new(),
    });
    self.drain_for(host, id);
    counters
  }

  /// The idle timeout of a fed entry whose JavaScript timer fired (§2.5), on
  /// the JavaScript thread: abort (listeners may flush), re-check, settle.
  pub fn fed_idle_timeout(&self, host: &mut impl MonitorHost, clock: &impl Clock, id: &str) {
    let mut expired = false;
    self.apply(|r| {
      let effects = r.idle_begin_fed(id);
      expired = !effects.is_empty();
      effects
    });
    if !expired {
      return;
    }
    self.drain_for(host, id);
    self.apply(|r| r.idle_finish(id, clock.wall_ms()));
    self.drain_for(host, id);
  }

  /// `abortAll(opts)`: a snapshot of every id, each cancelled.
  pub fn abort_all(&self, host: &mut impl MonitorHost, clock: &impl Clock, notify: bool) {
    let ids = self.registry().ids();
    for id in ids {
      self.cancel(host, clock, &id, notify, EndVia::AbortAll);
    }
  }

  /// `cancelRunningForOwner`: collect first, then cancel each.
  pub fn cancel_running_for_owner(
    &self,
    host: &mut impl MonitorHost,
    clock: &impl Clock,
    agent_id: &str,
    notify: bool,
  ) {
    let ids = self.registry().running_ids_for_owner(agent_id);
    for id in ids {
      self.cancel(host, clock, &id, notify, EndVia::Owner);
    }
  }

  /// `reset()` after the per-agent callbacks were cleared: native effects not
  /// yet delivered are dropped (reset emits nothing), every running entry is
  /// aborted, all are removed, and status-change fires once with no argument;
  /// nothing happens for an empty registry.
  pub fn reset(&self, host: &mut impl MonitorHost) {
    let mut nonempty = false;
    self.apply(|r| match r.reset_begin() {
      Some(effects) => {
        nonempty = true;
        effects
      }
      None => Vec::new(),
    });
    if !nonempty {
      return;
    }
    self.discard_queued_except_aborts();
    self.drain(host);
    self.apply(|r| r.reset_finish());
    self.drain(host);
  }

  fn discard_queued_except_aborts(&self) {
    lock(&self.outbox).retain(|item| {
      matches!(
        item,
        Outgoing::Effect(Effect::Abort { .. } | Effect::WaitResolved { .. })
      )
    });
  }
}

/// Longest sleep of the idle watcher, so it notices a dropped hub.
const IDLE_WATCH_MAX_SLEEP_MS: i64 = 1000;

fn idle_watch_loop<C: Clock>(weak: Weak<MonitorHub>, clock: C) {
  loop {
    let Some(hub) = weak.upgrade() else {
      return;
    };
    let now = clock.mono_ms();
    let due = hub.registry().take_due_idle(now);
    for (id, _native) in due {
      hub.native_idle_timeout(&clock, &id);
    }
    let deadlines = hub.registry().take_due_deadlines(now);
    for id in deadlines {
      hub.native_timeout(&clock, &id);
    }
    // Settled notifications of monitors with a signal lane: their windows first.
    let lane_settles = hub.registry().lane_settles_due(now);
    for id in lane_settles {
      match hub.native(&id) {
        Some(native) => native.settle_due(&hub),
        None => hub.apply(|r| {
          r.disarm_settle(&id);
          Vec::new()
        }),
      }
    }
    // `port` waits (API.md §6.8): the trees' ports, read outside the registry lock.
    let ports_due = hub.registry().ports_due(now);
    for id in ports_due {
      let ports = hub
        .native(&id)
        .map(|native| native.listening_ports())
        .unwrap_or_default();
      hub.apply(|r| r.on_ports(&id, &ports, now));
    }
    // Waits' quiet periods and timeouts, and the other settled notifications.
    hub.apply(|r| r.take_due_timers(now));
    hub.wake_js();
    let next = {
      let registry = hub.registry();
      [
        registry.next_idle_deadline(),
        registry.next_timer_deadline(),
      ]
      .into_iter()
      .flatten()
      .min()
    };
    let sleep_ms = next
      .map(|d| (d - clock.mono_ms()).clamp(0, IDLE_WATCH_MAX_SLEEP_MS))
      .unwrap_or(IDLE_WATCH_MAX_SLEEP_MS);
    let (flag, condvar) = &hub.idle_poke;
    let mut poked = lock(flag);
    if !*poked && sleep_ms > 0 {
      poked = condvar
        .wait_timeout(poked, Duration::from_millis(sleep_ms as u64))
        .map(|(guard, _)| guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner().0);
    }
    *poked = false;
    drop(poked);
    drop(hub);
  }
}

impl TerminalTasks for MonitorHub {
  /// The screen of a terminal monitor (also after it ended, until its entry leaves).
  fn screen(&self, id: &str) -> Result<Option<ScreenSnapshot>, TerminalRefusal> {
    if self.registry().get(id).is_none() {
      return Err(TerminalRefusal::Unknown);
    }
    Ok(self.native(id).and_then(|task| task.screen()))
  }

  fn send_input(&self, id: &str, input: TerminalInput) -> Result<(), InputError> {
    let task = self.live_terminal(id).map_err(InputError::Refused)?;
    input.deliver(|b| task.write_terminal(b), |s| task.resize_terminal(s))
  }
}
