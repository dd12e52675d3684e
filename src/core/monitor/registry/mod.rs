//! The monitor state machine (CONTRACT.md §2.1–2.9), free of JavaScript.
//!
//! Every transition returns the [`Effect`]s the binding must carry out, in
//! order. The registry never calls out while it is borrowed, so callbacks and
//! abort listeners may re-enter it (CONTRACT.md §2.1 "Re-entrancy"). Transitions
//! that must let JavaScript run in the middle (a user-visible cancel, the idle
//! timeout, `reset`) are split into a `*_begin` and a `*_finish` step.

use super::entry::{EntryMode, MonitorEntry, MonitorStatus, Registration};
use super::notification::{
  batch_notification, event_notification_with_digest, settled_notification,
  settled_notification_with, terminal_notification, truncate_event_line, Notification,
};
use super::pipeline::Observe;
use super::signal::{DigestNote, Mark};
use crate::clock::{Clock, SharedClock};
use crate::end::{EndReason, EndVia, TaskEnd};
use crate::task::{prune_ids, TerminalKey};
use crate::text::sanitize_monitor_line;
use crate::wait::{WaitOutcome, WaitSpec};

mod timers;
mod types;
pub use types::{
  AbortKind, Effect, ExitInfo, RegisterError, RegistryConfig, RunCounters, UnknownEntry,
};

#[derive(Debug, Default)]
pub struct MonitorRegistry {
  config: RegistryConfig,
  entries: Vec<MonitorEntry>,
  /// Waits resolved by a settle or a removal, for [`Self::take_resolved_waits`].
  resolved_waits: Vec<Effect>,
  /// What a transition reads the time from when its caller did not pass it (a settle's waits).
  clock: SharedClock,
}

impl MonitorRegistry {
  pub fn new(config: RegistryConfig) -> Self {
    Self::with_clock(config, SharedClock::default())
  }

  /// A registry on an injected clock (tests).
  pub fn with_clock(config: RegistryConfig, clock: SharedClock) -> Self {
    Self {
      config,
      entries: Vec::new(),
      resolved_waits: Vec::new(),
      clock,
    }
  }

  pub fn config(&self) -> RegistryConfig {
    self.config
  }

  pub fn get(&self, id: &str) -> Option<&MonitorEntry> {
    self.entries.iter().find(|e| e.id == id)
  }

  fn get_mut(&mut self, id: &str) -> Option<&mut MonitorEntry> {
    self.entries.iter_mut().find(|e| e.id == id)
  }

  fn running_mut(&mut self, id: &str) -> Option<&mut MonitorEntry> {
    self.get_mut(id).filter(|e| e.is_running())
  }

  pub fn is_running(&self, id: &str) -> bool {
    self.get(id).is_some_and(MonitorEntry::is_running)
  }

  /// Ids in insertion order.
  pub fn ids(&self) -> Vec<String> {
    self.entries.iter().map(|e| e.id.clone()).collect()
  }

  /// Ids of the entries JavaScript has not yet seen settle (`getRunning`).
  pub fn running_ids(&self) -> Vec<String> {
    self
      .entries
      .iter()
      .filter(|e| e.is_visibly_running())
      .map(|e| e.id.clone())
      .collect()
  }

  pub fn running_count(&self) -> usize {
    self.entries.iter().filter(|e| e.is_running()).count()
  }

  /// `hasRunningForOwner`, as JavaScript has been told so far.
  pub fn has_running_for_owner(&self, agent_id: &str) -> bool {
    self
      .entries
      .iter()
      .any(|e| e.is_visibly_running() && e.owner_agent_id.as_deref() == Some(agent_id))
  }

  pub fn running_ids_for_owner(&self, agent_id: &str) -> Vec<String> {
    self
      .entries
      .iter()
      .filter(|e| e.is_running() && e.owner_agent_id.as_deref() == Some(agent_id))
      .map(|e| e.id.clone())
      .collect()
  }

  pub fn is_empty(&self) -> bool {
    self.entries.is_empty()
  }

  /// The checks `register` runs first, usable before spawning anything.
  pub fn check_can_register(&self, id: &str) -> Result<(), RegisterError> {
    if self.running_count() >= self.config.max_concurrent {
      return Err(RegisterError::TooManyRunning(self.config.max_concurrent));
    }
    if self.get(id).is_some() {
      return Err(RegisterError::Duplicate(id.to_owned()));
    }
    Ok(())
  }

  /// §2.1 register: cap, duplicate id, insert, arm the idle deadline, then the
  /// register callback (unowned entries) and status-change.
  pub fn register(
    &mut self,
    reg: Registration,
    now_mono_ms: i64,
  ) -> Result<Vec<Effect>, RegisterError> {
    self.check_can_register(&reg.monitor_id)?;
    let entry = MonitorEntry::from_registration(reg, now_mono_ms);
    let id = entry.id.clone();
    let owned = entry.owner().is_some();
    self.entries.push(entry);
    let mut effects = Vec::with_capacity(2);
    if !owned {
      effects.push(Effect::Registered(id.clone()));
    }
    effects.push(Effect::StatusChanged(Some(id)));
    Ok(effects)
  }

  /// §2.1 emitEvent. Fed entries re-arm their idle deadline; native ones follow bytes only.
  pub fn emit_event(
    &mut self,
    id: &str,
    line: &str,
    now_wall_ms: f64,
    now_mono_ms: i64,
  ) -> Vec<Effect> {
    self.emit_event_with_digest(id, line, None, now_wall_ms, now_mono_ms)
  }

  /// [`Self::emit_event`] with, for a native entry with `digest` (API.md
  /// §6.7), the lines dropped since its previous notification.
  pub fn emit_event_with_digest(
    &mut self,
    id: &str,
    line: &str,
    digest: Option<DigestNote>,
    now_wall_ms: f64,
    now_mono_ms: i64,
  ) -> Vec<Effect> {
    let Some(entry) = self.running_mut(id).filter(|e| !e.detached) else {
      return Vec::new();
    };
    entry.event_count += 1;
    entry.last_event_time = now_wall_ms;
    let mut waits = Vec::new();
    if entry.mode == EntryMode::Fed {
      entry.rearm_idle(now_mono_ms);
      // Fed waits follow `emitEvent` (API.md §6.1).
      entry.waits.on_activity(now_mono_ms);
      if entry.waits.wants_lines() {
        waits = entry
          .waits
          .on_line(&sanitize_monitor_line(line), now_mono_ms);
      }
    }
    let line = truncate_event_line(line);
    let mut effects = vec![Effect::Notify(Box::new(event_notification_with_digest(
      entry,
      &line,
      digest.as_ref(),
    )))];
    effects.extend(
      waits
        .into_iter()
        .map(|(wait, outcome)| Effect::WaitResolved {
          id: id.to_owned(),
          wait,
          outcome,
        }),
    );
    effects.extend(self.after_events(id, now_wall_ms));
    effects
  }

  /// A native entry's closed batch window (API.md §6.7): one notification
  /// for its lines, each counted as an event; `maxEvents` counts lines (the
  /// lane already cuts a window at the limit; lines past it are ignored here too).
  pub fn emit_batch(
    &mut self,
    id: &str,
    mut lines: Vec<String>,
    marks: Vec<Mark>,
    digest: Option<DigestNote>,
    now_wall_ms: f64,
    _now_mono_ms: i64,
  ) -> Vec<Effect> {
    let Some(entry) = self.running_mut(id).filter(|e| !e.detached) else {
      return Vec::new();
    };
    let room = entry.max_events.saturating_sub(entry.event_count);
    lines.truncate(usize::try_from(room).unwrap_or(usize::MAX));
    if lines.is_empty() {
      return Vec::new();
    }
    let first = entry.event_count + 1;
    entry.event_count += lines.len() as u64;
    entry.last_event_time = now_wall_ms;
    let mut effects = vec![Effect::Notify(Box::new(batch_notification(
      entry,
      first,
      &lines,
      &marks,
      digest.as_ref(),
    )))];
    effects.extend(self.after_events(id, now_wall_ms));
    effects
  }

  /// `maxEvents` reached: settle completed, abort (flush), then the terminal notification.
  fn after_events(&mut self, id: &str, now_wall_ms: f64) -> Vec<Effect> {
    let Some(entry) = self.get_mut(id) else {
      return Vec::new();
    };
    if entry.event_count < entry.max_events {
      return Vec::new();
    }
    entry.error = Some("Max events reached".to_owned());
    let mut effects = self.settle(
      id,
      MonitorStatus::Completed,
      TaskEnd::max_events(),
      now_wall_ms,
    );
    effects.push(abort(id, AbortKind::Flush));
    effects.push(terminal(id, Some("Max events reached")));
    effects
  }

  /// §2.1 complete: store a numeric code, settle, then the terminal notification.
  pub fn complete(&mut self, id: &str, exit_code: Option<i32>, now_wall_ms: f64) -> Vec<Effect> {
    let Some(entry) = self.running_mut(id) else {
      return Vec::new();
    };
    if exit_code.is_some() {
      entry.exit_code = exit_code;
    }
    let end = TaskEnd::exited(exit_code);
    let mut effects = self.settle(id, MonitorStatus::Completed, end, now_wall_ms);
    effects.push(terminal(
      id,
      exit_code
        .map(|c| format!("Exited with code {c}"))
        .as_deref(),
    ));
    effects
  }

  /// §2.1 fail: store the error, settle, then the terminal notification.
  pub fn fail(&mut self, id: &str, error: &str, now_wall_ms: f64) -> Vec<Effect> {
    self.fail_with_end(id, error, TaskEnd::failed(error), now_wall_ms)
  }

  /// [`Self::fail`] with the end it records (a spawn failure, a signal, …).
  pub fn fail_with_end(
    &mut self,
    id: &str,
    error: &str,
    end: TaskEnd,
    now_wall_ms: f64,
  ) -> Vec<Effect> {
    let Some(entry) = self.running_mut(id) else {
      return Vec::new();
    };
    entry.error = Some(error.to_owned());
    let mut effects = self.settle(id, MonitorStatus::Failed, end, now_wall_ms);
    effects.push(terminal(id, Some(error)));
    effects
  }

  /// §2.1 silent cancel: settle, mark notified, abort, then wake the owner.
  pub fn cancel_silent(&mut self, id: &str, via: EndVia, now_wall_ms: f64) -> Vec<Effect> {
    if !self.is_running(id) {
      return Vec::new();
    }
    let end = TaskEnd::cancelled(via);
    let mut effects = self.settle(id, MonitorStatus::Cancelled, end, now_wall_ms);
    let owner = match self.get_mut(id) {
      Some(entry) => {
        entry.notified = true;
        entry.owner().map(str::to_owned)
      }
      None => None,
    };
    effects.push(abort(id, AbortKind::Flush));
    if let Some(agent_id) = owner {
      effects.push(Effect::Wake {
        id: id.to_owned(),
        agent_id,
      });
    }
    effects
  }

  /// `restart(id)` (API.md §6.8): a settled entry leaves the registry so that its next run can
  /// take its id; its counters are handed to that run. `None` while it runs or when unknown.
  pub fn take_for_restart(&mut self, id: &str) -> Option<(RunCounters, Vec<Effect>)> {
    let index = self
      .entries
      .iter()
      .position(|e| e.id == id && !e.is_running())?;
    let entry = self.entries.remove(index);
    let counters = RunCounters {
      event_count: entry.event_count,
      dropped_lines: entry.dropped_lines,
      bytes_read: entry.bytes_read,
      lines_seen: entry.lines_seen,
      truncated_bytes: entry.truncated_bytes,
    };
    // Keyed by the id, so the restart's own delivery hands it over before the next run registers.
    let effects = vec![Effect::Removed {
      by: Some(entry.id.clone()),
      ids: vec![entry.id],
    }];
    Some((counters, effects))
  }

  /// The next run of a restarted entry counts on from its last one.
  pub fn carry_counters(&mut self, id: &str, counters: RunCounters) {
    if let Some(e) = self.get_mut(id) {
      e.event_count += counters.event_count;
      e.dropped_lines += counters.dropped_lines;
      e.bytes_read += counters.bytes_read;
      e.lines_seen += counters.lines_seen;
      e.truncated_bytes += counters.truncated_bytes;
    }
  }

  /// §2.1 user-visible cancel, step 1: abort first (listeners may still emit).
  pub fn cancel_begin(&mut self, id: &str, via: EndVia) -> Vec<Effect> {
    match self.running_mut(id) {
      Some(entry) => {
        entry.ending.get_or_insert(TaskEnd::cancelled(via));
        vec![abort(id, AbortKind::Flush)]
      }
      None => Vec::new(),
    }
  }

  /// Step 2: unless the abort settled the entry, settle it cancelled and notify.
  pub fn cancel_finish(&mut self, id: &str, via: EndVia, now_wall_ms: f64) -> Vec<Effect> {
    if !self.is_running(id) {
      return Vec::new();
    }
    let end = TaskEnd::cancelled(via);
    let mut effects = self.settle(id, MonitorStatus::Cancelled, end, now_wall_ms);
    effects.push(terminal(id, None));
    effects
  }

  /// Ids of running entries whose idle deadline has passed.
  pub fn expired_idle(&self, now_mono_ms: i64) -> Vec<String> {
    self
      .entries
      .iter()
      .filter(|e| e.is_running() && e.idle_deadline_ms.is_some_and(|d| d <= now_mono_ms))
      .map(|e| e.id.clone())
      .collect()
  }

  /// Native entries whose deadline passed and that were not handed out since
  /// their last re-arm, with their mode; marks them handed out. Fed entries'
  /// idle timers are JavaScript timers (see the binding), as in TypeScript.
  pub fn take_due_idle(&mut self, now_mono_ms: i64) -> Vec<(String, EntryMode)> {
    let mut due = Vec::new();
    for e in &mut self.entries {
      if e.mode == EntryMode::Native
        && e.is_running()
        && !e.idle_announced
        && e.idle_deadline_ms.is_some_and(|d| d <= now_mono_ms)
      {
        e.idle_announced = true;
        due.push((e.id.clone(), e.mode));
      }
    }
    due
  }

  /// The earliest idle deadline or `timeoutMs` deadline of any running native entry not yet
  /// handed out.
  pub fn next_idle_deadline(&self) -> Option<i64> {
    let running = || {
      self
        .entries
        .iter()
        .filter(|e| e.mode == EntryMode::Native && e.is_running())
    };
    let idle = running()
      .filter(|e| !e.idle_announced)
      .filter_map(|e| e.idle_deadline_ms);
    let deadlines = running()
      .filter(|e| !e.deadline_announced)
      .filter_map(|e| e.deadline_ms);
    idle.chain(deadlines).min()
  }

  /// `timeoutMs` (API.md §6.8): a native entry ends `timeout_ms` after `now_mono_ms`.
  pub fn set_deadline(&mut self, id: &str, timeout_ms: u64, now_mono_ms: i64) {
    if let Some(e) = self.running_mut(id) {
      e.timeout_ms = Some(timeout_ms);
      e.deadline_ms = Some(now_mono_ms.saturating_add(timeout_ms as i64));
      e.deadline_announced = false;
    }
  }

  /// Native entries whose `timeoutMs` deadline passed, not handed out before; marks them.
  pub fn take_due_deadlines(&mut self, now_mono_ms: i64) -> Vec<String> {
    let mut due = Vec::new();
    for e in &mut self.entries {
      if e.mode == EntryMode::Native
        && e.is_running()
        && !e.deadline_announced
        && e.deadline_ms.is_some_and(|d| d <= now_mono_ms)
      {
        e.deadline_announced = true;
        due.push(e.id.clone());
      }
    }
    due
  }

  /// `timeoutMs`, step 1: if the deadline passed and the entry runs, abort it (flush).
  pub fn timeout_begin(&mut self, id: &str, now_mono_ms: i64) -> Vec<Effect> {
    match self.get_mut(id) {
      Some(e) if e.is_running() && e.deadline_ms.is_some_and(|d| d <= now_mono_ms) => {
        let end = TaskEnd::timeout(e.timeout_ms.unwrap_or(0));
        e.ending.get_or_insert(end);
        vec![abort(id, AbortKind::Flush)]
      }
      _ => Vec::new(),
    }
  }

  /// Step 2: if still running, failed with `Timed out after <ms> ms`, and notify.
  pub fn timeout_finish(&mut self, id: &str, now_wall_ms: f64) -> Vec<Effect> {
    let Some(entry) = self.running_mut(id) else {
      return Vec::new();
    };
    let end = TaskEnd::timeout(entry.timeout_ms.unwrap_or(0));
    self.limit_finish(id, end, now_wall_ms)
  }

  /// A limit of the tree passed (API.md §6.8, `limits.memoryBytes`), step 1: if the entry
  /// still runs, its end is recorded and its abort queued (flush first).
  pub fn limit_begin(&mut self, id: &str, end: TaskEnd) -> Vec<Effect> {
    match self.get_mut(id) {
      Some(e) if e.is_running() => {
        e.ending.get_or_insert(end);
        vec![abort(id, AbortKind::Flush)]
      }
      _ => Vec::new(),
    }
  }

  /// Step 2 (and the whole of it for a tree that died of its limit): if still running, failed
  /// with the end's detail as its error, and notify.
  pub fn limit_finish(&mut self, id: &str, end: TaskEnd, now_wall_ms: f64) -> Vec<Effect> {
    let Some(entry) = self.running_mut(id) else {
      return Vec::new();
    };
    let detail = end.detail.clone().unwrap_or_default();
    entry.error = Some(detail.clone());
    let mut effects = self.settle(id, MonitorStatus::Failed, end, now_wall_ms);
    effects.push(terminal(id, Some(&detail)));
    effects
  }

  /// §2.5 idle timeout, step 1: if the entry is still idle, abort it first.
  pub fn idle_begin(&mut self, id: &str, now_mono_ms: i64) -> Vec<Effect> {
    match self.get_mut(id) {
      Some(e) if e.is_running() && e.idle_deadline_ms.is_some_and(|d| d <= now_mono_ms) => {
        e.ending.get_or_insert(TaskEnd::idle_timeout());
        vec![abort(id, AbortKind::Flush)]
      }
      _ => Vec::new(),
    }
  }

  /// Step 1 for a fed entry, whose JavaScript idle timer fired: that timer is
  /// the deadline (it was re-armed on every event), so only running counts.
  pub fn idle_begin_fed(&mut self, id: &str) -> Vec<Effect> {
    match self.get_mut(id) {
      Some(e) if e.is_running() && e.mode == EntryMode::Fed => {
        e.ending.get_or_insert(TaskEnd::idle_timeout());
        vec![abort(id, AbortKind::Flush)]
      }
      _ => Vec::new(),
    }
  }

  /// Step 2: if still running, `Idle timeout`, settle completed and notify.
  pub fn idle_finish(&mut self, id: &str, now_wall_ms: f64) -> Vec<Effect> {
    let Some(entry) = self.running_mut(id) else {
      return Vec::new();
    };
    entry.error = Some("Idle timeout".to_owned());
    let end = TaskEnd::idle_timeout();
    let mut effects = self.settle(id, MonitorStatus::Completed, end, now_wall_ms);
    effects.push(terminal(id, Some("Idle timeout")));
    effects
  }

  /// §2.10 settleFromExit for a native entry whose leader exited and pipes drained.
  /// `aborted`: the controller was aborted (the abort already flushed and killed).
  pub fn settle_from_exit(
    &mut self,
    id: &str,
    exit: &ExitInfo,
    aborted: bool,
    now_wall_ms: f64,
  ) -> Vec<Effect> {
    if !self.get(id).is_some_and(|e| e.is_running() && !e.detached) {
      return Vec::new();
    }
    if aborted {
      // Aborted from its controller by the caller, unless a cancel or a
      // limit recorded its own cause first (`ending`).
      return self.cancel_finish(id, EndVia::Signal, now_wall_ms);
    }
    match (exit.code, &exit.signal) {
      (Some(code), _) if code != 0 => {
        let end = TaskEnd::exited(Some(code));
        self.fail_with_end(id, &format!("Exit code {code}"), end, now_wall_ms)
      }
      (_, Some(signal)) => {
        let end = TaskEnd::signaled(signal);
        self.fail_with_end(id, &format!("Killed by signal {signal}"), end, now_wall_ms)
      }
      (code, None) => self.complete(id, code, now_wall_ms),
    }
  }

  /// A persisted task's end, as its keeper recorded it (docs/persistence.md):
  /// an exit or a signal settles as [`Self::settle_from_exit`]; a cancel as
  /// a cancel with its `via`; an end of the keeper's own (the lease expired,
  /// the keeper was signalled) fails the entry with its detail.
  pub fn settle_from_record(
    &mut self,
    id: &str,
    end: &TaskEnd,
    aborted: bool,
    now_wall_ms: f64,
  ) -> Vec<Effect> {
    if !self.get(id).is_some_and(|e| e.is_running() && !e.detached) {
      return Vec::new();
    }
    match end.reason {
      EndReason::Exited | EndReason::Signaled => {
        let exit = ExitInfo {
          code: end.exit_code,
          signal: end.signal.clone(),
        };
        self.settle_from_exit(id, &exit, aborted, now_wall_ms)
      }
      EndReason::Cancelled | EndReason::Restarted => {
        self.cancel_finish(id, end.via.unwrap_or(EndVia::Cancel), now_wall_ms)
      }
      _ => {
        let detail = end
          .detail
          .clone()
          .unwrap_or_else(|| end.reason_str().to_owned());
        self.fail_with_end(id, &detail, end.clone(), now_wall_ms)
      }
    }
  }

  /// §2.1 reset, step 1: abort every running entry (fed listeners may still emit;
  /// native entries discard their partial lines). `None` when the registry is
  /// empty, in which case there is no step 2.
  pub fn reset_begin(&mut self) -> Option<Vec<Effect>> {
    if self.entries.is_empty() {
      return None;
    }
    let mut effects = Vec::new();
    let now_mono_ms = self.clock.mono_ms();
    for entry in &mut self.entries {
      if entry.is_running() {
        // Not settled, but what ended it is recorded on the removed object.
        entry.end = Some(TaskEnd::cancelled(EndVia::Reset));
        for (wait, outcome) in entry.waits.finish(MonitorStatus::Cancelled, now_mono_ms) {
          self.resolved_waits.push(Effect::WaitResolved {
            id: entry.id.clone(),
            wait,
            outcome,
          });
        }
        let kind = match entry.mode {
          EntryMode::Fed => AbortKind::Flush,
          EntryMode::Native => {
            entry.detached = true;
            AbortKind::Discard
          }
        };
        effects.push(abort(&entry.id, kind));
      }
    }
    Some(effects)
  }

  /// Step 2: remove every entry and fire status-change with no argument.
  pub fn reset_finish(&mut self) -> Vec<Effect> {
    let ids: Vec<String> = self.entries.drain(..).map(|e| e.id).collect();
    vec![
      Effect::Removed { by: None, ids },
      Effect::StatusChanged(None),
    ]
  }

  /// A status-change of `id` is being delivered: JavaScript now sees its status.
  pub fn publish_status(&mut self, id: &str) {
    if let Some(entry) = self.get_mut(id) {
      entry.visible_status = entry.status;
    }
  }

  /// Builds the terminal notification at delivery time, behind the `notified` gate.
  pub fn take_terminal(&mut self, id: &str, detail: Option<&str>) -> Option<Notification> {
    let entry = self.get_mut(id)?;
    if entry.notified || entry.is_running() {
      return None;
    }
    entry.notified = true;
    let digest = entry.end_digest.take();
    Some(terminal_notification(entry, detail, digest.as_ref()))
  }

  /// Fields a fed caller may write on its entry object (`pid`, `droppedLines`).
  pub fn set_caller_fields(&mut self, id: &str, pid: Option<u32>, dropped_lines: u64) {
    if let Some(entry) = self.get_mut(id) {
      entry.pid = pid;
      entry.dropped_lines = dropped_lines;
    }
  }

  /// Native: bytes read from a pipe; every byte moves the idle deadline
  /// (§2.5), restarts quiet waits and arms the settled notification.
  /// True when this read armed a settled notification that was not armed
  /// (the timer thread must learn of the new deadline).
  pub fn record_bytes(&mut self, id: &str, bytes: u64, now_mono_ms: i64) -> bool {
    let Some(entry) = self.running_mut(id) else {
      return false;
    };
    entry.bytes_read += bytes;
    entry.rearm_idle(now_mono_ms);
    entry.waits.on_activity(now_mono_ms);
    let Some(settle) = entry.settle.as_mut() else {
      return false;
    };
    let was_armed = settle.is_armed();
    settle.note_activity(now_mono_ms.max(0) as u64);
    !was_armed
  }

  /// Native: lines lost to throttling.
  pub fn record_dropped(&mut self, id: &str, lines: u64) {
    if let Some(entry) = self.running_mut(id) {
      entry.dropped_lines += lines;
    }
  }

  /// Native: the splitters' totals, `linesSeen` (pieces) and `truncatedBytes`.
  pub fn record_splitter_counts(&mut self, id: &str, lines_seen: u64, truncated_bytes: u64) {
    if let Some(entry) = self.get_mut(id) {
      entry.lines_seen = lines_seen;
      entry.truncated_bytes = truncated_bytes;
    }
  }

  /// settle, in order: status, endTime, idle deadline cleared, prune,
  /// status-change. `end` is recorded unless an ending under way named its
  /// first cause; pending waits resolve with `exit` after the transition.
  fn settle(
    &mut self,
    id: &str,
    status: MonitorStatus,
    end: TaskEnd,
    now_wall_ms: f64,
  ) -> Vec<Effect> {
    let now_mono_ms = self.clock.mono_ms();
    let Some(entry) = self.get_mut(id) else {
      return Vec::new();
    };
    entry.status = status;
    entry.end_time = Some(now_wall_ms);
    entry.idle_deadline_ms = None;
    entry.end = Some(entry.ending.take().unwrap_or(end));
    if let Some(settle) = entry.settle.as_mut() {
      settle.disarm();
    }
    let resolved = entry.waits.finish(status, now_mono_ms);
    self.resolved_waits.extend(
      resolved
        .into_iter()
        .map(|(wait, outcome)| Effect::WaitResolved {
          id: id.to_owned(),
          wait,
          outcome,
        }),
    );
    let mut effects = Vec::with_capacity(2);
    let removed = self.prune(id);
    if !removed.is_empty() {
      effects.push(Effect::Removed {
        by: Some(id.to_owned()),
        ids: removed,
      });
    }
    effects.push(Effect::StatusChanged(Some(id.to_owned())));
    effects
  }

  /// §2.7: drop the oldest terminal entries beyond the cap, by
  /// `(endTime ?? startTime, startTime)`. The entry being settled is kept so its
  /// notification can still be built.
  fn prune(&mut self, settling: &str) -> Vec<String> {
    let terminal = self
      .entries
      .iter()
      .filter(|e| !e.is_running())
      .map(|e| TerminalKey {
        id: &e.id,
        start_time: e.start_time,
        end_time: e.end_time,
      })
      .collect();
    let removed = prune_ids(terminal, self.config.max_retained_terminal, settling);
    self.entries.retain(|e| !removed.contains(&e.id));
    removed
  }
}

fn abort(id: &str, kind: AbortKind) -> Effect {
  Effect::Abort {
    id: id.to_owned(),
    kind,
  }
}

fn terminal(id: &str, detail: Option<&str>) -> Effect {
  Effect::Terminal {
    id: id.to_owned(),
    detail: detail.map(str::to_owned),
  }
}
