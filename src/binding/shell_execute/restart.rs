//! `BackgroundShellRegistry.restart()` (API.md §6.8): the running shell is stopped as a cancel
//! stops it (its end says `restarted`); once its run settled, a new run of the same command and
//! options starts under the same id, writing on in the same output file after a marker line,
//! its counters going on from the old run's. What a shell keeps for it, and when a restart is
//! refused, is the core's `restart::RestartBook` (`ShellInner::restarts`); the caller's `signal`
//! and the promise `restart()` returns are the registry's side's (`lib/side.js`).

use super::*;
use crate::binding::wait::signal_aborted;
use crate::core::restart::{Begin, Refusal};

impl BackgroundShellRegistry {
  /// `restart(id)` (API.md §6.8, `registry_surface!`): a running shell is stopped as a cancel
  /// stops it; once its run settled, a new run of the same options starts under its id,
  /// writing on in its output file. Resolves with the new run's handle.
  pub(crate) fn restart_shell(&self, env: &Env, id: String) -> Result<Unknown<'static>> {
    let inner = &self.inner;
    {
      let book = inner.restarts.borrow();
      book
        .options(&id, inner.entry(&id).is_some())
        .map_err(Error::from_reason)?;
    }
    let signal = inner.side.signal(env, &id);
    if signal.is_some_and(|signal| signal_aborted(&signal)) {
      let refusal = inner.restarts.borrow().refuse(&id, Refusal::SignalAborted);
      return Err(Error::from_reason(refusal));
    }
    let promise = inner.side.begin_restart(env, &id)?;
    let begun = inner.restarts.borrow_mut().begin(&id, ());
    match begun {
      // The last run already ended: the new one starts now.
      Begin::Now((), counters) => go_on(env, inner, &id, Ok(counters)),
      Begin::Waiting => inner.transition(env, |r| r.request_restart(&id)),
      Begin::Gone((), refusal) => go_on(env, inner, &id, Err(refusal)),
    }
    Ok(args::out(env, &promise))
  }
}
