//! What `start()` decides about its command before anything starts (API.md §3):
//! the command as spawned, the monitor's id, and the commands it refuses.

use crate::guards::{has_unsafe_monitor_background_operator, normalize_monitor_command};
use crate::ids::random_hex;

/// A monitor about to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorPlan {
  /// The caller's `monitorId`, or `mon_` + 16 hex characters.
  pub id: String,
  /// The normalised command `bash -c` runs.
  pub spawn_command: String,
}

/// Why `start()` refuses a command (a `TypeError` naming `options.command`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandRefusal {
  /// Nothing is left to run once the command is normalised.
  Empty,
  /// A top-level `&` before the end would background a process outside the
  /// monitor's lifecycle.
  BackgroundOperator,
}

impl CommandRefusal {
  /// The error's text.
  pub fn message(self) -> &'static str {
    match self {
      Self::Empty => "The \"options.command\" property must be a non-empty command",
      Self::BackgroundOperator => {
        "The \"options.command\" property must not contain non-final top-level background operators (\"&\")"
      }
    }
  }
}

/// Plans a monitor for `command`, with the caller's id or a new one.
pub fn plan_monitor(
  command: &str,
  monitor_id: Option<&str>,
) -> Result<MonitorPlan, CommandRefusal> {
  let normalized = normalize_monitor_command(command);
  if normalized.analysis_command.trim().is_empty() {
    return Err(CommandRefusal::Empty);
  }
  if has_unsafe_monitor_background_operator(command) {
    return Err(CommandRefusal::BackgroundOperator);
  }
  let id = monitor_id.map_or_else(|| format!("mon_{}", random_hex(16)), str::to_owned);
  Ok(MonitorPlan {
    id,
    spawn_command: normalized.spawn_command,
  })
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_command_is_normalised_and_gets_an_id() {
    let plan = plan_monitor("tail -f log", Some("mon_x")).unwrap();
    assert_eq!(plan.id, "mon_x");
    assert_eq!(
      plan.spawn_command,
      normalize_monitor_command("tail -f log").spawn_command
    );
    let fresh = plan_monitor("tail -f log", None).unwrap();
    let hex = fresh.id.strip_prefix("mon_").expect("mon_ prefix");
    assert!(
      hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
      "{hex}"
    );
  }

  #[test]
  fn empty_and_backgrounding_commands_are_refused() {
    assert_eq!(plan_monitor("   ", None), Err(CommandRefusal::Empty));
    assert_eq!(
      plan_monitor("sleep 10 & tail -f log", None),
      Err(CommandRefusal::BackgroundOperator)
    );
    assert!(plan_monitor("a && b", None).is_ok());
  }
}
