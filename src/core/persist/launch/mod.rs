//! Starting a keeper: a detached process that runs one persisted task for as
//! long as its lease holds (docs/persistence.md "The keeper"; its life is
//! `core::keeper`).
//!
//! [`launch_keeper`] (in the host) starts the keeper program detached (Unix:
//! a session of its own; Windows: no console, out of the host's jobs, see
//! `windows.rs`), untracked by the host's watchdog and tracker, writes the
//! [`KeeperConfig`] on its stdin and waits up to 15 s for its handshake line
//! on stdout: `ok <task record>` or `err <message>`.
//!
//! `core::keeper::keeper_main` (in the keeper executable, `src/keeper/`) spawns the task with the standard
//! containment (`core::process::spawn`: session, group, tag, cgroup and the
//! keeper's own watchdog, so the task dies with its keeper however the
//! keeper dies), writes `<id>.task.json`, answers the handshake, and then
//! writes the output (monitors: the raw `<id>.log`; shells: the normal output
//! file through `OutputWriter`) until the task ends, is cancelled through
//! `<id>.cancel`, its lease expires, or the keeper is told to stop by
//! SIGTERM, SIGINT or SIGHUP (Unix). Its last act is `<id>.end.json`.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::records::TaskRecord;

/// The keeper's environment tag: `TASKSTREAM_KEEPER_ID=<fresh tag>`, proved
/// with its start time before a host believes a recorded keeper pid.
pub const KEEPER_TAG_VAR: &str = "TASKSTREAM_KEEPER_ID";

/// How long [`launch_keeper`] waits for the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);

/// What runs the keeper: the `taskstream-keeper` executable beside the addon
/// ([`native_keeper_program`]), the test binary re-executed in `cargo test`. `env` is added to
/// the host's environment (besides [`KEEPER_TAG_VAR`]).
#[derive(Clone, Debug, Default)]
pub struct KeeperProgram {
  pub program: PathBuf,
  pub args: Vec<OsString>,
  pub env: Vec<(OsString, OsString)>,
}

impl KeeperProgram {
  pub fn new(program: impl Into<PathBuf>, args: Vec<OsString>) -> Self {
    Self {
      program: program.into(),
      args,
      env: Vec::new(),
    }
  }
}

/// The keeper executable's file name (the crate `taskstream-keeper`, src/keeper/), in the folder
/// of the addon's `.node` file: the platform package ships it there, `npm run build` copies it
/// there, and the integrations copy it with the addon.
pub const KEEPER_FILE: &str = if cfg!(windows) {
  "taskstream-keeper.exe"
} else {
  "taskstream-keeper"
};

/// The keeper of this addon: [`KEEPER_FILE`] beside the file this code was loaded from
/// ([`addon_path`]).
pub fn native_keeper_program() -> io::Result<KeeperProgram> {
  keeper_beside(&addon_path()?)
}

/// [`KEEPER_FILE`] in the folder of `addon`; a missing one is an error naming both paths.
pub fn keeper_beside(addon: &Path) -> io::Result<KeeperProgram> {
  let path = addon
    .parent()
    .unwrap_or_else(|| Path::new("."))
    .join(KEEPER_FILE);
  if !path.is_file() {
    return Err(io::Error::new(
      io::ErrorKind::NotFound,
      format!(
        "the keeper executable {} is missing: persisted tasks run under it, and it belongs \
         beside the addon {} (its platform package ships both; `npm run build` puts it there)",
        path.display(),
        addon.display()
      ),
    ));
  }
  Ok(KeeperProgram::new(path, Vec::new()))
}

/// A keeper that answered `ok`: its task runs.
#[derive(Clone, Debug, PartialEq)]
pub struct KeeperStarted {
  /// The task record it wrote (`<id>.task.json`), checksum verified.
  pub record: TaskRecord,
  pub keeper_pid: u32,
}

mod start;
pub use start::launch_keeper;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as platform;
#[cfg(windows)]
mod windows;
pub use platform::addon_path;
#[cfg(windows)]
use windows as platform;
