//! What keeps a registry's JavaScript object reachable while it has work.
//!
//! A registry that nothing in JavaScript references any more would be
//! garbage-collected, and its tasks with it. A Node `ChildProcess` with
//! listeners stays alive while it runs, and so does the TypeScript registry
//! holding one, so ours must too: while a task runs, a wait is pending or a
//! notification is still to be delivered, the registry holds a strong
//! reference to its own object. Once everything has settled the reference is
//! weak again and the registry can be collected (no leak).

use std::cell::Cell;
use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;

/// A reference from the native side to the registry's own object: weak while
/// the registry is idle, strong while it is busy.
pub(crate) struct Anchor {
  env: sys::napi_env,
  reference: sys::napi_ref,
  strong: Cell<bool>,
}

impl Anchor {
  /// A weak reference to `this` (the object being constructed).
  pub(crate) fn new(env: &Env, this: &Unknown) -> Result<Self> {
    let mut reference = ptr::null_mut();
    // SAFETY: `this` is a live object of `env`; a count of 0 makes the reference weak.
    check_status!(
      unsafe { sys::napi_create_reference(env.raw(), this.raw(), 0, &mut reference) },
      "could not create the registry's self-reference"
    )?;
    Ok(Self {
      env: env.raw(),
      reference,
      strong: Cell::new(false),
    })
  }

  /// Holds the object while `busy`, lets it go otherwise. Called on the
  /// JavaScript thread after anything that may change whether the registry
  /// has work.
  pub(crate) fn hold(&self, env: &Env, busy: bool) {
    if busy == self.strong.get() {
      return;
    }
    let mut count = 0;
    // SAFETY: the reference belongs to `env` (the registry's own environment)
    // and lives until `drop`.
    let status = unsafe {
      if busy {
        sys::napi_reference_ref(env.raw(), self.reference, &mut count)
      } else {
        sys::napi_reference_unref(env.raw(), self.reference, &mut count)
      }
    };
    if status == sys::Status::napi_ok {
      self.strong.set(busy);
    } else {
      tracing::warn!(
        status,
        busy,
        "taskstream: could not change a registry's self-reference"
      );
    }
  }

  /// The object referred to, while it lives.
  pub(crate) fn value<'a>(&self, env: &'a Env) -> Option<Object<'a>> {
    let mut value = ptr::null_mut();
    // SAFETY: the reference belongs to `env` and lives until `drop`.
    let status = unsafe { sys::napi_get_reference_value(env.raw(), self.reference, &mut value) };
    (status == sys::Status::napi_ok && !value.is_null()).then(|| Object::from_raw(env.raw(), value))
  }

  /// Whether the registry currently holds itself (for tests and debugging).
  #[allow(dead_code)]
  pub(crate) fn is_held(&self) -> bool {
    self.strong.get()
  }
}

impl Drop for Anchor {
  /// Runs when the registry is finalized (so the reference is weak by then)
  /// or its environment is torn down.
  fn drop(&mut self) {
    // SAFETY: called once, on the registry's thread, while its environment exists.
    unsafe { sys::napi_delete_reference(self.env, self.reference) };
  }
}
