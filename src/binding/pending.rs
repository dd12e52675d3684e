//! Pending JavaScript operations made from Rust: a promise whose `resolve` and `reject` Rust
//! keeps (a shell's `restart()`), new `AbortController`s and `abort` listeners (both kinds),
//! and the timer that holds Node's event loop while a `keepAlive` monitor runs. A shell's
//! `done`, its timer and its caller's signal, and `waitFor`'s promise, are the JavaScript
//! layer's (`lib/surface.js`).

use std::cell::RefCell;
use std::rc::Rc;

use napi::bindgen_prelude::*;

use super::js::{persist, release, Persistent};

/// `new Promise(executor)`, keeping its `resolve` and `reject`. A pending promise alone does
/// not keep Node alive.
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

/// What keeps Node alive while a `keepAlive` monitor runs: a timer, like a `ChildProcess`
/// handle with open pipes.
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
