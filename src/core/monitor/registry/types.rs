//! What the monitor registry takes and returns: its configuration, the effects a transition
//! hands to the binding, the register errors, how a leader exited, and the counters a restart
//! carries.

use crate::monitor::notification::Notification;
use crate::wait::WaitOutcome;

/// `MAX_CONCURRENT_MONITORS` and `MAX_RETAINED_TERMINAL_MONITORS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryConfig {
  pub max_concurrent: usize,
  pub max_retained_terminal: usize,
}

impl Default for RegistryConfig {
  fn default() -> Self {
    Self {
      max_concurrent: 16,
      max_retained_terminal: 128,
    }
  }
}

/// How a native entry is aborted: its partial lines are flushed (cancel, idle,
/// max events, JavaScript) or discarded (`reset`). Fed entries only have their
/// controller aborted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortKind {
  Flush,
  Discard,
}

/// What the binding must do after a transition, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
  /// Call the register callback with this entry (only for entries without an owner).
  Registered(String),
  /// Fire status-change with this entry, or with no argument (`reset`).
  StatusChanged(Option<String>),
  /// Deliver an event notification (boxed: the other effects are small).
  Notify(Box<Notification>),
  /// Deliver this entry's terminal notification through `MonitorRegistry::take_terminal`,
  /// which builds it at delivery time (fields written by abort listeners are seen) and
  /// applies the `notified` gate.
  Terminal { id: String, detail: Option<String> },
  /// Abort the entry's controller (and, for native entries, flush or discard and kill).
  Abort { id: String, kind: AbortKind },
  /// Call the owner's lifecycle callback (silent cancel of the owned entry `id`).
  Wake { id: String, agent_id: String },
  /// These entries left the registry, pruned when `by` settled or removed by
  /// `reset` (`by` is `None`); forget their JavaScript objects.
  Removed {
    by: Option<String>,
    ids: Vec<String>,
  },
  /// Resolve the `waitFor` promise `wait` of entry `id`.
  WaitResolved {
    id: String,
    wait: u64,
    outcome: WaitOutcome,
  },
}

impl Effect {
  /// The entry this effect belongs to; `None` for registry-wide effects of `reset`.
  pub fn entry_id(&self) -> Option<&str> {
    match self {
      Self::Registered(id)
      | Self::StatusChanged(Some(id))
      | Self::Terminal { id, .. }
      | Self::Abort { id, .. }
      | Self::Wake { id, .. }
      | Self::WaitResolved { id, .. } => Some(id),
      Self::Notify(n) => Some(&n.meta.monitor_id),
      Self::Removed { by, .. } => by.as_deref(),
      Self::StatusChanged(None) => None,
    }
  }
}

/// Why `register` refused an entry. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterError {
  TooManyRunning(usize),
  Duplicate(String),
}

impl std::fmt::Display for RegisterError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      Self::TooManyRunning(cap) => write!(
        f,
        "Cannot start monitor: maximum concurrent monitors ({cap}) reached. Stop an existing monitor first."
      ),
      Self::Duplicate(id) => write!(f, "Monitor \"{id}\" is already registered."),
    }
  }
}

impl std::error::Error for RegisterError {}

/// How a native monitor's leader ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
  pub code: Option<i32>,
  /// The signal name, e.g. `SIGTERM`.
  pub signal: Option<String>,
}

/// Why `add_wait` refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEntry(pub String);

/// The counters a restarted entry carries into its next run (API.md §6.8 `restart`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunCounters {
  pub event_count: u64,
  pub dropped_lines: u64,
  pub bytes_read: u64,
  pub lines_seen: u64,
  pub truncated_bytes: u64,
}
