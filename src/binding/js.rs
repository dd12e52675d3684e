//! Small helpers for talking to JavaScript values from the bindings: clocks,
//! persistent references, guarded callback calls.

use std::sync::LazyLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use napi::bindgen_prelude::*;

use crate::core::monitor::hub::Clock;

static MONO_BASE: LazyLock<Instant> = LazyLock::new(Instant::now);

/// `Date.now()`: integral milliseconds since the epoch.
pub fn wall_ms() -> f64 {
  SystemTime::now()
    .duration_since(UNIX_EPOCH)
    .map(|d| d.as_millis() as f64)
    .unwrap_or(0.0)
}

/// Monotonic milliseconds since the addon was loaded.
pub fn mono_ms() -> i64 {
  MONO_BASE.elapsed().as_millis() as i64
}

/// The real clocks.
pub struct RealClock;

impl Clock for RealClock {
  fn wall_ms(&self) -> f64 {
    wall_ms()
  }
  fn mono_ms(&self) -> i64 {
    mono_ms()
  }
}

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
