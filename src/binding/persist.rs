//! The `persist` option of `start()` and `executeBackground()` (a task that
//! outlives its host on a lease; see docs/persistence.md), checked before
//! anything starts.

use std::path::Path;
use std::sync::Arc;

use napi::bindgen_prelude::*;

use super::args;
use crate::core::persist::{self, ensure_state_dir, EndView, KeeperLink, TakeOver};
use crate::core::persist::{TaskKind, TaskRecord};

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
  bag: &args::Bag,
  terminal: bool,
) -> Result<Option<PersistOptions>> {
  let env = bag.env;
  let value = bag.get("persist")?;
  if args::is_undefined(&value) {
    return Ok(None);
  }
  let path = bag.path("persist");
  let p = args::Bag::new(env, &args::object(env, &value, &path)?, &path);
  let state_dir = args::absolute_path(env, p.string("stateDir")?, "options.persist.stateDir")?;
  let lease_ms = p
    .opt_u64("leaseMs", LEASE_MS_MIN, LEASE_MS_MAX)?
    .unwrap_or(LEASE_MS_DEFAULT);
  if terminal {
    return Err(args::type_error(
      env,
      "The \"options.persist\" property cannot be combined with \"options.terminal\": terminal tasks cannot be persisted yet (their screen lives in the host)".into(),
    ));
  }
  Ok(Some(PersistOptions {
    state_dir,
    lease_ms,
  }))
}

/// The state directory is checked and the task's lock taken: nothing has
/// started yet, and a failure here is thrown.
pub(crate) fn prepare(persist: &PersistOptions, id: &str) -> Result<Arc<KeeperLink>> {
  crate::core::launch::prepare_kept(persist, id).map_err(Error::from_reason)
}

/// How one registry takes over its persisted tasks in [`recover`].
pub(crate) trait Recovering {
  /// Which records are this registry's.
  const KIND: TaskKind;
  /// What registering a recorded task leaves for its settle or adoption.
  type Registered<'a>
  where
    Self: 'a;
  /// Registers the recorded task as running: its entry object, and what
  /// follows. An error leaves the task alone (listed in `busy`).
  fn register_recorded<'a>(
    &'a self,
    env: &'a Env,
    record: &TaskRecord,
  ) -> Result<(Object<'a>, Self::Registered<'a>)>;
  /// Settles a registered task with its recorded end (one terminal notification).
  fn settle_recorded(
    &self,
    env: &Env,
    record: &TaskRecord,
    registered: Self::Registered<'_>,
    end: &EndView,
  ) -> Result<()>;
  /// Follows a registered task whose keeper lives, through `link` (its lease renewed).
  fn adopt(
    &self,
    env: &Env,
    record: &TaskRecord,
    registered: Self::Registered<'_>,
    link: Arc<KeeperLink>,
  ) -> Result<()>;
}

/// `recover({ stateDir })` of either registry (docs/persistence.md): every
/// finding of the scan, in order, into the object `recover()` returns.
pub(crate) fn recover<R: Recovering>(
  env: &Env,
  registry: &R,
  options: &Unknown,
) -> Result<Unknown<'static>> {
  let state_dir = recover_state_dir(env, options)?;
  let found = persist::scan(&state_dir, R::KIND).map_err(|e| {
    Error::from_reason(format!("recover: cannot read {}: {e}", state_dir.display()))
  })?;
  let mut recovery = Recovery {
    env,
    registry,
    out: RecoverOut::new(env)?,
  };
  persist::take_over(&state_dir, found, &mut recovery)?;
  Ok(args::out(env, &recovery.out.finish()?))
}

/// A registry's `recover()` under way: what core `take_over` asks of it, and the object it returns.
struct Recovery<'a, R> {
  env: &'a Env,
  registry: &'a R,
  out: RecoverOut<'a>,
}

impl<'a, R: Recovering> TakeOver for Recovery<'a, R> {
  type Registered = (Object<'a>, R::Registered<'a>);
  type Error = Error;

  fn register(&mut self, record: &TaskRecord) -> std::result::Result<Self::Registered, String> {
    let registered = self.registry.register_recorded(self.env, record);
    registered.map_err(|error| error.reason)
  }

  fn settle(
    &mut self,
    record: &TaskRecord,
    (object, registered): Self::Registered,
    end: &EndView,
  ) -> Result<()> {
    self
      .registry
      .settle_recorded(self.env, record, registered, end)?;
    self.out.settled.insert(object)
  }

  fn adopt(
    &mut self,
    record: &TaskRecord,
    (object, registered): Self::Registered,
    link: Arc<KeeperLink>,
  ) -> Result<()> {
    self.registry.adopt(self.env, record, registered, link)?;
    self.out.adopted.insert(object)
  }

  fn corrupt(&mut self, file: &Path, error: &str) -> Result<()> {
    let mut o = Object::new(self.env)?;
    o.set_named_property("file", file.to_string_lossy().as_ref())?;
    o.set_named_property("error", error)?;
    self.out.corrupt.insert(o)
  }

  fn busy(&mut self, id: &str, why: Option<&str>) -> Result<()> {
    if let Some(why) = why {
      tracing::debug!(%id, %why, "taskstream: recover left a task alone");
    }
    self.out.busy.insert(id)
  }

  fn lost(&mut self, record: &TaskRecord, reason: &str) -> Result<()> {
    let mut o = Object::new(self.env)?;
    o.set_named_property("id", record.id.as_str())?;
    o.set_named_property("command", record.command.as_str())?;
    o.set_named_property("reason", reason)?;
    self.out.lost.insert(o)
  }
}

/// `options.stateDir`: absolute, then created or checked as `persist.stateDir` is.
pub(crate) fn recover_state_dir(env: &Env, options: &Unknown) -> Result<std::path::PathBuf> {
  let o = args::object(env, options, "options")?;
  let dir = args::string(env, &args::field(&o, "stateDir")?, "options.stateDir")?;
  let path = args::absolute_path(env, dir, "options.stateDir")?;
  ensure_state_dir(&path).map_err(|e| Error::from_reason(e.to_string()))?;
  Ok(path)
}

/// The object `recover()` returns, filled as the findings come.
pub(crate) struct RecoverOut<'a> {
  env: &'a Env,
  adopted: Array<'a>,
  settled: Array<'a>,
  lost: Array<'a>,
  corrupt: Array<'a>,
  busy: Array<'a>,
}

impl<'a> RecoverOut<'a> {
  pub(crate) fn new(env: &'a Env) -> Result<Self> {
    Ok(Self {
      env,
      adopted: env.create_array(0)?,
      settled: env.create_array(0)?,
      lost: env.create_array(0)?,
      corrupt: env.create_array(0)?,
      busy: env.create_array(0)?,
    })
  }
  pub(crate) fn finish(self) -> Result<Object<'a>> {
    let mut o = Object::new(self.env)?;
    o.set_named_property("adopted", self.adopted)?;
    o.set_named_property("settled", self.settled)?;
    o.set_named_property("lost", self.lost)?;
    o.set_named_property("corrupt", self.corrupt)?;
    o.set_named_property("busy", self.busy)?;
    Ok(o)
  }
}
