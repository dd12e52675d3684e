//! What `MonitorRegistry` and `BackgroundShellRegistry` do the same way, written once: the
//! JavaScript methods of `registry_surface!`, the native side of `waitFor` (API.md §6.1;
//! `lib/surface.js` makes its promise), the values of an entry's `ports` and `usage` getters,
//! unref'd timers, and `end` objects. Entry objects (with those getters), their controllers and
//! timers, the callbacks and the functions that settle pending waits are each registry's side
//! (`side.rs`, `lib/side.js`).

use napi::bindgen_prelude::*;

use super::js::{call_method_guarded, release, set_opt};
use super::side::Side;
use super::terminal::TerminalSurface;
use super::wait::{parse_wait_options, result_object, signal_aborted};
use crate::core::end::TaskEnd;
use crate::core::task::TaskStatus;
use crate::core::wait::{WaitOutcome, WaitReason, WaitSpec};

/// The `pid` a caller wrote on its entry object, by the rule `registration.pid` follows in both
/// registries (`args::optional_pid_field`: an integer in 0..=4294967295); any other value reads
/// as none, since it is read while a notification is built, where nothing can throw.
pub(crate) fn caller_pid(object: &Object) -> Option<u32> {
  let value: Unknown = object.get_named_property("pid").ok()?;
  if value.get_type().ok()? != ValueType::Number {
    return None;
  }
  let n = unsafe { value.cast::<f64>() }.ok()?;
  (n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64).then_some(n as u32)
}

/// `entry.ports` (API.md §6.8, a getter `lib/side.js` defines): the ports, or `undefined` (an
/// `Option` would give `null`) once the task ended or where they cannot be read.
pub(crate) fn ports_value(ports: Option<Vec<u16>>) -> Either<Vec<u32>, ()> {
  match ports {
    Some(ports) => Either::A(ports.into_iter().map(u32::from).collect()),
    None => Either::B(()),
  }
}

/// `entry.usage` (API.md §6.8, a getter `lib/side.js` defines): `{ cpuMs, peakMemoryBytes }`
/// (either `undefined` where it cannot be read), or `undefined` for a task without limits.
pub(crate) fn usage_value<'a>(
  env: &'a Env,
  usage: Option<crate::core::process::Usage>,
) -> Result<Either<Object<'a>, ()>> {
  let Some(usage) = usage else {
    return Ok(Either::B(()));
  };
  let mut out = Object::new(env)?;
  set_opt(&mut out, "cpuMs", usage.cpu_ms.map(|v| v as f64))?;
  set_opt(
    &mut out,
    "peakMemoryBytes",
    usage.peak_memory_bytes.map(|v| v as f64),
  )?;
  Ok(Either::A(out))
}

/// `TaskEnd` as a JavaScript object.
pub(crate) fn end_object<'a>(env: &'a Env, end: &TaskEnd) -> Result<Object<'a>> {
  let mut object = Object::new(env)?;
  object.set_named_property("reason", end.reason_str())?;
  object.set_named_property("by", end.by_str())?;
  set_opt(&mut object, "via", end.via_str())?;
  set_opt(&mut object, "exitCode", end.exit_code)?;
  set_opt(&mut object, "signal", end.signal.as_deref())?;
  set_opt(&mut object, "detail", end.detail.as_deref())?;
  set_opt(&mut object, "limit", end.limit_str())?;
  Ok(object)
}

/// `setTimeout(job, ms)`, looked up on the global object each time (so
/// fake timers drive it), then `unref()`'d: it never keeps Node alive. The
/// timer as `setTimeout` returned it.
pub(crate) fn set_unref_timeout<'a>(
  env: &'a Env,
  name: &str,
  ms: u64,
  job: impl Fn(&Env) + 'static,
) -> Result<Unknown<'a>> {
  let callback = env.create_function_from_closure::<(), (), _>(name, move |ctx| {
    job(ctx.env);
    Ok(())
  })?;
  let set_timeout: Function<FnArgs<(Function<(), ()>, f64)>, Unknown> =
    env.get_global()?.get_named_property("setTimeout")?;
  let timer = set_timeout.call(FnArgs::from((callback, ms as f64)))?;
  if timer.get_type()? == ValueType::Object {
    let object: Object = unsafe { timer.cast() }?;
    if object.get_named_property::<Unknown>("unref")?.get_type()? == ValueType::Function {
      let object = object.create_ref::<false>()?;
      call_method_guarded(env, &object, "unref");
      release(env, object);
    }
  }
  Ok(timer)
}

/// What a registry class lends the JavaScript methods both registries share
/// ([`registry_surface!`]).
pub(crate) trait RegistrySurface: TerminalSurface {
  /// Every entry's id, in insertion order.
  fn entry_ids(&self) -> Vec<String>;
  /// The entry object of `id`, brought up to date from the registry.
  fn synced_entry<'a>(&'a self, env: &'a Env, id: &str) -> Option<Object<'a>>;
  /// Reads a caller's registration object and registers it, filled in; a
  /// refusal changes nothing.
  fn register_object(&self, env: &Env, object: &Object) -> Result<()>;
  /// The status of `id` and whether it has settled; `None` when it is not registered.
  fn wait_target(&self, id: &str) -> Option<(TaskStatus, bool)>;
  /// The registry's JavaScript side (which settles its `waitFor` promises).
  fn side(&self) -> &Side;
  /// Ends wait `wait` on `id` as `aborted` (its signal fired).
  fn abort_wait(&self, env: &Env, id: &str, wait: u64);
  /// Hands pending wait `wait` (the side's id) to the registry, which ends it.
  fn add_wait(&self, env: &Env, id: &str, wait: u64, spec: WaitSpec) -> Result<()>;
  /// `restart(id)` (API.md §6.8): what this kind returns for the new run.
  fn restart_task(&self, env: &Env, id: String) -> Result<Unknown<'static>>;
  /// The ports the running task `id`'s tree listens on (API.md §6.8).
  fn ports(&self, id: &str) -> Option<Vec<u16>>;
  /// What task `id` used, for a task with limits (API.md §6.8).
  fn usage(&self, id: &str) -> Option<crate::core::process::Usage>;
  /// The controller of task `id`'s object of this `generation` (`Side::add`'s) was aborted;
  /// `current`: that object is the entry's now (else the entry left the registry).
  fn task_aborted(&self, env: &Env, id: &str, generation: u64, current: bool);
}

/// Settles pending wait `wait` of `side` with `outcome`.
pub(crate) fn resolve_wait(env: &Env, side: &Side, wait: u64, outcome: &WaitOutcome) {
  match result_object(env, outcome) {
    Ok(result) => side.resolve_wait(env, wait, result),
    Err(error) => tracing::warn!(%error, "taskstream: could not make a WaitResult"),
  }
}

/// The native side of `waitFor(id, options)` (API.md §6.1) of either registry, for the pending
/// wait `wait` the layer began on the registry's side: checks the arguments; settles it at once
/// when the signal has fired (`aborted`) or the task has settled (`exit`); otherwise hands it to
/// the registry (an abort of the signal reaches `__abortWait`, [`RegistrySurface::abort_wait`]).
pub(crate) fn surface_wait_for<T: RegistrySurface>(
  env: &Env,
  surface: &T,
  id: &Unknown,
  field: &str,
  options: &Unknown,
  wait: u64,
) -> Result<()> {
  let id = super::args::string(env, id, field)?;
  let options = parse_wait_options(env, options)?;
  let Some((status, settled)) = surface.wait_target(&id) else {
    return Err(Error::from_reason(format!(
      "{} \"{id}\" is not registered.",
      T::KIND_NAME
    )));
  };
  let aborted = options.signal.as_ref().is_some_and(signal_aborted);
  if aborted || settled {
    let reason = if aborted {
      WaitReason::Aborted
    } else {
      WaitReason::Exit
    };
    let outcome = WaitOutcome {
      reason,
      line: None,
      port: None,
      status,
      elapsed_ms: 0.0,
    };
    resolve_wait(env, surface.side(), wait, &outcome);
    return Ok(());
  }
  surface.add_wait(env, &id, wait, options.spec)
}

/// The entry objects of `ids` (those still held), as an array.
pub(crate) fn entries_array<'a>(
  env: &'a Env,
  surface: &'a impl RegistrySurface,
  ids: Vec<String>,
) -> Result<Unknown<'static>> {
  let mut array = env.create_array(0)?;
  let mut i = 0;
  for id in ids {
    if let Some(object) = surface.synced_entry(env, &id) {
      array.set(i, object)?;
      i += 1;
    }
  }
  Ok(super::args::out(env, &array))
}

/// `get(id)`: the entry object, kept up to date, or `undefined`.
pub(crate) fn surface_get(
  env: &Env,
  surface: &impl RegistrySurface,
  id: &Unknown,
  field: &str,
) -> Result<Unknown<'static>> {
  let id = super::args::string(env, id, field)?;
  match surface.synced_entry(env, &id) {
    Some(object) => Ok(super::args::out(env, &object)),
    None => super::args::undefined(env),
  }
}

/// The JavaScript methods both registries have, written once: `register`,
/// `waitFor`, `get`, `getAll`, `restart`, and `recover`
/// (through `persist::recover`, `$class` implementing `persist::Recovering`). `$class` implements
/// [`RegistrySurface`]; the strings name its id argument in errors (`waitFor`'s and `restart`'s,
/// then `get`'s). `header.d.ts` declares the methods.
macro_rules! registry_surface {
  ($class:ident, wait_id = $wait_id:tt, id = $id:tt $(,)?) => {
    #[napi]
    impl $class {
      /// Registers a task fed from JavaScript and returns the very object
      /// given, filled in (API.md §3, §4). A duplicate id throws and changes
      /// nothing.
      #[napi(catch_unwind, skip_typescript)]
      pub fn register(&self, env: Env, registration: Unknown) -> Result<Unknown<'static>> {
        let object = $crate::binding::args::object(&env, &registration, "registration")?;
        $crate::binding::registry::RegistrySurface::register_object(self, &env, &object)?;
        Ok($crate::binding::args::out(&env, &registration))
      }

      /// `waitFor`'s native side (`lib/surface.js` makes the promise; `header.d.ts` declares it).
      #[napi(catch_unwind, js_name = "__waitFor", skip_typescript)]
      pub fn wait_for(&self, env: Env, id: Unknown, options: Unknown, wait: f64) -> Result<()> {
        $crate::binding::registry::surface_wait_for(
          &env,
          self,
          &id,
          $wait_id,
          &options,
          wait as u64,
        )
      }

      /// An abort of pending wait `wait`'s signal (from `lib/surface.js`).
      #[napi(catch_unwind, js_name = "__abortWait", skip_typescript)]
      pub fn abort_wait(&self, env: Env, id: String, wait: f64) {
        $crate::binding::registry::RegistrySurface::abort_wait(self, &env, &id, wait as u64)
      }

      /// The entry object (the same one each time, kept up to date), or `undefined`.
      #[napi(catch_unwind, skip_typescript)]
      pub fn get(&self, env: Env, id: Unknown) -> Result<Unknown<'static>> {
        $crate::binding::registry::surface_get(&env, self, &id, $id)
      }

      /// Every entry, in insertion order.
      #[napi(catch_unwind, skip_typescript)]
      pub fn get_all(&self, env: Env) -> Result<Unknown<'static>> {
        let ids = $crate::binding::registry::RegistrySurface::entry_ids(self);
        $crate::binding::registry::entries_array(&env, self, ids)
      }

      /// `restart(id)` (API.md §6.8): the id checked and handed to the kind's `restart_task`.
      #[napi(catch_unwind, skip_typescript)]
      pub fn restart(&self, env: Env, id: Unknown) -> Result<Unknown<'static>> {
        let id = $crate::binding::args::string(&env, &id, $wait_id)?;
        $crate::binding::registry::RegistrySurface::restart_task(self, &env, id)
      }

      /// `entry.ports` of a task we run (its getter is `lib/side.js`'s).
      #[napi(catch_unwind, js_name = "__ports", skip_typescript)]
      pub fn ports(&self, id: String) -> napi::Either<Vec<u32>, ()> {
        $crate::binding::registry::ports_value($crate::binding::registry::RegistrySurface::ports(
          self, &id,
        ))
      }

      /// `entry.usage` of a task we run (its getter is `lib/side.js`'s).
      #[napi(catch_unwind, js_name = "__usage", skip_typescript)]
      pub fn usage<'a>(&self, env: &'a Env, id: String) -> Result<napi::Either<Object<'a>, ()>> {
        let usage = $crate::binding::registry::RegistrySurface::usage(self, &id);
        $crate::binding::registry::usage_value(env, usage)
      }

      /// An abort of the controller of a task we run (its listener is `lib/side.js`'s).
      #[napi(catch_unwind, js_name = "__taskAborted", skip_typescript)]
      pub fn task_aborted(&self, env: Env, id: String, generation: f64, current: bool) {
        let generation = generation as u64;
        $crate::binding::registry::RegistrySurface::task_aborted(
          self, &env, &id, generation, current,
        )
      }

      /// `recover(options)` (docs/persistence.md), through `persist::recover`.
      #[napi(catch_unwind, skip_typescript)]
      pub fn recover(&self, env: Env, options: Unknown) -> Result<Unknown<'static>> {
        $crate::binding::persist::recover(&env, self, &options)
      }
    }
  };
}
pub(crate) use registry_surface;
