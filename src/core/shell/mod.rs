//! Background shells (CONTRACT.md §1.4, §1.6, §2.13–2.15, §2.19): the registry
//! state machine and its notification texts, the status sidecar, the capped
//! output-file writer, and the runner that streams a spawned process into it.

mod capped_file;
pub mod entry;
#[cfg(any(unix, windows))]
pub mod hub;
mod iso_time;
pub mod notification;
pub mod output;
pub mod persisted;
mod plan;
pub mod registry;
#[cfg(any(unix, windows))]
pub mod runner;
mod runs;
pub mod sidecar;
pub mod signals;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

pub use entry::{ShellEntry, ShellRegistration, ShellStatus};
#[cfg(any(unix, windows))]
pub use hub::{ShellHub, ShellOutgoing, WaitPlan};
pub use notification::{
  shell_notification, shell_settled_notification, ShellNotification, ShellNotificationMeta,
  MAX_NOTIFICATION_MODEL_COMMAND_LENGTH, MAX_NOTIFICATION_OUTPUT_TAIL_BYTES,
};
pub use output::{
  check_output_dir, OutputCounters, OutputWriter, Resume, Stream, DEFAULT_MAX_OUTPUT_BYTES,
  MAX_SNIFF_SIZE,
};
pub use plan::{plan_shell, ShellAsk, ShellPlan};
pub use registry::{ShellEffect, ShellRegistry, MAX_RETAINED_TERMINAL_SHELLS};
#[cfg(any(unix, windows))]
pub use runner::{RunLimit, ShellOutcome, ShellRun};
pub use runs::{ShellSettled, ShellVerdict};
pub use sidecar::{record_host_exit, write_status_sidecar};
pub use signals::{RunSignal, RunSignals};
