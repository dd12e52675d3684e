//! A background shell entry as the registry holds it (CONTRACT.md §1.4, §2.13).

use crate::end::TaskEnd;
/// `BackgroundShellStatus`. Shells and monitors share the four states, their
/// names and their notification words (`was cancelled`), so this is the
/// monitor's type under the shell's name rather than a copy of it.
pub use crate::task::TaskStatus as ShellStatus;

/// `ShellTaskRegistration`: what `register` receives (CONTRACT.md §2.13).
#[derive(Clone, Debug)]
pub struct ShellRegistration {
  pub shell_id: String,
  pub command: String,
  pub cwd: String,
  /// Milliseconds since the epoch.
  pub start_time: f64,
  pub output_path: String,
  pub pid: Option<u32>,
  pub todo_work_chain_id: Option<String>,
}

/// `ShellTask` (CONTRACT.md §1.4). `id` is also `shellId`; `output_path` is
/// also `outputFile`, and the `description` of §2.13 step 2 is `command`.
#[derive(Clone, Debug)]
pub struct ShellEntry {
  pub id: String,
  pub command: String,
  pub cwd: String,
  pub pid: Option<u32>,
  pub status: ShellStatus,
  pub exit_code: Option<i32>,
  pub error: Option<String>,
  pub start_time: f64,
  pub end_time: Option<f64>,
  pub output_path: String,
  /// Set once the terminal notification was consumed, or by `abortAll`.
  pub notified: bool,
  pub todo_work_chain_id: Option<String>,
  /// Who ended it (API.md §6.3), once settled.
  pub end: Option<TaskEnd>,
  /// The first cause of an ending under way (`requestCancel`).
  pub ending: Option<TaskEnd>,
}

impl ShellEntry {
  pub fn is_running(&self) -> bool {
    self.status == ShellStatus::Running
  }
}

impl From<ShellRegistration> for ShellEntry {
  /// §2.13 register step 2: a fresh running entry, not yet notified.
  fn from(reg: ShellRegistration) -> Self {
    Self {
      id: reg.shell_id,
      command: reg.command,
      cwd: reg.cwd,
      pid: reg.pid,
      status: ShellStatus::Running,
      exit_code: None,
      error: None,
      start_time: reg.start_time,
      end_time: None,
      output_path: reg.output_path,
      notified: false,
      todo_work_chain_id: reg.todo_work_chain_id,
      end: None,
      ending: None,
    }
  }
}
