//! Starting a keeper: a detached process that runs one persisted task for as
//! long as its lease holds (docs/persistence.md "The keeper"; its life is
//! `core::keeper`).
//!
//! [`launch_keeper`] (in the host) starts the keeper program in a session of
//! its own, untracked by the host's watchdog and tracker, writes the
//! [`KeeperConfig`] on its stdin and waits up to 15 s for its handshake line
//! on stdout: `ok <task record>` or `err <message>`.
//!
//! `core::keeper::keeper_main` (in the keeper) spawns the task with the standard
//! containment (`core::process::spawn`: session, group, tag, cgroup and the
//! keeper's own watchdog, so the task dies with its keeper however the
//! keeper dies), writes `<id>.task.json`, answers the handshake, and then
//! writes the output (monitors: the raw `<id>.log`; shells: the normal output
//! file through `OutputWriter`) until the task ends, is cancelled through
//! `<id>.cancel`, its lease expires, or the keeper is told to stop by
//! SIGTERM, SIGINT or SIGHUP. Its last act is `<id>.end.json`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

#[cfg(not(unix))]
use super::records::KeeperConfig;
use super::records::TaskRecord;

/// The keeper's environment tag: `TASKSTREAM_KEEPER_ID=<fresh tag>`, proved
/// with its start time before a host believes a recorded keeper pid.
pub const KEEPER_TAG_VAR: &str = "TASKSTREAM_KEEPER_ID";

/// How long [`launch_keeper`] waits for the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);

/// What runs the keeper: `node -e <script> <addon>` from the host, the test
/// binary re-executed in `cargo test`. `env` is added to the host's
/// environment (besides [`KEEPER_TAG_VAR`]).
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

/// The name of the addon's hidden export that runs `core::keeper::keeper_main`.
pub const KEEPER_EXPORT: &str = "__taskstreamKeeper";

/// The script `node -e` runs as a keeper: loads the addon named by its one
/// argument and exits with what its [`KEEPER_EXPORT`] returns.
pub const NODE_KEEPER_SCRIPT: &str = "const m={exports:{}};process.dlopen(m,process.argv[1]);\
  process.exit(m.exports.__taskstreamKeeper())";

/// A keeper that answered `ok`: its task runs.
#[derive(Clone, Debug, PartialEq)]
pub struct KeeperStarted {
  /// The task record it wrote (`<id>.task.json`), checksum verified.
  pub record: TaskRecord,
  pub keeper_pid: u32,
}

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::{addon_path, launch_keeper, node_keeper_program};

#[cfg(not(unix))]
pub use unsupported::{addon_path, launch_keeper, node_keeper_program};

/// Platforms without persistence: every entry point fails.
#[cfg(not(unix))]
mod unsupported {
  use std::io;
  use std::path::PathBuf;

  use super::{KeeperConfig, KeeperProgram, KeeperStarted};

  pub fn node_keeper_program(_node: impl Into<PathBuf>) -> io::Result<KeeperProgram> {
    Err(crate::core::persist::unsupported())
  }

  pub fn launch_keeper(
    _program: &KeeperProgram,
    _config: &KeeperConfig,
  ) -> io::Result<KeeperStarted> {
    Err(crate::core::persist::unsupported())
  }

  pub fn addon_path() -> io::Result<PathBuf> {
    Err(crate::core::persist::unsupported())
  }
}
