//! The `BackgroundShellRegistry` state machine (CONTRACT.md §2.13, §2.19),
//! free of JavaScript.
//!
//! Every transition returns the [`ShellEffect`]s the binding must carry out,
//! in order, after the registry is released, so callbacks may re-enter it.
//! The status sidecar (§2.14) is written inside the transition, before any
//! effect runs.

use super::entry::{ShellEntry, ShellRegistration, ShellStatus};
use super::notification::{shell_notification, ShellNotification};
use super::runs::{Runs, ShellSettled, ShellVerdict};
use super::sidecar::write_status_sidecar;
use crate::end::{EndVia, TaskEnd};
use crate::task::{oldest_first, prune_ids, TerminalKey};

/// `MAX_RETAINED_TERMINAL_SHELLS` (CONTRACT.md §1.4).
pub const MAX_RETAINED_TERMINAL_SHELLS: usize = 32;

/// What the binding must do after a transition, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShellEffect {
  /// Call the register callback with this entry.
  Registered(String),
  /// Fire status-change with this entry. After `reset` the entry has already
  /// left the registry: pass the object the binding still holds.
  StatusChanged(Option<String>),
  /// Deliver this entry's terminal notification through
  /// [`ShellRegistry::take_notification`], which applies the `notified` gate.
  Notify(String),
  /// Abort the entry's controller (the binding cancels its [`super::ShellRun`]).
  Abort(String),
  /// These entries left the registry (pruned, or removed by `reset`).
  Removed(Vec<String>),
}

/// The registry of background shells. It has no concurrency cap (§1.4).
#[derive(Debug)]
pub struct ShellRegistry {
  max_retained_terminal: usize,
  /// Written into every sidecar as `ownerPid` (§4 item 11).
  owner_pid: u32,
  entries: Vec<ShellEntry>,
  /// The runs of `executeBackground` whose `done` is pending.
  runs: Runs,
}

impl ShellRegistry {
  /// `max_retained_terminal` is normally [`MAX_RETAINED_TERMINAL_SHELLS`];
  /// `owner_pid` is the host's (Node's) process id.
  pub fn new(max_retained_terminal: usize, owner_pid: u32) -> Self {
    Self {
      max_retained_terminal,
      owner_pid,
      entries: Vec::new(),
      runs: Runs::default(),
    }
  }

  pub fn get(&self, id: &str) -> Option<&ShellEntry> {
    self.entries.iter().find(|e| e.id == id)
  }

  fn get_mut(&mut self, id: &str) -> Option<&mut ShellEntry> {
    self.entries.iter_mut().find(|e| e.id == id)
  }

  fn running_mut(&mut self, id: &str) -> Option<&mut ShellEntry> {
    self.get_mut(id).filter(|e| e.is_running())
  }

  fn is_running(&self, id: &str) -> bool {
    self.get(id).is_some_and(ShellEntry::is_running)
  }

  /// Ids in insertion order (`getAll()`).
  pub fn ids(&self) -> Vec<String> {
    self.entries.iter().map(|e| e.id.clone()).collect()
  }

  pub fn has_running_entries(&self) -> bool {
    self.entries.iter().any(ShellEntry::is_running)
  }

  /// §2.13 register step 1, usable before creating any file or process
  /// (§2.15 step 3): the duplicate-id error, running or retained terminal.
  pub fn check_can_register(&self, id: &str) -> Result<(), String> {
    match self.get(id) {
      Some(_) => Err(format!("Background shell \"{id}\" is already registered.")),
      None => Ok(()),
    }
  }

  /// §2.13 register: refuse a held id, write the sidecar, insert (no cap),
  /// then the register callback and status-change.
  pub fn register(&mut self, reg: ShellRegistration) -> Result<Vec<ShellEffect>, String> {
    self.check_can_register(&reg.shell_id)?;
    let entry = ShellEntry::from(reg);
    write_status_sidecar(&entry, self.owner_pid);
    let id = entry.id.clone();
    self.entries.push(entry);
    Ok(vec![
      ShellEffect::Registered(id.clone()),
      ShellEffect::StatusChanged(Some(id)),
    ])
  }

  /// §2.13 complete: a no-op unless running.
  pub fn complete(&mut self, id: &str, exit_code: i32, end_time: f64) -> Vec<ShellEffect> {
    let Some(entry) = self.running_mut(id) else {
      return Vec::new();
    };
    entry.exit_code = Some(exit_code);
    self.settle(
      id,
      ShellStatus::Completed,
      TaskEnd::exited(Some(exit_code)),
      end_time,
    )
  }

  /// §2.13 fail: a no-op unless running.
  pub fn fail(&mut self, id: &str, error: &str, end_time: f64) -> Vec<ShellEffect> {
    let Some(entry) = self.running_mut(id) else {
      return Vec::new();
    };
    entry.error = Some(error.to_owned());
    self.settle(id, ShellStatus::Failed, TaskEnd::failed(error), end_time)
  }

  /// §2.13 cancel (`settleAsCancelled`): a no-op unless running. The abort
  /// comes after the sidecar, so listeners already see `cancelled`.
  pub fn cancel(&mut self, id: &str, end_time: f64) -> Vec<ShellEffect> {
    self.cancel_with_end(id, TaskEnd::cancelled(EndVia::Cancel), end_time)
  }

  fn cancel_with_end(&mut self, id: &str, end: TaskEnd, end_time: f64) -> Vec<ShellEffect> {
    if !self.is_running(id) {
      return Vec::new();
    }
    self.settle(id, ShellStatus::Cancelled, end, end_time)
  }

  /// §2.13 requestCancel: only abort a running entry. The spawn's settle path
  /// later calls `cancel`, `complete` or `fail`.
  pub fn request_cancel(&mut self, id: &str) -> Vec<ShellEffect> {
    match self.running_mut(id) {
      Some(entry) => {
        entry
          .ending
          .get_or_insert(TaskEnd::cancelled(EndVia::Cancel));
        vec![ShellEffect::Abort(id.to_owned())]
      }
      None => Vec::new(),
    }
  }

  /// The first half of a restart (API.md §6.8): a running entry is stopped as `requestCancel`
  /// stops it, and its end will say `restarted`. An ended entry is left as it is.
  pub fn request_restart(&mut self, id: &str) -> Vec<ShellEffect> {
    match self.running_mut(id) {
      Some(entry) => {
        entry.ending = Some(TaskEnd::cancelled(EndVia::Restart));
        vec![ShellEffect::Abort(id.to_owned())]
      }
      None => Vec::new(),
    }
  }

  /// The second half of a restart, once the old run settled: its ended entry leaves the
  /// registry (no status-change: the new run's register follows at once). A running entry
  /// stays (`None`).
  pub fn remove_ended(&mut self, id: &str) -> Option<Vec<ShellEffect>> {
    let index = self.entries.iter().position(|e| e.id == id)?;
    if self.entries[index].is_running() {
      return None;
    }
    self.entries.remove(index);
    Some(vec![ShellEffect::Removed(vec![id.to_owned()])])
  }

  /// §2.13 abortAll (shutdown): every running entry is settled cancelled at
  /// one `now`, marked notified (suppressed, not deferred) and aborted; then
  /// one prune and one status-change with the last of them.
  pub fn abort_all(&mut self, now: f64) -> Vec<ShellEffect> {
    let running: Vec<String> = self
      .entries
      .iter()
      .filter(|e| e.is_running())
      .map(|e| e.id.clone())
      .collect();
    let Some(last) = running.last().cloned() else {
      return Vec::new();
    };
    let mut effects = Vec::with_capacity(running.len() + 2);
    for id in running {
      let end = TaskEnd::cancelled(EndVia::AbortAll);
      self.mark_settled(&id, ShellStatus::Cancelled, end, now);
      if let Some(entry) = self.get_mut(&id) {
        entry.notified = true;
      }
      effects.push(ShellEffect::Abort(id));
    }
    effects.extend(self.prune(&last));
    effects.push(ShellEffect::StatusChanged(Some(last)));
    effects
  }

  /// §2.13 reset: remove every entry without killing anything, then
  /// status-change with the first entry. Nothing when empty.
  pub fn reset(&mut self) -> Vec<ShellEffect> {
    let Some(first) = self.entries.first().map(|e| e.id.clone()) else {
      return Vec::new();
    };
    let mut ids = Vec::with_capacity(self.entries.len());
    for entry in self.entries.drain(..) {
      ids.push(entry.id.clone());
      self.runs.on_removed(entry);
    }
    vec![
      ShellEffect::Removed(ids),
      ShellEffect::StatusChanged(Some(first)),
    ]
  }

  /// The entries `setNotificationCallback` replays, in replay order:
  /// terminal and not notified, oldest settle first.
  pub fn replay_ids(&self) -> Vec<String> {
    oldest_first(self.terminal_keys(|e| !e.notified))
  }

  /// §2.13 emitNotification steps 1–4: `None` once notified, and `None`
  /// without a callback (the entry stays eligible for a replay); otherwise
  /// marks it notified **before** building, so a throwing callback causes no
  /// replay.
  pub fn take_notification(
    &mut self,
    id: &str,
    callback_installed: bool,
  ) -> Option<ShellNotification> {
    let entry = self.get_mut(id)?;
    if entry.notified || entry.is_running() || !callback_installed {
      return None;
    }
    entry.notified = true;
    Some(shell_notification(entry))
  }

  /// Starts following the run of the entry `id` just registered, for
  /// [`Self::finish_run`]; returns the run's token.
  pub fn track_run(&mut self, id: &str) -> u64 {
    let entry = self.entries.iter().find(|e| e.id == id);
    self.runs.track(entry)
  }

  /// The run `token` of entry `id` ended with `verdict` (§2.15 step 9). A
  /// held running entry is settled by it: `cancel`, `fail` or `complete`,
  /// whose effects are returned. What the run's `done` reports is returned
  /// too (the rule is in `runs.rs`): the status the registry settled
  /// the entry with, even if it has been pruned or reset away since; for an
  /// entry `reset` removed while running, the verdict, written to its
  /// sidecar.
  pub fn finish_run(
    &mut self,
    id: &str,
    token: u64,
    verdict: ShellVerdict,
    end: TaskEnd,
    end_time: f64,
  ) -> (Vec<ShellEffect>, ShellSettled) {
    let mut effects = Vec::new();
    if self.runs.is_running(id, token) {
      effects = match verdict.clone() {
        ShellVerdict::Cancelled => self.cancel_with_end(id, end.clone(), end_time),
        ShellVerdict::Failed(error) => {
          if let Some(entry) = self.running_mut(id) {
            entry.error = Some(error);
          }
          self.settle(id, ShellStatus::Failed, end.clone(), end_time)
        }
        ShellVerdict::Completed(code) => {
          if let Some(entry) = self.running_mut(id) {
            entry.exit_code = Some(code);
          }
          self.settle(id, ShellStatus::Completed, end.clone(), end_time)
        }
      };
    }
    if let Some(settled) = self.runs.take_settled(token) {
      return (effects, settled);
    }
    if let Some(mut entry) = self.runs.take_detached(token) {
      verdict.apply(&mut entry, end, end_time);
      write_status_sidecar(&entry, self.owner_pid);
      return (effects, ShellSettled::of(&entry));
    }
    let mut settled: ShellSettled = verdict.into();
    settled.end = Some(end);
    (effects, settled)
  }

  /// A caller wrote `pid` on its entry object.
  pub fn set_pid(&mut self, id: &str, pid: Option<u32>) {
    if let Some(entry) = self.get_mut(id) {
      entry.pid = pid;
    }
  }

  /// The common tail of complete, fail and cancel (§2.19): fields, sidecar,
  /// abort (cancel only), notification, prune, status-change.
  fn settle(
    &mut self,
    id: &str,
    status: ShellStatus,
    end: TaskEnd,
    end_time: f64,
  ) -> Vec<ShellEffect> {
    self.mark_settled(id, status, end, end_time);
    let mut effects = Vec::with_capacity(4);
    if status == ShellStatus::Cancelled {
      effects.push(ShellEffect::Abort(id.to_owned()));
    }
    effects.push(ShellEffect::Notify(id.to_owned()));
    effects.extend(self.prune(id));
    effects.push(ShellEffect::StatusChanged(Some(id.to_owned())));
    effects
  }

  /// Sets the terminal status and `endTime`, then writes the sidecar.
  fn mark_settled(&mut self, id: &str, status: ShellStatus, end: TaskEnd, end_time: f64) {
    let owner_pid = self.owner_pid;
    if let Some(entry) = self.entries.iter_mut().find(|e| e.id == id) {
      entry.status = status;
      entry.end_time = Some(end_time);
      entry.end = Some(entry.ending.take().unwrap_or(end));
      write_status_sidecar(entry, owner_pid);
      self.runs.on_settled(entry);
    }
  }

  /// Drops the oldest terminal entries beyond the cap, by
  /// `(endTime ?? startTime, startTime)`. `keep` (the entry just settled) is
  /// never dropped, so its notification can still be built.
  fn prune(&mut self, keep: &str) -> Option<ShellEffect> {
    let removed = prune_ids(
      self.terminal_keys(|_| true),
      self.max_retained_terminal,
      keep,
    );
    if removed.is_empty() {
      return None;
    }
    self.entries.retain(|e| !removed.contains(&e.id));
    Some(ShellEffect::Removed(removed))
  }

  /// The terminal entries `include` accepts, for the shared orderings.
  fn terminal_keys(&self, include: impl Fn(&ShellEntry) -> bool) -> Vec<TerminalKey<'_>> {
    self
      .entries
      .iter()
      .filter(|e| !e.is_running() && include(e))
      .map(|e| TerminalKey {
        id: &e.id,
        start_time: e.start_time,
        end_time: e.end_time,
      })
      .collect()
  }
}
