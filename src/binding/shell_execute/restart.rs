//! `BackgroundShellRegistry.restart()` (API.md §6.8): the running shell is stopped as a cancel
//! stops it (its end says `restarted`); once its run settled, a new run of the same command and
//! options starts under the same id, writing on in the same output file after a marker line,
//! its counters going on from the old run's.

use super::*;
use crate::binding::shell::restarts::Waiting;
use crate::binding::wait::signal_aborted;
use crate::core::restart::{Begin, Refusal};
use crate::core::shell::{OutputCounters, Resume};

impl BackgroundShellRegistry {
  /// `restart(id)` (API.md §6.8, `registry_surface!`): a running shell is stopped as a cancel
  /// stops it; once its run settled, a new run of the same options starts under its id,
  /// writing on in its output file. Resolves with the new run's handle.
  pub(crate) fn restart_shell(&self, env: &Env, id: String) -> Result<Unknown<'static>> {
    let inner = Rc::clone(&self.inner);
    let signal = {
      let book = inner.restarts.0.borrow();
      let start = book.options(&id, inner.entry(&id).is_some());
      let start = start.map_err(Error::from_reason)?;
      start.signal.as_ref().and_then(|s| s.get_value(env).ok())
    };
    if signal.is_some_and(|signal| signal_aborted(&signal)) {
      let refusal = inner
        .restarts
        .0
        .borrow()
        .refuse(&id, Refusal::SignalAborted);
      return Err(Error::from_reason(refusal));
    }
    let (promise, resolve, reject) = crate::binding::layer::deferred(env)?;
    let go_on: Waiting = {
      let (inner, id) = (Rc::clone(&inner), id.clone());
      Box::new(move |env, counters| {
        let started = counters
          .map_err(Error::from_reason)
          .and_then(|counters| start_again(env, &inner, &id, counters));
        settle_promise(env, resolve, reject, started);
      })
    };
    let begun = inner.restarts.0.borrow_mut().begin(&id, go_on);
    match begun {
      // The last run already ended: the new one starts now.
      Begin::Now(go_on, counters) => go_on(env, Ok(counters)),
      Begin::Waiting => inner.transition(env, |r| r.request_restart(&id)),
      Begin::Gone(go_on, refusal) => go_on(env, Err(refusal)),
    }
    Ok(args::out(env, &promise))
  }
}

/// The old run settled with `counters`: its ended entry leaves the registry and the new run
/// starts under its id. Returns the new handle.
fn start_again<'a>(
  env: &'a Env,
  inner: &Rc<ShellInner>,
  id: &str,
  counters: OutputCounters,
) -> Result<Object<'a>> {
  let start = inner.restarts.0.borrow_mut().take(id);
  let start = start.map_err(Error::from_reason)?;
  inner.transition(env, |r| r.remove_ended(id).unwrap_or_default());
  let signal = start.signal.as_ref().and_then(|s| s.get_value(env).ok());
  let resume = Resume::at(counters, js::wall_ms());
  let started = start_shell(env, inner, start.opts.clone(), signal, Some(resume));
  if let Some(signal) = start.signal {
    release(env, signal);
  }
  started
}

/// Resolves the restart's promise with the new handle, or rejects it with the error.
fn settle_promise(env: &Env, resolve: Persistent, reject: Persistent, started: Result<Object>) {
  let (settle, value) = match started {
    Ok(handle) => (&resolve, Ok(handle)),
    Err(error) => (&reject, env.create_error(error)),
  };
  match value {
    Ok(value) => {
      if let Ok(settle) = settle.get_value(env) {
        js::call_value(env, settle, "restart", value);
      }
    }
    Err(error) => tracing::warn!(%error, "taskstream: could not settle a shell restart's promise"),
  }
  release(env, resolve);
  release(env, reject);
}
