//! Small helpers for talking to JavaScript values from the bindings: clocks,
//! persistent references, guarded callback calls.

use std::collections::HashMap;

use napi::bindgen_prelude::*;

use super::args;

pub use crate::core::clock::{mono_ms, wall_ms, RealClock};

/// A persistent reference to a JavaScript object or function; released with [`release`].
pub type Persistent = ObjectRef<false>;

pub fn persist(value: &Unknown) -> Result<Persistent> {
  let object: Object = unsafe { value.cast() }?;
  object.create_ref::<false>()
}

/// A persistent reference to `value` if it is an object (a registration's
/// `abortController`, which callers may leave out).
pub fn persist_object(value: &Unknown) -> Result<Option<Persistent>> {
  if value.get_type()? == ValueType::Object {
    persist(value).map(Some)
  } else {
    Ok(None)
  }
}

pub fn release(env: &Env, value: Persistent) {
  let _ = value.unref(env);
}

/// Calls `object.method()` with `this` bound to the object. A throw is caught,
/// logged and swallowed (CONTRACT.md §2.1 "Callback failures").
pub fn call_method_guarded(env: &Env, object: &Persistent, method: &str) {
  let result = object.get_value(env).and_then(|object| {
    let f: Function<(), Unknown> = object.get_named_property(method)?;
    f.bind(object)?.call(()).map(|_| ())
  });
  if let Err(error) = result {
    tracing::warn!(method, %error, "taskstream: a method call threw; the transition continues");
  }
}

/// Sets a property to a value, or to `undefined` when `None` (never `null`).
pub fn set_opt<T: ToNapiValue>(object: &mut Object, key: &str, value: Option<T>) -> Result<()> {
  match value {
    Some(v) => object.set_named_property(key, v),
    None => object.set_named_property(key, ()),
  }
}

/// Calls a function value we hold (already out of every borrow).
pub(crate) fn call_value<Args: JsValuesTupleIntoVec>(
  env: &Env,
  function: Object,
  what: &str,
  args: Args,
) {
  let result = unsafe { Function::<Args, Unknown>::from_napi_value(env.raw(), function.raw()) }
    .and_then(|f| f.call(args));
  if let Err(error) = result {
    tracing::warn!(callback = what, %error, "taskstream: a callback threw; the transition continues");
  }
}

/// An optional callback argument: a function, or `undefined` to clear.
pub(crate) fn optional_callback(
  env: &Env,
  value: &Unknown,
  name: &str,
) -> Result<Option<Persistent>> {
  match value.get_type()? {
    ValueType::Undefined | ValueType::Null => Ok(None),
    ValueType::Function => persist(value).map(Some),
    _ => Err(args::type_error(
      env,
      format!(
        "The \"{name}\" argument must be of type function. {}",
        args::received(value)
      ),
    )),
  }
}

/// A callback setter: installs `cb` (a function, or `undefined` to clear) in the slot.
pub(crate) fn set_callback_slot(
  env: &Env,
  slot: &mut Option<Persistent>,
  cb: &Unknown,
) -> Result<()> {
  let cb = optional_callback(env, cb, "cb")?;
  replace_slot(env, slot, cb);
  Ok(())
}

/// Replaces a callback slot, releasing the old function.
pub(crate) fn replace_slot(env: &Env, slot: &mut Option<Persistent>, value: Option<Persistent>) {
  if let Some(old) = std::mem::replace(slot, value) {
    release(env, old);
  }
}

/// Replaces (or, with `None`, deletes) a keyed callback, releasing the old function.
pub(crate) fn replace_keyed(
  env: &Env,
  map: &mut HashMap<String, Persistent>,
  key: String,
  value: Option<Persistent>,
) {
  let old = match value {
    Some(v) => map.insert(key, v),
    None => map.remove(&key),
  };
  if let Some(old) = old {
    release(env, old);
  }
}

/// JavaScript `a === b`.
pub(crate) fn strict_equals(env: &Env, a: &Object, b: &Unknown) -> bool {
  let mut result = false;
  // SAFETY: both values belong to `env` and are alive for this call.
  let status = unsafe { napi::sys::napi_strict_equals(env.raw(), a.raw(), b.raw(), &mut result) };
  status == napi::sys::Status::napi_ok && result
}

/// `clearStatusChangeCallback(cb)`: empties the slot only if `cb` is the
/// installed function (`===`), so an old owner cannot clear a newer subscriber.
pub(crate) fn clear_slot_if_installed(
  env: &Env,
  slot: &mut Option<Persistent>,
  cb: &Unknown,
) -> Result<()> {
  if cb.get_type()? != ValueType::Function {
    return Err(args::type_error(
      env,
      format!(
        "The \"cb\" argument must be of type function. {}",
        args::received(cb)
      ),
    ));
  }
  let installed = slot.as_ref().and_then(|f| f.get_value(env).ok());
  if installed.is_some_and(|f| strict_equals(env, &f, cb)) {
    if let Some(old) = slot.take() {
      release(env, old);
    }
  }
  Ok(())
}

/// Adds a once-only `abort` listener to `signal` that runs `action`. Nothing keeps the listener:
/// it lives as long as the signal.
pub(crate) fn on_abort(env: &Env, signal: &Object, action: impl Fn(&Env) + 'static) -> Result<()> {
  let listener = env.create_function_from_closure::<(), (), _>("taskstreamAbort", move |ctx| {
    action(ctx.env);
    Ok(())
  })?;
  let mut once = Object::new(env)?;
  once.set_named_property("once", true)?;
  let add: Function<FnArgs<(&str, Function<(), ()>, Object)>, Unknown> =
    signal.get_named_property("addEventListener")?;
  add
    .bind(*signal)?
    .call(FnArgs::from(("abort", listener, once)))
    .map(|_| ())
}
