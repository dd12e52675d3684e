//! A registry's JavaScript side (`lib/side.js`, ARCHITECTURE.md "The JavaScript layer"): each
//! entry's object and `AbortController`, a fed monitor's idle timer, a `keepAlive` monitor's
//! timer, the callbacks, and the functions that settle pending waits. The registries' hubs decide every effect; a registry carries each
//! one out by calling its side with plain data, in order. Every call is guarded: a failure is
//! logged and the transition goes on.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::anchor::Anchor;
use super::args;

/// A registry's side, held as long as the registry's native part lives (a strong reference,
/// deleted when it is dropped; the side refers to its registry only weakly).
pub(crate) struct Side(Anchor);

impl Side {
  /// Makes the side of the registry `this`, in its constructor.
  pub(crate) fn new(env: &Env, this: &Unknown) -> Result<Self> {
    let side = super::layer::side(env, this)?;
    let anchor = Anchor::new(env, &side.to_unknown())?;
    anchor.hold(env, true);
    Ok(Self(anchor))
  }

  /// Calls the side's method `name` with `args`; `None` (logged) when it failed.
  fn call<'a, A: JsValuesTupleIntoVec>(
    &self,
    env: &'a Env,
    name: &str,
    args: A,
  ) -> Option<Unknown<'a>> {
    let called = (|| {
      let side = self
        .0
        .value(env)
        .ok_or_else(|| Error::from_reason("the registry's side is gone"))?;
      let method: Function<A, Unknown> = side.get_named_property(name)?;
      method.bind(side)?.call(args)
    })();
    called
      .map_err(
        |error| tracing::warn!(method = name, %error, "taskstream: a registry's side failed"),
      )
      .ok()
  }

  /// Keeps a new entry's object (with its `abortController`) and, for a `keepAlive` monitor, the
  /// function that lets its timer go; returns its generation (a number no earlier entry object
  /// of the registry had). A task we run gives its live `counters` (maybe none): the side then
  /// defines the object's live getters and listens to its controller (`lib/side.js`). A failure
  /// is thrown: nothing is registered yet.
  pub(crate) fn add(
    &self,
    env: &Env,
    id: &str,
    object: &Object,
    release: Option<Unknown>,
    counters: Option<&[&str]>,
  ) -> Result<u64> {
    let side = self
      .0
      .value(env)
      .ok_or_else(|| Error::from_reason("the registry's side is gone"))?;
    let add: Function<FnArgs<(&str, Object, Option<Unknown>, Option<Vec<&str>>)>, f64> =
      side.get_named_property("add")?;
    let args = (id, *object, release, counters.map(<[&str]>::to_vec));
    Ok(add.bind(side)?.call(FnArgs::from(args))? as u64)
  }

  /// The object of entry `id`.
  pub(crate) fn object<'a>(&self, env: &'a Env, id: &str) -> Option<Object<'a>> {
    let value = self.call(env, "object", id)?;
    as_object(value)
  }

  /// Writes `fields` on entry `id`'s object and returns the object.
  pub(crate) fn sync<'a>(
    &self,
    env: &'a Env,
    id: &str,
    fields: Option<Object>,
  ) -> Option<Object<'a>> {
    let value = self.call(env, "sync", FnArgs::from((id, fields)))?;
    as_object(value)
  }

  /// A new entry: the register callback.
  pub(crate) fn registered(&self, env: &Env, id: &str, fields: Option<Object>) {
    self.call(env, "registered", FnArgs::from((id, fields)));
  }

  /// The status-change callback; an entry that is not `running` lets its timers go.
  pub(crate) fn status_changed(
    &self,
    env: &Env,
    id: Option<&str>,
    fields: Option<Object>,
    running: bool,
  ) {
    self.call(env, "statusChanged", FnArgs::from((id, fields, running)));
  }

  /// Whether a global notification callback is installed.
  pub(crate) fn has_notification(&self, env: &Env) -> bool {
    let value = self.call(env, "hasNotification", ());
    value.is_some_and(|v| unsafe { v.cast::<bool>() }.unwrap_or(false))
  }

  /// A notification of entry `id`: to `agent`'s callback, or with `None` to the global one.
  /// Whether there was a callback to call.
  pub(crate) fn notify(
    &self,
    env: &Env,
    id: &str,
    fields: Option<Object>,
    agent: Option<&str>,
    texts: (&str, &str),
    meta: Object,
  ) -> bool {
    let args = FnArgs::from((id, fields, agent, texts.0, texts.1, meta));
    let called = self.call(env, "notify", args);
    called.is_some_and(|v| unsafe { v.cast::<bool>() }.unwrap_or(false))
  }

  /// Aborts entry `id`'s controller.
  pub(crate) fn abort(&self, env: &Env, id: &str, fields: Option<Object>) {
    self.call(env, "abort", FnArgs::from((id, fields)));
  }

  /// Whether entry `id`'s controller has been aborted.
  pub(crate) fn aborted(&self, env: &Env, id: &str) -> bool {
    let value = self.call(env, "aborted", id);
    value.is_some_and(|v| unsafe { v.cast::<bool>() }.unwrap_or(false))
  }

  /// An owner agent's lifecycle callback.
  pub(crate) fn wake(&self, env: &Env, agent: &str) {
    self.call(env, "wake", agent);
  }

  /// These entries left the registry.
  pub(crate) fn removed(&self, env: &Env, ids: &[String]) {
    self.call(env, "removed", ids.to_vec());
  }

  /// Arms (again) a fed monitor's idle timer.
  pub(crate) fn arm_idle(&self, env: &Env, id: &str, ms: u64) {
    self.call(env, "armIdle", FnArgs::from((id, ms as f64)));
  }

  /// Settles pending wait `wait` with its `WaitResult` (once: later calls do nothing).
  pub(crate) fn resolve_wait(&self, env: &Env, wait: u64, result: Object) {
    self.call(env, "resolveWait", FnArgs::from((wait as f64, result)));
  }

  /// Whether a `waitFor` of the registry is pending.
  pub(crate) fn has_waits(&self, env: &Env) -> bool {
    let value = self.call(env, "hasWaits", ());
    value.is_some_and(|v| unsafe { v.cast::<bool>() }.unwrap_or(false))
  }

  /// Keeps the caller's `signal` of shell `id`'s start for its `restart()` (it goes with the
  /// entry).
  pub(crate) fn keep_signal(&self, env: &Env, id: &str, signal: &Object) {
    self.call(env, "keepSignal", FnArgs::from((id, *signal)));
  }

  /// The caller's `signal` kept for entry `id`.
  pub(crate) fn signal<'a>(&self, env: &'a Env, id: &str) -> Option<Object<'a>> {
    let value = self.call(env, "signal", id)?;
    as_object(value)
  }

  /// A shell's `restart(id)` begins: the promise it returns.
  pub(crate) fn begin_restart<'a>(&self, env: &'a Env, id: &str) -> Result<Unknown<'a>> {
    let promise = self.call(env, "beginRestart", id);
    promise.ok_or_else(|| Error::from_reason("taskstream: could not begin a restart"))
  }

  /// The restart of `id` ends: its promise resolves with the new run's handle, or rejects.
  pub(crate) fn end_restart(&self, env: &Env, id: &str, started: Result<Object>) {
    match started.map_err(|error| env.create_error(error)) {
      Ok(handle) => self.call(env, "endRestart", FnArgs::from((id, handle))),
      Err(Ok(error)) => self.call(env, "endRestart", FnArgs::from((id, (), error))),
      Err(Err(error)) => {
        tracing::warn!(%error, "taskstream: could not settle a shell restart's promise");
        None
      }
    };
  }

  /// A monitor registry's reset: the per-agent callbacks go.
  pub(crate) fn clear_agents(&self, env: &Env) {
    self.call(env, "clearAgents", ());
  }
}

/// A failure the JavaScript layer reports (a callback that threw), logged as the addon logs.
#[napi(catch_unwind, js_name = "__warn", skip_typescript)]
pub fn warn(what: String, error: String) {
  tracing::warn!(callback = what, %error, "taskstream: a callback threw; the transition continues");
}

/// The JavaScript layer's argument check: `kind` is `string`, `function` or `optionalFunction`
/// (a function, `undefined` or `null`); a bad value throws the `TypeError` naming `name`.
#[napi(catch_unwind, js_name = "__checkArg", skip_typescript)]
pub fn check_arg(env: Env, value: Unknown, name: String, kind: String) -> Result<()> {
  let (expected, ok) = match (kind.as_str(), value.get_type()?) {
    ("string", ValueType::String) => ("string", true),
    ("string", _) => ("string", false),
    (_, ValueType::Function) => ("function", true),
    ("optionalFunction", ValueType::Undefined | ValueType::Null) => ("function", true),
    _ => ("function", false),
  };
  if ok {
    return Ok(());
  }
  Err(args::type_error(
    &env,
    format!(
      "The \"{name}\" argument must be of type {expected}. {}",
      args::received(&value)
    ),
  ))
}

/// A value a side method returned, when it is an object.
fn as_object(value: Unknown) -> Option<Object> {
  (value.get_type().ok()? == ValueType::Object).then(|| unsafe { value.cast::<Object>() }.ok())?
}
