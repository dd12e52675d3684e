//! Starting a task's child (CONTRACT.md §2.10 steps 3–4, §2.15 item 6, §4
//! items 6 and 21): `setsid`, stdin from the null device, stdout and stderr as
//! pipes, the full environment given by the caller, and tracking before the
//! caller ever sees the child.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::process::Child;

use super::group::ProcessGroup;

/// What to run. `program` is usually the shell from
/// [`super::resolve_program`]; `env` is the complete environment (the child
/// starts from an empty one), normally built by [`super::child_env`] with the
/// same `task_tag`.
#[derive(Clone, Debug)]
pub struct SpawnRequest {
  pub program: PathBuf,
  pub args: Vec<String>,
  pub cwd: PathBuf,
  pub env: Vec<(OsString, OsString)>,
  /// See [`super::new_task_tag`]; must pass [`super::is_valid_task_tag`].
  pub task_tag: String,
}

/// A running child. Its group is already tracked (and known to the watchdog),
/// so it is killed at host exit even if the caller loses it. `child` has no
/// stdio handles left: read `stdout` and `stderr`, then `child.wait()`.
#[derive(Debug)]
pub struct SpawnedProcess {
  pub pid: u32,
  pub group: ProcessGroup,
  pub stdout: File,
  pub stderr: File,
  pub child: Child,
}

/// Starts `request` on the dedicated spawner thread. A failure (missing
/// program or `cwd`, …) is the OS error, whose `Display` is the text used in
/// the `failed` notification; nothing is tracked then. An invalid tag is an
/// `InvalidInput` error.
#[cfg(unix)]
pub fn spawn(request: SpawnRequest) -> io::Result<SpawnedProcess> {
  if !super::tag::is_valid_task_tag(&request.task_tag) {
    let message = format!("invalid task tag {:?}", request.task_tag);
    return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
  }
  unix::spawn_on_spawner_thread(request)
}

/// Process spawning on this platform (Job Objects) is not implemented yet.
#[cfg(not(unix))]
pub fn spawn(_request: SpawnRequest) -> io::Result<SpawnedProcess> {
  Err(io::Error::new(
    io::ErrorKind::Unsupported,
    "taskstream: spawning is not implemented on this platform yet",
  ))
}

#[cfg(unix)]
mod unix {
  use std::fs::File;
  use std::io;
  use std::os::fd::OwnedFd;
  use std::os::unix::process::CommandExt;
  use std::panic::{catch_unwind, AssertUnwindSafe};
  use std::process::{Command, Stdio};
  use std::sync::mpsc::{self, Receiver, Sender, SyncSender};

  use once_cell::sync::Lazy;

  use super::{SpawnRequest, SpawnedProcess};
  use crate::core::process::group::ProcessGroup;
  use crate::core::process::{pre_exec, procfs, tracker};

  struct Job {
    request: SpawnRequest,
    reply: SyncSender<io::Result<SpawnedProcess>>,
  }

  /// The one thread that forks every child. It lives as long as the process,
  /// so `PR_SET_PDEATHSIG`, which fires when the forking *thread* exits, fires
  /// only when the whole host dies (NAPI.md §2.11).
  static SPAWNER: Lazy<Result<Sender<Job>, String>> = Lazy::new(|| {
    let (sender, jobs) = mpsc::channel();
    std::thread::Builder::new()
      .name("taskstream-spawner".into())
      .spawn(move || serve(jobs))
      .map(|_| sender)
      .map_err(|e| e.to_string())
  });

  pub(super) fn spawn_on_spawner_thread(request: SpawnRequest) -> io::Result<SpawnedProcess> {
    let spawner = SPAWNER
      .as_ref()
      .map_err(|e| io::Error::other(format!("cannot start the spawner thread: {e}")))?;
    let (reply, answer) = mpsc::sync_channel(1);
    let gone = || io::Error::other("the spawner thread is gone");
    spawner.send(Job { request, reply }).map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())?
  }

  /// The spawner loop. A panic is caught per job: if it ended the thread, the
  /// kernel would SIGKILL every child it ever forked.
  fn serve(jobs: Receiver<Job>) {
    for Job { request, reply } in jobs {
      let result = catch_unwind(AssertUnwindSafe(|| spawn_here(request)))
        .unwrap_or_else(|_| Err(io::Error::other("spawning panicked")));
      let _ = reply.send(result);
    }
  }

  fn spawn_here(request: SpawnRequest) -> io::Result<SpawnedProcess> {
    tracker::prepare();
    let mut child = command(&request).spawn()?;
    let pid = child.id();
    let group = ProcessGroup {
      pgid: pid,
      // The leader is our unreaped child: its stat exists even if it exited.
      leader_start_time: procfs::start_time(pid),
      task_tag: request.task_tag,
    };
    tracker::register(group.clone());
    let stdout = pipe_file(child.stdout.take().map(OwnedFd::from));
    let stderr = pipe_file(child.stderr.take().map(OwnedFd::from));
    Ok(SpawnedProcess {
      pid,
      group,
      stdout,
      stderr,
      child,
    })
  }

  fn pipe_file(fd: Option<OwnedFd>) -> File {
    File::from(fd.expect("stdout and stderr are piped"))
  }

  fn command(request: &SpawnRequest) -> Command {
    let mut command = Command::new(&request.program);
    command
      .args(&request.args)
      .current_dir(&request.cwd)
      .env_clear()
      .envs(request.env.iter().map(|(name, value)| (name, value)))
      .stdin(Stdio::null())
      .stdout(Stdio::piped())
      .stderr(Stdio::piped());
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: `child_setup` only makes async-signal-safe calls (pre_exec.rs).
    unsafe {
      command.pre_exec(move || child_setup(parent));
    }
    command
  }

  /// In the child: own session and group, default signal handling, no
  /// inherited descriptors, and death with the host as a backstop.
  fn child_setup(parent: libc::pid_t) -> io::Result<()> {
    pre_exec::new_session()?;
    pre_exec::reset_signals();
    pre_exec::close_inherited_fds_on_exec();
    pre_exec::die_with_parent(parent)
  }
}
