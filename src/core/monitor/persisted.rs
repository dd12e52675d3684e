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
    let pid = Some(record.task.pid);
    self.native_registration(&record.id, &record.command, &record.description, start, pid)
  }

  /// A running native entry: `id` runs `command`, labelled `description`, since
  /// `start_time` (epoch ms), as `pid` (`None` when it did not start).
  pub fn native_registration(
    &self,
    id: &str,
    command: &str,
    description: &str,
    start_time: f64,
    pid: Option<u32>,
  ) -> Registration {
    Registration {
      monitor_id: id.to_owned(),
      command: command.to_owned(),
      description: description.to_owned(),
      start_time,
      last_event_time: start_time,
      event_count: 0,
      max_events: self.max_events,
      idle_timeout_ms: self.idle_timeout_ms,
      dropped_lines: 0,
      output_file: String::new(),
      pid,
      tool_use_id: self.tool_use_id.clone(),
      owner_agent_id: self.owner_agent_id.clone(),
      todo_work_chain_id: self.todo_work_chain_id.clone(),
      mode: EntryMode::Native,
      settle_ms: self.settle_ms,
    }
  }
}

/// A native monitor's label: its `description` when given and not empty, else
/// its command, sanitised as an event line is (CONTRACT.md §2.10).
pub fn monitor_description(description: Option<&str>, command: &str) -> String {
  crate::text::sanitize_monitor_line(description.filter(|d| !d.is_empty()).unwrap_or(command))
}
