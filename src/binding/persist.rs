//! The `persist` option of `start()` and `executeBackground()` (a task that
//! outlives its host on a lease; see docs/persistence.md), checked before
//! anything starts.

use std::path::PathBuf;

use napi::bindgen_prelude::*;

use super::args;

/// The lease's bounds and default (ms).
pub const LEASE_MS_MIN: u64 = 1000;
pub const LEASE_MS_MAX: u64 = 604_800_000;
pub const LEASE_MS_DEFAULT: u64 = 600_000;

/// `persist` after validation.
#[derive(Clone, Debug)]
#[cfg_attr(not(unix), allow(dead_code))] // refused before use where there is no keeper
pub struct PersistOptions {
  pub state_dir: PathBuf,
  pub lease_ms: u64,
}

/// `options.persist`: `undefined` gives `None`; a wrong type is a
/// `TypeError` naming the field, a `leaseMs` out of range a `RangeError`.
/// With `terminal` it is refused (a terminal cannot be followed through a
/// file yet), and on Windows it is refused with an Error.
pub(crate) fn parse_persist_option(
  env: &Env,
  o: &Object,
  terminal: bool,
) -> Result<Option<PersistOptions>> {
  let value = args::field(o, "persist")?;
  if args::is_undefined(&value) {
    return Ok(None);
  }
  let p = args::object(env, &value, "options.persist")?;
  let state_dir = args::string(
    env,
    &args::field(&p, "stateDir")?,
    "options.persist.stateDir",
  )?;
  args::no_nul(env, &state_dir, "options.persist.stateDir")?;
  if !std::path::Path::new(&state_dir).is_absolute() {
    return Err(args::type_error(
      env,
      format!(
        "The \"options.persist.stateDir\" property must be an absolute path. Received {}",
        args::quoted(&state_dir)
      ),
    ));
  }
  let lease_ms = args::optional_integer_field(
    env,
    &p,
    "leaseMs",
    "options.persist.leaseMs",
    LEASE_MS_MIN as f64,
    LEASE_MS_MAX as f64,
  )?
  .map_or(LEASE_MS_DEFAULT, |n| n as u64);
  if terminal {
    return Err(args::type_error(
      env,
      "The \"options.persist\" property cannot be combined with \"options.terminal\": terminal tasks cannot be persisted yet (their screen lives in the host)".into(),
    ));
  }
  if !cfg!(unix) {
    return Err(Error::from_reason(
      crate::core::persist::UNSUPPORTED_MESSAGE,
    ));
  }
  Ok(Some(PersistOptions {
    state_dir: PathBuf::from(state_dir),
    lease_ms,
  }))
}

#[cfg(unix)]
pub(crate) use launch::*;

#[cfg(unix)]
mod launch {
  use std::ffi::OsString;
  use std::path::{Path, PathBuf};
  use std::sync::Arc;

  use napi::bindgen_prelude::*;
  use napi_derive::napi;

  use super::PersistOptions;
  use crate::core::persist::{
    self, ensure_state_dir, launch_keeper, node_keeper_program, AdoptionLock, KeeperConfig,
    TaskKind, TaskRecord, TryLock, RECORD_VERSION,
  };
  use crate::core::persist::{renewer, KeeperLink};

  /// The keeper's entry point, run by `node -e` in the keeper process:
  /// blocks for the task's whole life, then exits the process.
  #[napi(js_name = "__taskstreamKeeper", skip_typescript)]
  pub fn taskstream_keeper() {
    let code = crate::core::keeper::keeper_main();
    std::process::exit(code);
  }

  /// What a persisted start asks of the keeper.
  pub(crate) struct Launch<'a> {
    pub kind: TaskKind,
    pub id: &'a str,
    pub persist: &'a PersistOptions,
    pub command: &'a str,
    pub description: &'a str,
    pub cwd: &'a Path,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(OsString, OsString)>,
    pub task_tag: String,
    pub output_path: Option<PathBuf>,
    pub status_path: Option<String>,
    pub max_output_bytes: u64,
    pub start_time: f64,
    pub options: serde_json::Value,
  }

  /// The state directory is checked and the task's lock taken: nothing has
  /// started yet, and a failure here is thrown.
  pub(crate) fn prepare(persist: &PersistOptions, id: &str) -> Result<Arc<KeeperLink>> {
    ensure_state_dir(&persist.state_dir).map_err(|e| Error::from_reason(e.to_string()))?;
    match AdoptionLock::try_acquire(&persist.state_dir, id) {
      Ok(TryLock::Acquired(lock)) => Ok(Arc::new(KeeperLink::new(&persist.state_dir, id, lock))),
      Ok(TryLock::Busy) => Err(Error::from_reason(format!(
        "The persisted task \"{id}\" is owned by another host (its lock in {} is held)",
        persist.state_dir.display()
      ))),
      Err(error) => Err(Error::from_reason(format!(
        "The \"options.persist.stateDir\" lock for \"{id}\" cannot be taken: {error}"
      ))),
    }
  }

  fn lossy(s: &std::ffi::OsStr) -> String {
    s.to_string_lossy().into_owned()
  }

  /// Starts the keeper and waits for its handshake; the lease renewer
  /// attaches the state directory first (so the lease is fresh).
  pub(crate) fn launch(request: Launch) -> std::io::Result<TaskRecord> {
    let persist = request.persist;
    renewer::attach(&persist.state_dir, persist.lease_ms);
    let program = node_keeper_program(std::env::current_exe()?)?;
    let output_path = request
      .output_path
      .unwrap_or_else(|| persist::TaskFiles::new(&persist.state_dir, request.id).log);
    let config = KeeperConfig {
      version: RECORD_VERSION,
      kind: request.kind,
      id: request.id.to_owned(),
      state_dir: lossy(persist.state_dir.as_os_str()),
      command: request.command.to_owned(),
      description: request.description.to_owned(),
      cwd: lossy(request.cwd.as_os_str()),
      program: lossy(request.program.as_os_str()),
      args: request.args,
      env: request
        .env
        .iter()
        .map(|(k, v)| (lossy(k), lossy(v)))
        .collect(),
      task_tag: request.task_tag,
      lease_ms: persist.lease_ms,
      output_path: lossy(output_path.as_os_str()),
      status_path: request.status_path,
      max_output_bytes: request.max_output_bytes,
      start_time: request.start_time as u64,
      options: request.options,
    };
    launch_keeper(&program, &config).map(|started| started.record)
  }
}

/// Windows: `recover()` exists (the typings are the same everywhere) and
/// throws why persistence is not supported there.
#[cfg(not(unix))]
mod unsupported {
  use napi::bindgen_prelude::*;
  use napi_derive::napi;

  use crate::binding::monitor::MonitorRegistry;
  use crate::binding::shell::BackgroundShellRegistry;

  #[napi]
  impl MonitorRegistry {
    #[napi(
      catch_unwind,
      ts_args_type = "options: RecoverOptions",
      skip_typescript
    )]
    pub fn recover(&self, _options: Unknown) -> Result<()> {
      Err(Error::from_reason(
        crate::core::persist::UNSUPPORTED_MESSAGE,
      ))
    }
  }

  #[napi]
  impl BackgroundShellRegistry {
    #[napi(
      catch_unwind,
      ts_args_type = "options: RecoverOptions",
      skip_typescript
    )]
    pub fn recover(&self, _options: Unknown) -> Result<()> {
      Err(Error::from_reason(
        crate::core::persist::UNSUPPORTED_MESSAGE,
      ))
    }
  }
}
