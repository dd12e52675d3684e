//! What every platform's spawn takes and gives (CONTRACT.md §2.10 steps
//! 3–4): the request, the spawned task and its unreaped leader. Each
//! platform's `spawn` (`unix/spawn.rs`, `windows/spawn.rs`) starts the leader
//! already inside its containment and tracked, before the caller sees it.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use super::terminal_handle::TerminalHandle;
use super::terminal_size::TerminalSize;
use super::ProcessGroup;

/// What to run. `program` is usually the shell from
/// [`super::resolve_program`]; `env` is the complete environment (the child
/// starts from an empty one), normally built by [`super::child_env`] with the
/// same `task_tag`. `Default` gives empty fields and no terminal, for
/// `SpawnRequest { program, args, .., ..Default::default() }`.
#[derive(Clone, Debug, Default)]
pub struct SpawnRequest {
  pub program: PathBuf,
  pub args: Vec<String>,
  pub cwd: PathBuf,
  pub env: Vec<(OsString, OsString)>,
  /// See [`super::new_task_tag`]; must pass [`super::is_valid_task_tag`].
  pub task_tag: String,
  /// Terminal mode (API.md §6.5): a pseudo-terminal of this size as the
  /// child's stdin, stdout, stderr and controlling terminal. `None`: stdin
  /// from the null device, stdout and stderr pipes, exactly as before.
  /// Windows: a pseudo console (ConPTY) instead; elsewhere `Some` fails
  /// with an `Unsupported` error.
  pub terminal: Option<TerminalSize>,
  /// `limits` (API.md §6.8, `limits.rs`): the tree's memory, CPU share and process count,
  /// enforced by the containment from before the command runs; a spawn that cannot enforce
  /// them fails. `None`: no limit, as before.
  pub limits: Option<super::Limits>,
}

/// A running child. Its group is already tracked (and known to the watchdog),
/// so it is killed at host exit even if the caller loses it. Read `stdout`
/// and `stderr`, then `child.wait()`.
///
/// With a terminal, `stdout` is the terminal's master side (both streams of
/// the program, `\n` written as `\r\n`), `stderr` a pipe already at EOF (so
/// a reader that waits for two EOFs needs no change), and `terminal` the
/// handle for input and size. Reading the master fails with `EIO` once
/// every process closed the terminal: that is its EOF (the reactor reports
/// it as EOF; a reader of its own must treat `EIO` so too).
#[derive(Debug)]
pub struct SpawnedProcess {
  pub pid: u32,
  pub group: ProcessGroup,
  pub stdout: File,
  pub stderr: File,
  pub child: Child,
  pub terminal: Option<TerminalHandle>,
}

/// The unreaped leader. Dropping it neither kills nor reaps the process.
/// On Windows it holds the leader's process handle (waited on, never used
/// to kill: stops go through the job).
#[derive(Debug)]
pub struct Child {
  pub(super) pid: u32,
  /// Set once reaped, so a second `wait` repeats the status.
  pub(super) status: Option<ExitStatus>,
  #[cfg(windows)]
  pub(super) process: std::os::windows::io::OwnedHandle,
}

impl Child {
  pub fn id(&self) -> u32 {
    self.pid
  }

  /// Waits for the leader to exit and reaps it (`waitpid` on its pid only,
  /// never `-1`, so Node's own children are left to libuv).
  pub fn wait(&mut self) -> io::Result<ExitStatus> {
    if let Some(status) = self.status {
      return Ok(status);
    }
    #[cfg(unix)]
    let status = super::unix::wait::waitpid(self.pid, false)?;
    #[cfg(not(any(unix, windows)))]
    let status: Option<ExitStatus> = return Err(io::Error::from(io::ErrorKind::Unsupported));
    #[cfg(windows)]
    let status = super::windows::wait::wait_process(&self.process, false)?;
    let status = status.ok_or_else(|| io::Error::other("waitpid returned without a status"))?;
    self.status = Some(status);
    Ok(status)
  }

  /// The exit status if the leader has exited (then it is reaped), else `None`.
  pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
    if let Some(status) = self.status {
      return Ok(Some(status));
    }
    #[cfg(unix)]
    let status = super::unix::wait::waitpid(self.pid, true)?;
    #[cfg(not(any(unix, windows)))]
    let status: Option<ExitStatus> = return Err(io::Error::from(io::ErrorKind::Unsupported));
    #[cfg(windows)]
    let status = super::windows::wait::wait_process(&self.process, true)?;
    self.status = status;
    Ok(self.status)
  }
}

/// Neither Unix nor Windows: nothing can be contained, so nothing is spawned.
#[cfg(not(any(unix, windows)))]
pub fn spawn(request: SpawnRequest) -> io::Result<SpawnedProcess> {
  let message = if request.terminal.is_some() {
    super::terminal_size::UNSUPPORTED_MESSAGE
  } else {
    "taskstream: spawning is not implemented on this platform"
  };
  Err(io::Error::new(io::ErrorKind::Unsupported, message))
}
