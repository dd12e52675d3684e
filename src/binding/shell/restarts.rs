//! What `BackgroundShellRegistry.restart()` (API.md §6.8) keeps of each shell
//! `executeBackground()` started (not persisted), until its entry leaves the registry. The rules
//! are the core's `restart::RestartBook`; what it carries here are the JavaScript values: the
//! call's options with the caller's `signal`, and a restart waiting for the old run.

use std::cell::RefCell;

use napi::bindgen_prelude::*;

use crate::binding::js::{release, Persistent};
use crate::core::launch::ShellStart as StartOptions;
use crate::core::restart::{Forgotten, RestartBook, SHELL};
use crate::core::shell::OutputCounters;

/// How a restart waiting for the old run learns that it settled (its counters), or the error
/// message when it cannot go on.
pub(crate) type Waiting = Box<dyn FnOnce(&Env, std::result::Result<OutputCounters, String>)>;

/// A shell's start, to start again: its options (its shell id filled in) and the caller's
/// `signal`, which cancels the new run too.
pub(crate) struct ShellStart {
  pub(crate) opts: StartOptions,
  pub(crate) signal: Option<Persistent>,
}

/// The restartable shells of a registry.
pub(crate) struct Restarts(pub(crate) RefCell<RestartBook<ShellStart, OutputCounters, Waiting>>);

impl Default for Restarts {
  fn default() -> Self {
    Self(RefCell::new(RestartBook::new(SHELL)))
  }
}

impl Restarts {
  /// Keeps what a later `restart(id)` needs (what an earlier run of `id` left goes).
  pub(crate) fn keep(&self, env: &Env, opts: &StartOptions, id: &str, signal: Option<&Object>) {
    let signal = signal.and_then(|signal| signal.create_ref::<false>().ok());
    let mut opts = opts.clone();
    opts.shell_id = Some(id.to_owned());
    let earlier = self.0.borrow_mut().keep(id, ShellStart { opts, signal });
    if let Some(earlier) = earlier {
      let_go(env, earlier);
    }
  }

  /// The run of shell `id` settled with `counters`: a restart waiting for it goes on.
  pub(crate) fn run_settled(&self, env: &Env, id: &str, counters: &OutputCounters) {
    let waiting = self.0.borrow_mut().run_settled(id, counters);
    if let Some((go_on, counters)) = waiting {
      go_on(env, Ok(counters));
    }
  }

  /// These entries left the registry: what they kept goes (a restart waiting for one of them
  /// is refused).
  pub(crate) fn forget(&self, env: &Env, ids: &[String]) {
    let gone = self.0.borrow_mut().forget(ids);
    for forgotten in gone {
      let_go(env, forgotten);
    }
  }
}

/// Releases a kept start's signal, and refuses a restart that waited for it.
fn let_go(env: &Env, forgotten: Forgotten<ShellStart, Waiting>) {
  if let Some(signal) = forgotten.options.signal {
    release(env, signal);
  }
  if let Some(waiting) = forgotten.waiting {
    waiting(env, Err(forgotten.refusal));
  }
}
