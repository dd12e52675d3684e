//! One launch path: from a validated request to a running, contained task.
//!
//! `start()` (native monitors, terminal mode, persisted monitors),
//! `executeBackground()` (persisted shells too) and the runner tests start
//! their tasks here:
//! - [`shell_program`] is the one place the shell (CONTRACT.md §1.5), its
//!   lookup on `PATH` and the child's environment (CONTRACT.md §2.10 "Default
//!   child environment", §2.15 item 6) are put together;
//! - [`launch`], the one entry point, takes a [`LaunchRequest`] that says the
//!   kind (monitor or shell) and, with its `kept`, the mode, and chooses: the
//!   task started contained here (its own session and group, cgroup or Job
//!   Object; in a terminal when the command asks for one), or run by a keeper
//!   (a persisted task, docs/persistence.md);
//! - what they return is a guard, [`Contained`] or [`LaunchedShell`]: until
//!   its task is handed to its runner (the commit: [`Contained::start_monitor`],
//!   [`LaunchedShell::start`]) dropping it stops the task (a spawned tree is
//!   killed, a keeper is asked to cancel), so a caller that fails between the
//!   launch and the commit (its JavaScript objects, the registration) leaves
//!   nothing running.
//!
//! A launch failure is not thrown: it is a [`LaunchError`] carrying the end
//! the entry fails with (CONTRACT.md §2.10, §2.15 step 7).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::end::TaskEnd;
use crate::monitor::hub::{Clock, MonitorHub, NativeTask};
use crate::monitor::native::{FollowFrom, NativeMonitor};
use crate::monitor::signal::SignalConfig;
use crate::monitor::throttle::ThrottleConfig;
use crate::process::{self, EnvOptions, ProcessGroup, SpawnRequest, SpawnedProcess};
use crate::shell::{OutputWriter, Resume, RunSignal, ShellOutcome, ShellRun};
use crate::terminal::{TerminalSize, TERMINAL_TERM};

/// Secrets of the host CLI that a child must not see (CONTRACT.md §2.10):
/// a monitor registry's default `removeEnv`, and what every background shell
/// drops.
pub use crate::process::DEFAULT_REMOVE_ENV;

/// [`DEFAULT_REMOVE_ENV`] as owned names.
pub fn default_remove_env() -> Vec<String> {
  DEFAULT_REMOVE_ENV.iter().map(|s| s.to_string()).collect()
}

/// What a task runs: `<shell> <prefix> <command>` in `cwd`, with the host
/// environment without `remove_env`, the caller's `env` over it, and the
/// `TERM` of its kind.
#[derive(Clone, Copy, Debug)]
pub struct ShellCommand<'a> {
  pub command: &'a str,
  pub cwd: &'a Path,
  /// The caller's `env`.
  pub env: &'a [(String, String)],
  pub remove_env: &'a [String],
  pub term: Term,
  /// `terminal` (API.md §6.5): run under a pseudo-terminal of this size.
  pub terminal: Option<TerminalSize>,
  /// `limits` (API.md §6.8): the tree's memory, CPU share and process count.
  pub limits: Option<process::Limits>,
}

/// The `TERM` a child gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
  /// A monitor: `dumb` on pipes, [`TERMINAL_TERM`] under a terminal.
  Monitor,
  /// A background shell: `xterm-256color`.
  Shell,
}

impl ShellCommand<'_> {
  fn term(&self) -> &'static str {
    match self.term {
      Term::Monitor if self.terminal.is_some() => TERMINAL_TERM,
      Term::Monitor => "dumb",
      Term::Shell => "xterm-256color",
    }
  }
}

/// The program, arguments and environment of a [`ShellCommand`].
pub(crate) struct ShellProgram {
  pub program: PathBuf,
  pub args: Vec<String>,
  pub env: Vec<(OsString, OsString)>,
  /// The value of `TASKSTREAM_TASK_ID` in `env`.
  pub task_tag: String,
}

/// The shell looked up on `PATH` (`spawn <shell> ENOENT` when it is not
/// there), its arguments and the child environment.
pub(crate) fn shell_program(request: &ShellCommand) -> io::Result<ShellProgram> {
  let shell = process::shell_config();
  let program = process::resolve_program(&shell.program, std::env::var_os("PATH").as_deref())
    .ok_or_else(|| {
      io::Error::new(
        io::ErrorKind::NotFound,
        format!("spawn {} ENOENT", shell.program),
      )
    })?;
  let task_tag = process::new_task_tag();
  let mut args = shell.args_prefix;
  args.push(request.command.to_owned());
  let env = process::child_env(
    std::env::vars_os(),
    &EnvOptions {
      remove: request.remove_env.to_vec(),
      term: request.term(),
      overrides: request.env.to_vec(),
      task_tag: task_tag.clone(),
    },
  );
  Ok(ShellProgram {
    program,
    args,
    env,
    task_tag,
  })
}

/// Spawns a [`ShellCommand`] contained; nothing guards the process.
pub(crate) fn spawn_shell(request: &ShellCommand) -> io::Result<SpawnedProcess> {
  let program = shell_program(request)?;
  process::spawn(SpawnRequest {
    program: program.program,
    args: program.args,
    cwd: request.cwd.to_path_buf(),
    env: program.env,
    task_tag: program.task_tag,
    terminal: request.terminal,
    limits: request.limits,
  })
}

/// What to start, for every kind and mode: the command, its kind, and whether a keeper runs it.
pub struct LaunchRequest<'a> {
  pub command: ShellCommand<'a>,
  pub kind: LaunchKind<'a>,
  /// `persist` (docs/persistence.md): a keeper runs the task, under the lock and state that
  /// [`prepare_kept`] took. `None`: the task is started contained here (in a terminal when
  /// `command.terminal` asks for one).
  pub kept: Option<Kept<'a>>,
}

/// The kind of task a [`LaunchRequest`] starts.
pub enum LaunchKind<'a> {
  Monitor,
  /// A background shell writing `output_path` (and, when a keeper runs it, the final status
  /// sidecar at `status_path`); with `resume` the file is continued (a restart).
  Shell {
    output_path: &'a Path,
    status_path: &'a str,
    max_output_bytes: u64,
    resume: Option<&'a Resume>,
  },
}

/// A started task no runner owns yet, by kind.
pub enum Launched {
  Monitor(Contained),
  Shell(Box<LaunchedShell>),
}

impl Launched {
  /// The task a [`LaunchKind::Monitor`] request started, as its guard (for a shell, its task's).
  pub fn into_monitor(self) -> Contained {
    match self {
      Launched::Monitor(contained) => contained,
      Launched::Shell(shell) => shell.task,
    }
  }

  /// The shell a [`LaunchKind::Shell`] request started; a monitor is stopped (its guard
  /// dropped) and the error says so.
  pub fn into_shell(self) -> Result<LaunchedShell, LaunchError> {
    match self {
      Launched::Shell(shell) => Ok(*shell),
      Launched::Monitor(_) => Err(LaunchError::io_error(
        "a monitor was launched where a background shell was asked for".to_owned(),
      )),
    }
  }
}

/// Starts what `request` says: a monitor or a background shell, contained here or run by a
/// keeper (see the module documentation). A persisted task never runs in a terminal (its screen
/// would live in the host): that request fails, its lock and state forgotten.
pub fn launch(request: LaunchRequest) -> Result<Launched, LaunchError> {
  let LaunchRequest {
    command,
    kind,
    kept,
  } = request;
  match (kind, kept) {
    (_, Some(kept)) if command.terminal.is_some() => {
      kept.link.forget_state();
      Err(LaunchError::spawn_failed(&io::Error::new(
        io::ErrorKind::InvalidInput,
        "a persisted task cannot run in a terminal",
      )))
    }
    (LaunchKind::Monitor, None) => launch_monitor(&command).map(Launched::Monitor),
    (LaunchKind::Monitor, Some(kept)) => launch_kept_monitor(&command, kept).map(Launched::Monitor),
    (
      LaunchKind::Shell {
        output_path,
        max_output_bytes,
        resume,
        ..
      },
      None,
    ) => launch_shell(&command, output_path, max_output_bytes, resume)
      .map(|shell| Launched::Shell(Box::new(shell))),
    (
      LaunchKind::Shell {
        output_path,
        status_path,
        ..
      },
      Some(kept),
    ) => launch_kept_shell(&command, kept, output_path, status_path)
      .map(|shell| Launched::Shell(Box::new(shell))),
  }
}

/// A recorded task a new host takes over (`recover()`, docs/persistence.md): the keeper's
/// child, the link to its keeper, and the kind.
pub struct Adoption<'a> {
  pub id: &'a str,
  pub pid: u32,
  pub link: Arc<crate::persist::KeeperLink>,
  pub kind: AdoptKind<'a>,
}

/// The kind of task an [`Adoption`] takes over.
pub enum AdoptKind<'a> {
  Monitor,
  /// A background shell whose keeper writes `output_path`.
  Shell {
    output_path: &'a Path,
  },
}

/// Takes over a recorded task: the same [`Launched`] a launch returns, committed the same way,
/// whose runner follows the keeper's output from where it stands. A monitor goes on from the
/// cursor the last host left, and the lines written since (up to the log's size now) are
/// counted, not replayed (they arrive as one digest); a shell from its file's end (its waits
/// judge output from now on; what was written meanwhile is in the file). Dropped before it is
/// committed, or when its runner cannot start, the task stays on its lease for a later host.
pub fn adopt(adoption: Adoption) -> Launched {
  let Adoption {
    id,
    pid,
    link,
    kind,
  } = adoption;
  let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
  let kept = |from| {
    Contained::new(Task::Kept {
      pid,
      link: Arc::clone(&link),
      from,
      adopted: true,
    })
  };
  match kind {
    AdoptKind::Monitor => {
      let log = size(&link.files.log);
      let cursor = crate::persist::link::read_cursor(&link.files.cursor, id).unwrap_or(0);
      Launched::Monitor(kept(FollowFrom {
        offset: cursor.min(log),
        missed_until: log,
      }))
    }
    AdoptKind::Shell { output_path } => {
      let from = FollowFrom {
        offset: size(output_path),
        missed_until: 0,
      };
      Launched::Shell(Box::new(LaunchedShell {
        task: kept(from),
        writer: None,
        output_path: output_path.to_path_buf(),
      }))
    }
  }
}

/// A task that could not be started, or whose runner could not start: the
/// message and the end its entry fails with.
#[derive(Debug)]
pub struct LaunchError {
  pub message: String,
  pub end: TaskEnd,
}

impl LaunchError {
  fn spawn_failed(error: &io::Error) -> Self {
    let message = error.to_string();
    Self {
      end: TaskEnd::spawn_failed(&message),
      message,
    }
  }

  fn io_error(message: String) -> Self {
    Self {
      end: TaskEnd::io_error(&message),
      message,
    }
  }
}

/// A running task no runner owns yet: dropping it stops the task (a spawned
/// tree is killed at once, a keeper asked to cancel).
pub struct Contained {
  task: Option<Task>,
}

enum Task {
  Spawned(SpawnedProcess),
  /// Run by a keeper: started here (followed from the start; dropped, the keeper is asked to
  /// cancel), or adopted from a record (followed from `from`; dropped, it stays on its lease).
  Kept {
    pid: u32,
    link: Arc<crate::persist::KeeperLink>,
    from: FollowFrom,
    adopted: bool,
  },
}

impl Contained {
  fn new(task: Task) -> Self {
    Self { task: Some(task) }
  }

  /// The task's pid (the keeper's child for a persisted task).
  pub fn pid(&self) -> u32 {
    match self.task.as_ref().expect("a task until committed") {
      Task::Spawned(spawned) => spawned.pid,
      Task::Kept { pid, .. } => *pid,
    }
  }

  /// The tree a spawned task leads (a persisted task's belongs to its keeper).
  pub fn group(&self) -> Option<&ProcessGroup> {
    match self.task.as_ref()? {
      Task::Spawned(spawned) => Some(&spawned.group),
      Task::Kept { .. } => None,
    }
  }

  fn take(mut self) -> Task {
    self.task.take().expect("a task until committed")
  }

  /// Commits a monitor: its reader threads start (a persisted monitor
  /// follows its keeper's log from the start). When they cannot, the task is
  /// stopped (a persisted one is left on its lease) and the error says why.
  pub fn start_monitor<C: Clock + Clone + Send + Sync + 'static>(
    self,
    hub: &Arc<MonitorHub>,
    id: &str,
    reading: Reading,
    clock: C,
  ) -> Result<Arc<dyn NativeTask>, LaunchError> {
    match self.take() {
      Task::Spawned(spawned) => {
        let group = spawned.group.clone();
        NativeMonitor::start(
          hub,
          id,
          spawned,
          reading.throttle,
          reading.signal,
          reading.max_events,
          reading.screen_settle_ms,
          clock,
        )
        .map(|monitor| monitor as Arc<dyn NativeTask>)
        .map_err(|error| {
          process::kill_now(&group);
          LaunchError::io_error(format!("could not start monitor threads: {error}"))
        })
      }
      Task::Kept { link, from, .. } => follow_monitor(hub, id, link, from, reading, clock),
    }
  }
}

/// How a monitor's output is read: its throttle, signal lane, event cap and
/// (a terminal's) screen settle.
pub struct Reading {
  pub throttle: Option<ThrottleConfig>,
  pub signal: SignalConfig,
  pub max_events: u64,
  pub screen_settle_ms: Option<u64>,
}

impl Drop for Contained {
  fn drop(&mut self) {
    match self.task.take() {
      None => {}
      Some(Task::Spawned(spawned)) => process::kill_now(&spawned.group),
      Some(Task::Kept {
        link,
        adopted: false,
        ..
      }) => link.request_cancel(crate::end::EndVia::Cancel),
      Some(Task::Kept { link, .. }) => link.release(),
    }
  }
}

/// Follows a persisted monitor's log from `from`; when that cannot start,
/// the task keeps running on its lease for a later host.
fn follow_monitor<C: Clock + Clone + Send + Sync + 'static>(
  hub: &Arc<MonitorHub>,
  id: &str,
  link: Arc<crate::persist::KeeperLink>,
  from: FollowFrom,
  reading: Reading,
  clock: C,
) -> Result<Arc<dyn NativeTask>, LaunchError> {
  NativeMonitor::start_persisted(
    hub,
    id,
    Arc::clone(&link),
    from,
    reading.throttle,
    reading.signal,
    reading.max_events,
    clock,
  )
  .map(|monitor| monitor as Arc<dyn NativeTask>)
  .map_err(|error| {
    link.release();
    LaunchError::io_error(format!("could not follow the persisted monitor: {error}"))
  })
}

/// Starts a monitor's command contained.
fn launch_monitor(request: &ShellCommand) -> Result<Contained, LaunchError> {
  spawn_shell(request)
    .map(|spawned| Contained::new(Task::Spawned(spawned)))
    .map_err(|error| LaunchError::spawn_failed(&error))
}

/// A background shell's run callbacks: its signals (waits, settles) and its outcome.
pub type ShellCallbacks = (
  Box<dyn Fn(RunSignal) + Send + Sync>,
  Box<dyn FnOnce(ShellOutcome) + Send>,
);

/// A started background shell no runner owns yet (see [`Contained`]).
pub struct LaunchedShell {
  task: Contained,
  /// The output file a spawned shell's runner writes (a keeper writes its own).
  writer: Option<OutputWriter>,
  output_path: PathBuf,
}

impl LaunchedShell {
  pub fn pid(&self) -> u32 {
    self.task.pid()
  }

  pub fn group(&self) -> Option<&ProcessGroup> {
    self.task.group()
  }

  /// Commits the shell: its runner starts, with the callbacks `callbacks`
  /// makes. When either fails the task is stopped (a persisted one is left on
  /// its lease) and the error says why.
  pub fn start(
    self,
    settle_ms: Option<u64>,
    callbacks: impl FnOnce() -> Result<ShellCallbacks, String>,
  ) -> Result<Arc<ShellRun>, LaunchError> {
    let Self {
      task,
      writer,
      output_path,
    } = self;
    match task.take() {
      Task::Spawned(spawned) => {
        let group = spawned.group.clone();
        let writer = writer.expect("a spawned shell has its writer");
        callbacks()
          .and_then(|(on_signal, on_settle)| {
            ShellRun::start_with_signals(spawned, writer, settle_ms, on_signal, on_settle)
              .map_err(|error| format!("could not start the output threads: {error}"))
          })
          .map_err(|message| {
            process::kill_now(&group);
            LaunchError::io_error(message)
          })
      }
      Task::Kept {
        pid, link, from, ..
      } => follow_shell(pid, link, output_path, from.offset, settle_ms, callbacks),
    }
  }
}

/// Follows a persisted shell's output file from `offset`, with the
/// callbacks `callbacks` makes; when that cannot start, the task keeps
/// running on its lease for a later host.
fn follow_shell(
  pid: u32,
  link: Arc<crate::persist::KeeperLink>,
  output_path: PathBuf,
  offset: u64,
  settle_ms: Option<u64>,
  callbacks: impl FnOnce() -> Result<ShellCallbacks, String>,
) -> Result<Arc<ShellRun>, LaunchError> {
  callbacks()
    .and_then(|(on_signal, on_settle)| {
      ShellRun::start_persisted(
        pid,
        Arc::clone(&link),
        output_path,
        offset,
        settle_ms,
        on_signal,
        on_settle,
      )
      .map_err(|error| format!("could not follow the persisted shell: {error}"))
    })
    .map_err(|message| {
      link.release();
      LaunchError::io_error(message)
    })
}

/// Opens a background shell's output file, then starts its command
/// contained. A file that cannot be opened (a symlink, a FIFO or a directory
/// at its path) starts nothing and fails with the open error (§2.15 step 7).
/// With `resume` the file is kept and continued (a restart, API.md §6.8).
fn launch_shell(
  request: &ShellCommand,
  output_path: &Path,
  max_output_bytes: u64,
  resume: Option<&Resume>,
) -> Result<LaunchedShell, LaunchError> {
  let writer = match resume {
    None => OutputWriter::create(output_path, max_output_bytes),
    Some(resume) => OutputWriter::resume(
      output_path,
      max_output_bytes,
      &resume.before,
      &resume.marker,
    ),
  }
  .map_err(|error| LaunchError::io_error(error.to_string()))?;
  let spawned = spawn_shell(request).map_err(|error| LaunchError::spawn_failed(&error))?;
  Ok(LaunchedShell {
    task: Contained::new(Task::Spawned(spawned)),
    writer: Some(writer),
    output_path: output_path.to_path_buf(),
  })
}

/// `persist` (docs/persistence.md): where a persisted task's state lives,
/// and its lease.
#[derive(Clone, Debug)]
pub struct Persist {
  pub state_dir: PathBuf,
  pub lease_ms: u64,
}

use kept::{launch_kept_monitor, launch_kept_shell};
pub use kept::{prepare_kept, Kept, TaskOptions};
pub use start::{MonitorCommand, MonitorStart, ShellStart};

mod start;

/// Persisted tasks: a keeper runs the command (docs/persistence.md).
mod kept {
  use std::ffi::OsStr;
  use std::path::{Path, PathBuf};
  use std::sync::Arc;

  use super::{
    shell_program, Contained, FollowFrom, LaunchError, LaunchedShell, Persist, ShellCommand, Task,
  };
  use crate::persist::{
    self, ensure_state_dir, launch_keeper, native_keeper_program, AdoptionLock, KeeperConfig,
    TaskKind, TaskRecord, TryLock, RECORD_VERSION,
  };
  use crate::persist::{renewer, KeeperLink};

  /// The state directory is checked and the task's lock taken: nothing has
  /// started yet, and the error says why it cannot.
  pub fn prepare_kept(persist: &Persist, id: &str) -> Result<Arc<KeeperLink>, String> {
    // An addon installed without its keeper executable: said before anything is made.
    native_keeper_program()
      .map_err(|e| format!("The \"options.persist\" task cannot start: {e}"))?;
    ensure_state_dir(&persist.state_dir).map_err(|e| e.to_string())?;
    match AdoptionLock::try_acquire(&persist.state_dir, id) {
      Ok(TryLock::Acquired(lock)) => Ok(Arc::new(KeeperLink::new(&persist.state_dir, id, lock))),
      Ok(TryLock::Busy) => Err(format!(
        "The persisted task \"{id}\" is owned by another host (its lock in {} is held)",
        persist.state_dir.display()
      )),
      Err(error) => Err(format!(
        "The \"options.persist.stateDir\" lock for \"{id}\" cannot be taken: {error}"
      )),
    }
  }

  /// What the keeper records besides the command: the task's identity and
  /// the options a later host needs.
  pub struct Kept<'a> {
    pub persist: &'a Persist,
    /// The lock and state [`prepare_kept`] took.
    pub link: Arc<KeeperLink>,
    pub id: &'a str,
    pub description: &'a str,
    pub start_time: f64,
    pub max_output_bytes: u64,
    pub options: TaskOptions,
  }

  /// The options a later host needs to take the task back, kept in its record.
  #[derive(Debug, Clone, PartialEq)]
  pub enum TaskOptions {
    Monitor(crate::monitor::persisted::MonitorTaskOptions),
    Shell(crate::shell::persisted::ShellTaskOptions),
  }

  impl TaskOptions {
    /// The record's `options` field.
    pub fn to_value(&self) -> serde_json::Value {
      let value = match self {
        Self::Monitor(options) => serde_json::to_value(options),
        Self::Shell(options) => serde_json::to_value(options),
      };
      value.unwrap_or_default()
    }
  }

  /// Has a keeper run a monitor's command; its raw log is in the state directory.
  pub(super) fn launch_kept_monitor(
    request: &ShellCommand,
    kept: Kept,
  ) -> Result<Contained, LaunchError> {
    launch_kept(request, kept, TaskKind::Monitor, None, None)
  }

  /// Has a keeper run a background shell's command; it writes the output
  /// file and the final status sidecar.
  pub(super) fn launch_kept_shell(
    request: &ShellCommand,
    kept: Kept,
    output_path: &Path,
    status_path: &str,
  ) -> Result<LaunchedShell, LaunchError> {
    let task = launch_kept(
      request,
      kept,
      TaskKind::Shell,
      Some(output_path.to_path_buf()),
      Some(status_path.to_owned()),
    )?;
    Ok(LaunchedShell {
      task,
      writer: None,
      output_path: output_path.to_path_buf(),
    })
  }

  /// The keeper started and handshaken, or (its lock and state forgotten)
  /// why it could not be.
  fn launch_kept(
    request: &ShellCommand,
    kept: Kept,
    kind: TaskKind,
    output_path: Option<PathBuf>,
    status_path: Option<String>,
  ) -> Result<Contained, LaunchError> {
    let link = Arc::clone(&kept.link);
    let started = shell_program(request).and_then(|program| {
      let config = keeper_config(request, program, &kept, kind, output_path, status_path);
      renewer::attach(&kept.persist.state_dir, kept.persist.lease_ms);
      let keeper = native_keeper_program()?;
      launch_keeper(&keeper, &config).map(|started| started.record)
    });
    match started {
      Ok(TaskRecord { keeper, task, .. }) => {
        link.set_keeper(keeper);
        Ok(Contained::new(Task::Kept {
          pid: task.pid,
          link,
          from: FollowFrom::default(),
          adopted: false,
        }))
      }
      Err(error) => {
        link.forget_state();
        Err(LaunchError::spawn_failed(&error))
      }
    }
  }

  fn lossy(s: &OsStr) -> String {
    s.to_string_lossy().into_owned()
  }

  fn keeper_config(
    request: &ShellCommand,
    program: super::ShellProgram,
    kept: &Kept,
    kind: TaskKind,
    output_path: Option<PathBuf>,
    status_path: Option<String>,
  ) -> KeeperConfig {
    let persist = kept.persist;
    let output_path =
      output_path.unwrap_or_else(|| persist::TaskFiles::new(&persist.state_dir, kept.id).log);
    KeeperConfig {
      version: RECORD_VERSION,
      kind,
      id: kept.id.to_owned(),
      state_dir: lossy(persist.state_dir.as_os_str()),
      command: request.command.to_owned(),
      description: kept.description.to_owned(),
      cwd: lossy(request.cwd.as_os_str()),
      program: lossy(program.program.as_os_str()),
      args: program.args,
      env: program
        .env
        .iter()
        .map(|(k, v)| (lossy(k), lossy(v)))
        .collect(),
      task_tag: program.task_tag,
      lease_ms: persist.lease_ms,
      output_path: lossy(output_path.as_os_str()),
      status_path,
      max_output_bytes: kept.max_output_bytes,
      start_time: kept.start_time as u64,
      options: kept.options.to_value(),
    }
  }
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
