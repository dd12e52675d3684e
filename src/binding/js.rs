//! Small helpers for talking to JavaScript values from the bindings: clocks,
//! persistent references, guarded callback calls.

use napi::bindgen_prelude::*;

pub use crate::core::clock::{mono_ms, wall_ms, RealClock};

/// A persistent reference to a JavaScript object or function; released with [`release`].
pub type Persistent = ObjectRef<false>;

pub fn persist(value: &Unknown) -> Result<Persistent> {
  let object: Object = unsafe { value.cast() }?;
  object.create_ref::<false>()
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
