//! What `MonitorRegistry.start()` and `executeBackground()` ask for once the binding checked their
//! options (API.md §3, §4, §6.5–§6.8), and how each becomes the one [`LaunchRequest`] that
//! [`launch`](super::launch) takes: the command as run, the mode (contained, in a terminal, or by
//! a keeper with `persist`), what a persisted task's record keeps, and for a monitor its
//! registration and how its output is read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Kept, LaunchKind, LaunchRequest, Persist, Reading, ShellCommand, TaskOptions, Term};
use crate::guards::normalize_monitor_command;
use crate::monitor::persisted::{monitor_description, MonitorTaskOptions};
use crate::monitor::signal::SignalConfig;
use crate::monitor::throttle::ThrottleConfig;
use crate::monitor::Registration;
use crate::persist::KeeperLink;
use crate::process::Limits;
use crate::shell::persisted::ShellTaskOptions;
use crate::shell::{plan_shell, Resume, ShellAsk, ShellPlan};
use crate::terminal::TerminalSize;

/// The raw log of a persisted monitor is capped like a shell's output file.
const MONITOR_LOG_CAP_BYTES: u64 = 1 << 30;

/// `start()`'s options (API.md §3).
#[derive(Clone)]
pub struct MonitorStart {
  pub command: String,
  pub description: Option<String>,
  pub monitor_id: Option<String>,
  pub cwd: PathBuf,
  pub env: Vec<(String, String)>,
  /// What its registration and a persisted task's record take: `maxEvents`, `idleTimeoutMs`,
  /// the owner fields, `settleMs`, and the §6.7 options as given.
  pub task: MonitorTaskOptions,
  /// `timeoutMs` (§6.8): a wall-clock deadline.
  pub timeout_ms: Option<u64>,
  /// `limits` (§6.8).
  pub limits: Option<Limits>,
  /// `terminal` (§6.5): the size of its pseudo-terminal.
  pub terminal: Option<TerminalSize>,
  /// `keepAlive` (§6.6).
  pub keep_alive: bool,
  /// `batchMs`, `maxBatchLines`, `important`, `digest`, … (§6.7), compiled.
  pub signal: SignalConfig,
  /// `persist` (docs/persistence.md).
  pub persist: Option<Persist>,
}

/// A monitor's command as run (normalized) and its description.
pub struct MonitorCommand {
  pub command: String,
  pub description: String,
}

impl MonitorStart {
  /// The command as run (the guards' normalization) and the description shown.
  pub fn command_as_run(&self) -> MonitorCommand {
    let command = normalize_monitor_command(&self.command).spawn_command;
    let description = monitor_description(self.description.as_deref(), &command);
    MonitorCommand {
      command,
      description,
    }
  }

  /// The launch of monitor `id` at `now_wall`: by a keeper when `link` holds its prepared state
  /// (`persist`), contained otherwise, in a terminal with `terminal`.
  pub fn request<'a>(
    &'a self,
    id: &'a str,
    command: &'a MonitorCommand,
    link: Option<Arc<KeeperLink>>,
    remove_env: &'a [String],
    now_wall: f64,
  ) -> LaunchRequest<'a> {
    let kept = link.zip(self.persist.as_ref()).map(|(link, persist)| Kept {
      persist,
      link,
      id,
      description: &command.description,
      start_time: now_wall,
      max_output_bytes: MONITOR_LOG_CAP_BYTES,
      options: TaskOptions::Monitor(self.task.clone()),
    });
    LaunchRequest {
      command: ShellCommand {
        command: &command.command,
        cwd: &self.cwd,
        env: &self.env,
        remove_env,
        term: Term::Monitor,
        terminal: self.terminal,
        limits: self.limits,
      },
      kind: LaunchKind::Monitor,
      kept,
    }
  }

  /// Monitor `id`'s registration (`pid`: its launched process); a terminal's settle is judged
  /// on its screen, by the reader, not by the registry.
  pub fn registration(
    &self,
    id: &str,
    command: &MonitorCommand,
    now_wall: f64,
    pid: Option<u32>,
  ) -> Registration {
    let mut options = self.task.clone();
    options.settle_ms = options.settle_ms.filter(|_| self.terminal.is_none());
    options.native_registration(id, &command.command, &command.description, now_wall, pid)
  }

  /// How the monitor's output is read (`throttle`: its registry's).
  pub fn reading(&self, throttle: Option<ThrottleConfig>) -> Reading {
    Reading {
      throttle,
      signal: self.signal.clone(),
      max_events: self.task.max_events,
      screen_settle_ms: self.task.settle_ms.filter(|_| self.terminal.is_some()),
    }
  }
}

/// `executeBackground()`'s options (API.md §4).
#[derive(Clone)]
pub struct ShellStart {
  pub command: String,
  pub cwd: String,
  pub output_dir: String,
  pub env: Vec<(String, String)>,
  pub max_output_bytes: u64,
  pub shell_id: Option<String>,
  pub settle_ms: Option<u64>,
  /// `timeoutMs` (§6.8).
  pub timeout_ms: Option<u64>,
  /// `onOutputCap: 'stop'` (§6.8).
  pub stop_at_cap: bool,
  /// `limits` (§6.8).
  pub limits: Option<Limits>,
  /// `terminal` (§6.5): the size of its pseudo-terminal.
  pub terminal: Option<TerminalSize>,
  /// `persist` (docs/persistence.md).
  pub persist: Option<Persist>,
}

impl ShellStart {
  /// The shell's id, command as run and paths (`shell::plan_shell`); `taken` says which ids the
  /// registry holds.
  pub fn plan(&self, taken: impl Fn(&str) -> bool) -> Result<ShellPlan, String> {
    let ask = ShellAsk {
      command: &self.command,
      shell_id: self.shell_id.as_deref(),
      output_dir: &self.output_dir,
      persisted: self.persist.is_some(),
    };
    plan_shell(&ask, taken)
  }

  /// The launch of the planned shell at `now`: its output file opened first (when it cannot be,
  /// a symlink, a FIFO or a directory at its path, nothing is spawned and the error is the
  /// start's, CONTRACT.md §2.15 step 7); by a keeper when `link` holds its prepared state
  /// (`persist`; the keeper opens the file, and the record keeps `settleMs` for a later host);
  /// a restart's new run writes on after the old run's output (`resume`).
  pub fn request<'a>(
    &'a self,
    plan: &'a ShellPlan,
    link: Option<Arc<KeeperLink>>,
    remove_env: &'a [String],
    now: f64,
    resume: Option<&'a Resume>,
  ) -> LaunchRequest<'a> {
    let kept = link.zip(self.persist.as_ref()).map(|(link, persist)| Kept {
      persist,
      link,
      id: &plan.shell_id,
      description: &plan.command,
      start_time: now,
      max_output_bytes: self.max_output_bytes,
      options: TaskOptions::Shell(ShellTaskOptions {
        cwd: self.cwd.clone(),
        output_dir: self.output_dir.clone(),
        settle_ms: self.settle_ms,
      }),
    });
    LaunchRequest {
      command: ShellCommand {
        command: &plan.command,
        cwd: Path::new(&self.cwd),
        env: &self.env,
        remove_env,
        term: Term::Shell,
        terminal: self.terminal,
        limits: self.limits,
      },
      kind: LaunchKind::Shell {
        output_path: Path::new(&plan.output_path),
        status_path: &plan.status_path,
        max_output_bytes: self.max_output_bytes,
        resume,
      },
      kept,
    }
  }
}

#[cfg(test)]
mod tests;
