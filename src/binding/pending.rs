//! Pending JavaScript operations: promises whose `resolve` Rust keeps, the
//! timer that holds Node's event loop while they are pending, and `abort`
//! listeners on an `AbortSignal`. Shared by `executeBackground`'s `done`,
//! `waitFor` and keep-alive monitors.

use std::cell::RefCell;
use std::rc::Rc;

use napi::bindgen_prelude::*;

use super::js::{self, persist, release, Persistent};

/// `new Promise(executor)`, keeping its `resolve`. A pending promise alone
/// does not keep Node alive; [`KeepAlive`] does that while the shell runs.
pub(crate) fn new_promise<'a>(env: &'a Env) -> Result<(Object<'a>, Persistent)> {
  let (promise, resolve, reject) = new_promise_with_reject(env)?;
  release(env, reject);
  Ok((promise, resolve))
}

/// [`new_promise`], with its `reject` as well.
pub(crate) fn new_promise_with_reject<'a>(
  env: &'a Env,
) -> Result<(Object<'a>, Persistent, Persistent)> {
  type Slot = Rc<RefCell<Option<(Persistent, Persistent)>>>;
  let slot: Slot = Rc::default();
  let executor = {
    let slot = Rc::clone(&slot);
    env.create_function_from_closure::<(), (), _>("taskstreamDoneExecutor", move |ctx| {
      let resolve: Unknown = ctx.get(0)?;
      let reject: Unknown = ctx.get(1)?;
      *slot.borrow_mut() = Some((persist(&resolve)?, persist(&reject)?));
      Ok(())
    })?
  };
  let constructor: Function<Function<(), ()>, Unknown> =
    env.get_global()?.get_named_property("Promise")?;
  let promise = constructor.new_instance(executor)?;
  let (resolve, reject) = slot
    .borrow_mut()
    .take()
    .ok_or_else(|| Error::from_reason("Promise executor did not run"))?;
  Ok((unsafe { promise.cast() }?, resolve, reject))
}

/// A new `AbortController` (the global one, so a stubbed or throwing constructor is the
/// caller's error, before anything starts).
pub(crate) fn new_abort_controller<'a>(env: &'a Env) -> Result<Object<'a>> {
  let constructor: Function<(), Unknown> =
    env.get_global()?.get_named_property("AbortController")?;
  let controller = constructor.new_instance(())?;
  unsafe { controller.cast() }
}

/// Adds a once-only `abort` listener and returns it (to remove it later).
pub(crate) fn on_abort(
  env: &Env,
  signal: &Object,
  action: impl Fn(&Env) + 'static,
) -> Result<Persistent> {
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
    .call(FnArgs::from(("abort", listener, once)))?;
  let listener: Object = unsafe { Object::from_napi_value(env.raw(), listener.raw()) }?;
  listener.create_ref::<false>()
}

/// What keeps Node alive while a shell runs: a timer, like a `ChildProcess`
/// handle with open pipes. `unref()` and `ref()` on the handle toggle it.
#[derive(Clone)]
pub(crate) struct KeepAlive(Rc<RefCell<Option<Persistent>>>);

/// Longest timer delay Node accepts (about 24.8 days): the timer never fires in practice.
const KEEP_ALIVE_MS: f64 = 2_147_483_647.0;

impl KeepAlive {
  pub(crate) fn start(env: &Env) -> Result<Self> {
    let set_interval: Function<FnArgs<(Function<(), ()>, f64)>, Unknown> =
      env.get_global()?.get_named_property("setInterval")?;
    let noop = env.create_function_from_closure::<(), (), _>("taskstreamKeepAlive", |_| Ok(()))?;
    let timer = set_interval.call(FnArgs::from((noop, KEEP_ALIVE_MS)))?;
    Ok(Self(Rc::new(RefCell::new(Some(persist(&timer)?)))))
  }

  /// A handle method calling `timer.<name>()` while the shell runs.
  pub(crate) fn method<'a>(
    &self,
    env: &'a Env,
    name: &'static str,
  ) -> Result<Function<'a, (), ()>> {
    let timer = Rc::clone(&self.0);
    env.create_function_from_closure::<(), (), _>(name, move |ctx| {
      if let Some(timer) = timer.borrow().as_ref() {
        js::call_method_guarded(ctx.env, timer, name);
      }
      Ok(())
    })
  }

  /// `timer.unref()`: Node may exit while the shell runs.
  pub(crate) fn unref(&self, env: &Env) {
    if let Some(timer) = self.0.borrow().as_ref() {
      js::call_method_guarded(env, timer, "unref");
    }
  }

  pub(crate) fn stop(&self, env: &Env) {
    let Some(timer) = self.0.borrow_mut().take() else {
      return;
    };
    let result = (|| -> Result<()> {
      let clear: Function<Object, Unknown> =
        env.get_global()?.get_named_property("clearInterval")?;
      clear.call(timer.get_value(env)?)?;
      Ok(())
    })();
    if let Err(error) = result {
      tracing::warn!(%error, "taskstream: could not clear a background shell's keep-alive timer");
    }
    release(env, timer);
  }
}

pub(crate) fn remove_abort_listener(env: &Env, signal: &Persistent, listener: &Persistent) {
  let result = (|| -> Result<()> {
    let signal = signal.get_value(env)?;
    let remove: Function<FnArgs<(&str, Object)>, Unknown> =
      signal.get_named_property("removeEventListener")?;
    remove
      .bind(signal)?
      .call(FnArgs::from(("abort", listener.get_value(env)?)))?;
    Ok(())
  })();
  if let Err(error) = result {
    tracing::debug!(%error, "taskstream: could not remove an abort listener");
  }
}
