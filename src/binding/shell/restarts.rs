//! What `BackgroundShellRegistry.restart()` (API.md §6.8) needs of each shell
//! `executeBackground()` started (not persisted), kept until its entry leaves the registry: the
//! call's options, the caller's `signal`, the counters the last run ended with, and a restart
//! waiting for that run to settle.

use std::cell::{Ref, RefCell, RefMut};
use std::collections::HashMap;

use napi::bindgen_prelude::*;

use crate::binding::js::{release, Persistent};
use crate::binding::shell_execute::options::Options;
use crate::core::shell::OutputCounters;

/// How a restart waiting for the old run learns that it settled (its counters), or that the
/// entry left the registry first (why it cannot go on).
pub(crate) type Waiting = Box<dyn FnOnce(&Env, std::result::Result<OutputCounters, String>)>;

/// One shell's restart needs.
pub(crate) struct RestartSpec {
  /// The call's options, its shell id filled in.
  pub(crate) opts: Options,
  /// The caller's `signal`: the new run is cancelled by it too.
  pub(crate) signal: Option<Persistent>,
  /// The counters the last run ended with, once it settled.
  pub(crate) settled: Option<OutputCounters>,
  /// A restart waiting for the last run to settle.
  pub(crate) waiting: Option<Waiting>,
}

impl RestartSpec {
  pub(crate) fn release(self, env: &Env) {
    if let Some(signal) = self.signal {
      release(env, signal);
    }
    if let Some(waiting) = self.waiting {
      waiting(env, Err("it left the registry before its run ended".into()));
    }
  }
}

/// The restart needs of a registry's shells, by id.
#[derive(Default)]
pub(crate) struct Restarts(RefCell<HashMap<String, RestartSpec>>);

impl Restarts {
  pub(crate) fn borrow(&self) -> Ref<'_, HashMap<String, RestartSpec>> {
    self.0.borrow()
  }

  pub(crate) fn borrow_mut(&self) -> RefMut<'_, HashMap<String, RestartSpec>> {
    self.0.borrow_mut()
  }

  /// Keeps what a later `restart(id)` needs (replacing what an earlier run of `id` left).
  pub(crate) fn keep(&self, env: &Env, opts: &Options, id: &str, signal: Option<&Persistent>) {
    let signal = signal
      .and_then(|signal| signal.get_value(env).ok())
      .and_then(|signal| signal.create_ref::<false>().ok());
    let mut opts = opts.clone();
    opts.shell_id = Some(id.to_owned());
    let spec = RestartSpec {
      opts,
      signal,
      settled: None,
      waiting: None,
    };
    let earlier = self.0.borrow_mut().insert(id.to_owned(), spec);
    if let Some(earlier) = earlier {
      earlier.release(env);
    }
  }

  /// The run of shell `id` settled with `counters`: a restart waiting for it goes on.
  pub(crate) fn run_settled(&self, env: &Env, id: &str, counters: &OutputCounters) {
    let waiting = {
      let mut restarts = self.0.borrow_mut();
      let Some(spec) = restarts.get_mut(id) else {
        return;
      };
      spec.settled = Some(counters.clone());
      spec.waiting.take()
    };
    if let Some(waiting) = waiting {
      waiting(env, Ok(counters.clone()));
    }
  }

  /// These entries left the registry: what their restart needed goes (a restart waiting for
  /// one of them is rejected).
  pub(crate) fn forget(&self, env: &Env, ids: &[String]) {
    let specs: Vec<RestartSpec> = {
      let mut restarts = self.0.borrow_mut();
      ids.iter().filter_map(|id| restarts.remove(id)).collect()
    };
    for spec in specs {
      spec.release(env);
    }
  }
}
