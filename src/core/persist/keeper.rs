//! The keeper: a detached process that runs one persisted task for as long
//! as its lease holds (docs/persistence.md "The keeper").
//!
//! [`launch_keeper`] (in the host) starts the keeper program in a session of
//! its own, untracked by the host's watchdog and tracker, writes the
//! [`KeeperConfig`] on its stdin and waits up to 15 s for its handshake line
//! on stdout: `ok <task record>` or `err <message>`.
//!
//! [`keeper_main`] (in the keeper) spawns the task with the standard
//! containment (`core::process::spawn`: session, group, tag, cgroup and the
//! keeper's own watchdog, so the task dies with its keeper however the
//! keeper dies), writes `<id>.task.json`, answers the handshake, and then
//! writes the output (monitors: the raw `<id>.log`; shells: the normal output
//! file through `OutputWriter`) until the task ends, is cancelled through
//! `<id>.cancel`, its lease expires, or the keeper is told to stop by
//! SIGTERM, SIGINT or SIGHUP. Its last act is `<id>.end.json`.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use super::records::{KeeperConfig, TaskRecord};

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

/// The name of the addon's hidden export that runs [`keeper_main`].
pub const KEEPER_EXPORT: &str = "__taskstreamKeeper";

/// The script `node -e` runs as a keeper: loads the addon named by its one
/// argument and exits with what its [`KEEPER_EXPORT`] returns.
pub const NODE_KEEPER_SCRIPT: &str = "const m={exports:{}};process.dlopen(m,process.argv[1]);\
  process.exit(m.exports.__taskstreamKeeper())";

/// The file this code was loaded from (the addon's `.node` file in Node, the
/// test binary in `cargo test`), found with `dladdr` on one of its functions.
pub fn addon_path() -> io::Result<PathBuf> {
  imp::addon_path()
}

/// The keeper program for a host running in Node: `node -e <script> <addon>`
/// with `node` the host's executable (`std::env::current_exe()`), and
/// `NODE_OPTIONS` emptied for the keeper (a host's `--inspect` must not
/// follow it; the task's environment comes from the config, not from here).
pub fn node_keeper_program(node: impl Into<PathBuf>) -> io::Result<KeeperProgram> {
  let addon = addon_path()?;
  Ok(KeeperProgram {
    program: node.into(),
    args: vec![
      "-e".into(),
      NODE_KEEPER_SCRIPT.into(),
      addon.into_os_string(),
    ],
    env: vec![("NODE_OPTIONS".into(), "".into())],
  })
}

/// A keeper that answered `ok`: its task runs.
#[derive(Clone, Debug, PartialEq)]
pub struct KeeperStarted {
  /// The task record it wrote (`<id>.task.json`), checksum verified.
  pub record: TaskRecord,
  pub keeper_pid: u32,
}

/// Starts a keeper for `config` and waits for its handshake (see the module
/// documentation). On `err`, a timeout or an early exit, the keeper is
/// killed (it is still our unreaped child, so its pid cannot have been
/// reused) and the error returned; its task, if it had started one, dies
/// with it. Afterwards a thread of ours reaps the keeper: no zombie.
pub fn launch_keeper(program: &KeeperProgram, config: &KeeperConfig) -> io::Result<KeeperStarted> {
  imp::launch_keeper(program, config)
}

/// The keeper's whole life: reads its [`KeeperConfig`] from stdin, runs the
/// task, and returns the process exit code (0 once the end record is
/// written). The caller exits with it at once.
pub fn keeper_main() -> i32 {
  imp::keeper_main()
}

#[cfg(unix)]
#[path = "keeper_unix.rs"]
mod imp;

#[cfg(not(unix))]
mod imp {
  use std::io;

  use super::{KeeperConfig, KeeperProgram, KeeperStarted};

  pub(super) fn launch_keeper(
    _program: &KeeperProgram,
    _config: &KeeperConfig,
  ) -> io::Result<KeeperStarted> {
    Err(crate::core::persist::unsupported())
  }

  pub(super) fn addon_path() -> io::Result<std::path::PathBuf> {
    Err(crate::core::persist::unsupported())
  }

  pub(super) fn keeper_main() -> i32 {
    eprintln!(
      "taskstream keeper: {}",
      crate::core::persist::UNSUPPORTED_MESSAGE
    );
    1
  }
}
