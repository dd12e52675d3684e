//! A persisted monitor's options (docs/persistence.md "Records"): what a later host needs to
//! register it again, kept as its task record's `options`, and the registration made from them.

use serde::{Deserialize, Serialize};

use super::entry::{EntryMode, Registration};
use super::signal::{SignalConfig, SignalSettings};
use crate::persist::TaskRecord;

/// `maxEvents` when the caller gives none (API.md §2).
pub const DEFAULT_MAX_EVENTS: u64 = 1000;
/// `idleTimeoutMs` when the caller gives none (API.md §2).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 300_000;

/// The record's `options` of a monitor. A field the record lacks takes its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MonitorTaskOptions {
  pub max_events: u64,
  pub idle_timeout_ms: u64,
  pub tool_use_id: Option<String>,
  pub owner_agent_id: Option<String>,
  pub todo_work_chain_id: Option<String>,
  pub settle_ms: Option<u64>,
  pub signal: SignalSettings,
}

impl Default for MonitorTaskOptions {
  fn default() -> Self {
    Self {
      max_events: DEFAULT_MAX_EVENTS,
      idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
      tool_use_id: None,
      owner_agent_id: None,
      todo_work_chain_id: None,
      settle_ms: None,
      signal: SignalSettings::default(),
    }
  }
}

impl MonitorTaskOptions {
  /// The options `record` keeps (the defaults where they cannot be read).
  pub fn of_record(record: &TaskRecord) -> Self {
    serde_json::from_value(record.options.clone()).unwrap_or_default()
  }

  /// The signal lane the monitor had (none where the recorded options no longer validate).
  pub fn signal_config(&self) -> SignalConfig {
    SignalConfig::new(self.signal.options()).unwrap_or_default()
  }

  /// The registration of the recorded monitor `record`, as a running native entry.
  pub fn registration(&self, record: &TaskRecord) -> Registration {
    let start = record.start_time as f64;
    Registration {
      monitor_id: record.id.clone(),
      command: record.command.clone(),
      description: record.description.clone(),
      start_time: start,
      last_event_time: start,
      event_count: 0,
      max_events: self.max_events,
      idle_timeout_ms: self.idle_timeout_ms,
      dropped_lines: 0,
      output_file: String::new(),
      pid: Some(record.task.pid),
      tool_use_id: self.tool_use_id.clone(),
      owner_agent_id: self.owner_agent_id.clone(),
      todo_work_chain_id: self.todo_work_chain_id.clone(),
      mode: EntryMode::Native,
      settle_ms: self.settle_ms,
    }
  }
}
