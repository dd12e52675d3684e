//! A monitor entry as the registry holds it (CONTRACT.md §1.1, §1.2).

use super::pipeline::Observe;
use super::signal::{DigestNote, Mark};
use crate::end::TaskEnd;
pub use crate::task::TaskStatus as MonitorStatus;
use crate::wait::{Settle, WaitSet};

/// Who feeds the entry: JavaScript through `emitEvent` (fed) or our own
/// process pipeline (native, `start()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryMode {
  Fed,
  Native,
}

/// What `register` receives; the registry fills in the rest.
#[derive(Debug, Clone)]
pub struct Registration {
  pub monitor_id: String,
  pub command: String,
  pub description: String,
  pub start_time: f64,
  pub last_event_time: f64,
  pub event_count: u64,
  pub max_events: u64,
  pub idle_timeout_ms: u64,
  pub dropped_lines: u64,
  pub output_file: String,
  pub pid: Option<u32>,
  pub tool_use_id: Option<String>,
  pub owner_agent_id: Option<String>,
  pub todo_work_chain_id: Option<String>,
  pub mode: EntryMode,
  /// `settleMs` (API.md §6.2): native monitors only.
  pub settle_ms: Option<u64>,
}

/// A monitor entry. Times are milliseconds since the epoch; the idle deadline
/// is on the caller's monotonic clock.
#[derive(Debug, Clone)]
pub struct MonitorEntry {
  pub id: String,
  pub command: String,
  pub description: String,
  pub status: MonitorStatus,
  pub pid: Option<u32>,
  pub tool_use_id: Option<String>,
  pub owner_agent_id: Option<String>,
  pub todo_work_chain_id: Option<String>,
  pub event_count: u64,
  pub dropped_lines: u64,
  pub last_event_time: f64,
  pub start_time: f64,
  pub end_time: Option<f64>,
  pub exit_code: Option<i32>,
  pub error: Option<String>,
  pub max_events: u64,
  pub idle_timeout_ms: u64,
  pub output_file: String,
  pub notified: bool,
  pub bytes_read: u64,
  pub lines_seen: u64,
  /// Native: bytes of over-long lines cut off (see `LineSplitter`).
  pub truncated_bytes: u64,
  pub mode: EntryMode,
  /// Monotonic milliseconds at which the idle timeout fires; `None` once settled.
  pub idle_deadline_ms: Option<i64>,
  /// The passed deadline was handed to the idle watcher and not re-armed since.
  pub idle_announced: bool,
  /// A native entry being removed by `reset`: its process side may no longer
  /// change it (no events, no settle), so reset emits nothing for it.
  pub detached: bool,
  /// The status JavaScript sees: it follows `status` when the status-change of
  /// a transition is delivered, so a native monitor never looks settled while
  /// its earlier events are still on their way (the TypeScript order).
  pub visible_status: MonitorStatus,
  /// Who ended it (API.md §6.3); set when it settles, or by `reset`.
  pub end: Option<TaskEnd>,
  /// The first cause of an ending under way (an abort whose settle follows).
  pub ending: Option<TaskEnd>,
  /// Pending `waitFor`s.
  pub waits: WaitSet,
  /// The settled-notification timer, with `settleMs`.
  pub settle: Option<Settle>,
  /// The last sanitised line, accepted or dropped (kept with `settleMs`).
  pub last_line: Option<String>,
  /// Native with §6.7 options: its reader's signal lane decides the lines and
  /// sends the settled notifications (after flushing the open window).
  pub signal_lane: bool,
  /// `digest` (§6.7): lines dropped since the last notification, left by the
  /// reader's flush at stop for the terminal notification.
  pub end_digest: Option<DigestNote>,
  /// §6.7: the lines a signal lane let out when the task stopped (held lines, the open
  /// window), cut as event lines; they ride in the terminal notification.
  pub end_lines: Vec<String>,
  pub end_marks: Vec<Mark>,
  /// `timeoutMs` (API.md §6.8): the wall-clock limit and the monotonic deadline it gives.
  pub timeout_ms: Option<u64>,
  pub deadline_ms: Option<i64>,
  /// The deadline was handed to the watcher (once).
  pub deadline_announced: bool,
}

impl MonitorEntry {
  pub fn from_registration(reg: Registration, now_mono_ms: i64) -> Self {
    Self {
      id: reg.monitor_id,
      command: reg.command,
      description: reg.description,
      status: MonitorStatus::Running,
      pid: reg.pid,
      tool_use_id: reg.tool_use_id,
      owner_agent_id: reg.owner_agent_id,
      todo_work_chain_id: reg.todo_work_chain_id,
      event_count: reg.event_count,
      dropped_lines: reg.dropped_lines,
      last_event_time: reg.last_event_time,
      start_time: reg.start_time,
      end_time: None,
      exit_code: None,
      error: None,
      max_events: reg.max_events,
      idle_timeout_ms: reg.idle_timeout_ms,
      output_file: reg.output_file,
      notified: false,
      bytes_read: 0,
      lines_seen: 0,
      truncated_bytes: 0,
      mode: reg.mode,
      idle_deadline_ms: Some(now_mono_ms.saturating_add(reg.idle_timeout_ms as i64)),
      idle_announced: false,
      detached: false,
      visible_status: MonitorStatus::Running,
      end: None,
      ending: None,
      waits: WaitSet::default(),
      settle: reg.settle_ms.map(Settle::new),
      last_line: None,
      signal_lane: false,
      end_digest: None,
      end_lines: Vec::new(),
      end_marks: Vec::new(),
      timeout_ms: None,
      deadline_ms: None,
      deadline_announced: false,
    }
  }

  /// Moves the idle deadline to `idleTimeoutMs` after `now_mono_ms`.
  pub fn rearm_idle(&mut self, now_mono_ms: i64) {
    self.idle_deadline_ms = Some(now_mono_ms.saturating_add(self.idle_timeout_ms as i64));
    self.idle_announced = false;
  }

  /// Running as JavaScript has been told so far.
  pub fn is_visibly_running(&self) -> bool {
    self.visible_status == MonitorStatus::Running
  }

  pub fn is_running(&self) -> bool {
    self.status == MonitorStatus::Running
  }

  /// The routing owner: a non-empty `ownerAgentId` (an empty one routes globally, as
  /// the TypeScript truthiness check did).
  /// Whether the reader must build lines (not only count them): a `waitFor`
  /// with `match`, or `settleMs`, which quotes the last line.
  pub fn observes_lines(&self) -> bool {
    self.observation().sees_lines()
  }

  /// Which lines the reader must build and show to [`Self::waits`]: with `match` waits, those
  /// their patterns may match; with `settleMs` (it quotes the last line), the last line of
  /// each read.
  pub fn observation(&self) -> Observe {
    let last_line = self.settle.is_some();
    if !self.is_running() || !(last_line || self.waits.wants_lines()) {
      return Observe::Off;
    }
    let matcher = self.waits.line_matcher();
    if self.waits.wants_lines() && matcher.is_none() {
      // A pattern not yet compiled, or one runs of plain lines cannot be searched with.
      return Observe::Every;
    }
    Observe::Lines { matcher, last_line }
  }

  /// When the settled notification is due (monotonic ms), if armed.
  pub fn settle_deadline(&self) -> Option<i64> {
    self.settle.as_ref().and_then(Settle::due).map(|d| d as i64)
  }

  pub fn owner(&self) -> Option<&str> {
    self.owner_agent_id.as_deref().filter(|o| !o.is_empty())
  }
}
