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
pub use crate::core::launch::Persist as PersistOptions;

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
  Ok(Some(PersistOptions {
    state_dir: PathBuf::from(state_dir),
    lease_ms,
  }))
}

pub(crate) use launch::*;

mod launch {
  use std::sync::Arc;

  use napi::bindgen_prelude::*;

  use super::PersistOptions;
  use crate::core::launch::prepare_kept;

  use crate::core::persist::KeeperLink;

  /// The state directory is checked and the task's lock taken: nothing has
  /// started yet, and a failure here is thrown.
  pub(crate) fn prepare(persist: &PersistOptions, id: &str) -> Result<Arc<KeeperLink>> {
    prepare_kept(persist, id).map_err(Error::from_reason)
  }
}
