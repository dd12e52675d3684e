//! `yieldMs` (API.md §6.8): one call for "run this, and background it if it takes long".

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use napi::bindgen_prelude::*;

use crate::binding::js::{self, release};
use crate::binding::pending::new_promise;
use crate::binding::registry::set_unref_timeout;
use crate::core::text::{read_task_output_tail, OutputTail, MAX_TASK_OUTPUT_TAIL_BYTES};

/// `yieldMs` (API.md §6.8): a promise of the handle, resolved when `done` settles (the handle
/// then has `foreground: true` and `outputTail`, the cleaned tail of its output file, and
/// `done` is settled) or `ms` after the call (`foreground: false`: a background shell as
/// without the option), whichever comes first.
pub(super) fn yield_handle<'a>(
  env: &'a Env,
  handle: &Object,
  ms: u64,
  output_path: String,
) -> Result<Object<'a>> {
  let (promise, resolve) = new_promise(env)?;
  let pending = Rc::new(RefCell::new(Some((resolve, handle.create_ref::<false>()?))));
  let finish = Rc::new(move |env: &Env, foreground: bool| -> Result<()> {
    let Some((resolve, handle_ref)) = pending.borrow_mut().take() else {
      return Ok(());
    };
    let mut handle = handle_ref.get_value(env)?;
    handle.set_named_property("foreground", foreground)?;
    if foreground {
      let tail = match read_task_output_tail(Path::new(&output_path), MAX_TASK_OUTPUT_TAIL_BYTES) {
        OutputTail::Text { text, .. } => text,
        OutputTail::Empty | OutputTail::Error(_) => String::new(),
      };
      handle.set_named_property("outputTail", tail)?;
    }
    let resolve_fn = resolve.get_value(env)?;
    js::call_value(env, resolve_fn, "yieldMs", handle);
    release(env, resolve);
    release(env, handle_ref);
    Ok(())
  });
  let done: Object = handle.get_named_property("done")?;
  let then: Function<Function<(), ()>, Unknown> = done.get_named_property("then")?;
  let on_settled = {
    let finish = Rc::clone(&finish);
    env.create_function_from_closure::<(), (), _>("taskstreamYieldSettled", move |ctx| {
      finish(ctx.env, true)
    })?
  };
  then.bind(done)?.call(on_settled)?;
  set_unref_timeout(env, "taskstreamYieldTimer", ms, move |env| {
    if let Err(error) = finish(env, false) {
      tracing::warn!(%error, "taskstream: yieldMs could not resolve its handle");
    }
  })?;
  Ok(promise)
}
