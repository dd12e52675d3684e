//! The JavaScript layer's side of a task (`lib/surface.js`, ARCHITECTURE.md "The JavaScript
//! layer"): the functions that make the JavaScript objects each run needs, which the layer hands
//! over once when it is installed (`__installLayer`), and the calls into them.

use std::cell::RefCell;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::js::{self, release, Persistent};

thread_local! {
  /// The layer's object of functions (`shellParts`, `taskParts`, `side`), given once at load.
  static LAYER: RefCell<Option<Persistent>> = const { RefCell::new(None) };
}

/// Takes the JavaScript layer's functions (see the module).
#[napi(catch_unwind, js_name = "__installLayer", skip_typescript)]
pub fn install_layer(env: Env, layer: Unknown) -> Result<()> {
  let layer = js::persist(&layer)?;
  if let Some(earlier) = LAYER.with(|slot| slot.borrow_mut().replace(layer)) {
    release(&env, earlier);
  }
  Ok(())
}

/// Calls the layer's `name(arg)`, which returns an object of parts.
fn call<'a, A: JsValuesTupleIntoVec>(env: &'a Env, name: &str, arg: A) -> Result<Object<'a>> {
  let layer = LAYER.with(|slot| slot.borrow().as_ref().map(|layer| layer.get_value(env)));
  let layer = layer.ok_or_else(|| {
    Error::from_reason("taskstream: the JavaScript layer (lib/surface.js) is not installed")
  })??;
  let make: Function<A, Object> = layer.get_named_property(name)?;
  make.call(arg)
}

/// The JavaScript side of a shell run: the entry (with its `abortController`), the handle (with
/// `done`, `ref()`, `unref()`), and `settled`, which the run calls once.
pub(crate) struct ShellParts<'a> {
  pub(crate) entry: Object<'a>,
  pub(crate) handle: Object<'a>,
  pub(crate) settled: Persistent,
}

/// `shellParts(signal)`: `signal` is the caller's, whose abort aborts the entry's controller.
pub(crate) fn shell_parts<'a>(env: &'a Env, signal: Option<&Object>) -> Result<ShellParts<'a>> {
  let signal = match signal {
    Some(signal) => signal.to_unknown(),
    None => super::args::undefined(env)?,
  };
  let parts = call(env, "shellParts", signal)?;
  Ok(ShellParts {
    entry: parts.get_named_property("entry")?,
    handle: parts.get_named_property("handle")?,
    settled: js::persist(&parts.get_named_property::<Unknown>("settled")?)?,
  })
}

/// The JavaScript side of a native monitor or a recovered shell: the entry (with its
/// `abortController`) and, with `keep_alive`, the function that lets its keep-alive timer go.
pub(crate) fn task_parts<'a>(
  env: &'a Env,
  keep_alive: bool,
) -> Result<(Object<'a>, Option<Persistent>)> {
  let parts = call(env, "taskParts", keep_alive)?;
  let release = parts.get_named_property::<Unknown>("release")?;
  let release = match release.get_type()? {
    ValueType::Function => Some(js::persist(&release)?),
    _ => None,
  };
  Ok((parts.get_named_property("entry")?, release))
}

/// `side(registry)`: the JavaScript side of a registry being constructed (`lib/side.js`), which
/// the layer also keeps on the registry object for the callback setters.
pub(crate) fn side<'a>(env: &'a Env, registry: &Unknown) -> Result<Object<'a>> {
  call(env, "side", *registry)
}

/// Calls a part's function we hold, with `arg` (`()` for none), and lets it go.
pub(crate) fn call_once<Args: JsValuesTupleIntoVec>(
  env: &Env,
  function: Persistent,
  what: &str,
  arg: Args,
) {
  if let Ok(f) = function.get_value(env) {
    js::call_value(env, f, what, arg);
  }
  release(env, function);
}
