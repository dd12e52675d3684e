//! What a run's `done` reports (CONTRACT.md §2.15 step 9).
//!
//! The rule: `done` carries the status the registry settled the shell with,
//! even when the entry has left the registry since (pruned from the 32-entry
//! terminal history, or removed by `reset()`). A shell `abortAll()` or
//! `cancel()` settled says `cancelled`, however its child ended afterwards.
//!
//! `reset()` removes entries without killing (§2.13), so an entry it removed
//! while running is never settled by the registry. Its run then settles it
//! itself when the child ends, with the mapping of §2.15 step 9 (`cancelled`
//! if its controller or signal was aborted, `failed` for an I/O error, a
//! signal or a non-zero exit, else `completed`): that is what `done` reports,
//! and the status sidecar is rewritten with it so the file stays true. No
//! notification and no status-change fire for it: it left the registry.

use std::collections::HashMap;

use super::entry::{ShellEntry, ShellStatus};
use crate::end::TaskEnd;

/// How a run's end settles its entry (§2.15 step 9, items 3–5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShellVerdict {
  /// The run's controller was aborted.
  Cancelled,
  /// A spawn or I/O error, a signal or a non-zero exit, as its error text.
  Failed(String),
  /// Exit code 0 (or no code at all).
  Completed(i32),
}

/// The status a shell was settled with: `done`'s `status` and `error`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellSettled {
  pub status: ShellStatus,
  pub exit_code: Option<i32>,
  pub error: Option<String>,
  pub end: Option<TaskEnd>,
}

impl ShellSettled {
  pub(super) fn of(entry: &ShellEntry) -> Self {
    Self {
      status: entry.status,
      exit_code: entry.exit_code,
      error: entry.error.clone(),
      end: entry.end.clone(),
    }
  }
}

impl ShellVerdict {
  /// Settles `entry` (not held by the registry) with this verdict.
  pub(crate) fn apply(self, entry: &mut ShellEntry, end: TaskEnd, end_time: f64) {
    entry.end = Some(entry.ending.take().unwrap_or(end));
    match self {
      Self::Cancelled => entry.status = ShellStatus::Cancelled,
      Self::Failed(error) => {
        entry.status = ShellStatus::Failed;
        entry.error = Some(error);
      }
      Self::Completed(code) => {
        entry.status = ShellStatus::Completed;
        entry.exit_code = Some(code);
      }
    }
    entry.end_time = Some(end_time);
  }
}

impl From<ShellVerdict> for ShellSettled {
  fn from(verdict: ShellVerdict) -> Self {
    match verdict {
      ShellVerdict::Cancelled => Self {
        status: ShellStatus::Cancelled,
        exit_code: None,
        error: None,
        end: None,
      },
      ShellVerdict::Failed(error) => Self {
        status: ShellStatus::Failed,
        exit_code: None,
        error: Some(error),
        end: None,
      },
      ShellVerdict::Completed(code) => Self {
        status: ShellStatus::Completed,
        exit_code: Some(code),
        error: None,
        end: None,
      },
    }
  }
}

/// The runs whose `done` is pending, each known by a token that outlives its
/// entry (a later shell may reuse the id once the entry has left).
#[derive(Debug, Default)]
pub(super) struct Runs {
  next: u64,
  /// Held, running entries with a run, by id.
  running: HashMap<String, u64>,
  /// How the registry settled a run's entry, until the run ends.
  settled: HashMap<u64, ShellSettled>,
  /// Entries `reset` removed while running, until their run ends.
  detached: HashMap<u64, ShellEntry>,
}

impl Runs {
  /// A new run for `entry` (the held entry of that id, if any). An entry
  /// already terminal (a register callback settled it) is recorded at once.
  pub(super) fn track(&mut self, entry: Option<&ShellEntry>) -> u64 {
    self.next += 1;
    let token = self.next;
    match entry {
      Some(e) if e.is_running() => {
        self.running.insert(e.id.clone(), token);
      }
      Some(e) => {
        self.settled.insert(token, ShellSettled::of(e));
      }
      None => {}
    }
    token
  }

  /// Whether `token` is the run of the held, running entry `id`.
  pub(super) fn is_running(&self, id: &str, token: u64) -> bool {
    self.running.get(id) == Some(&token)
  }

  /// The registry settled `entry`: remember how, for its run.
  pub(super) fn on_settled(&mut self, entry: &ShellEntry) {
    if let Some(token) = self.running.remove(&entry.id) {
      self.settled.insert(token, ShellSettled::of(entry));
    }
  }

  /// `reset` removed `entry`; a running one with a run is kept for it.
  pub(super) fn on_removed(&mut self, entry: ShellEntry) {
    if let Some(token) = self.running.remove(&entry.id) {
      self.detached.insert(token, entry);
    }
  }

  /// The run `token` ended: how the registry settled its entry, if it did.
  pub(super) fn take_settled(&mut self, token: u64) -> Option<ShellSettled> {
    self.settled.remove(&token)
  }

  /// The run `token` ended: its entry, if `reset` removed it while running.
  pub(super) fn take_detached(&mut self, token: u64) -> Option<ShellEntry> {
    self.detached.remove(&token)
  }
}
