//! The monitor registry's JavaScript-thread state: each entry's objects, the callbacks, the
//! pending waits' promises and the registry's anchor. No borrow is held across a call into
//! JavaScript.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use napi::bindgen_prelude::*;

use crate::binding::anchor::Anchor;
use crate::binding::js::Persistent;
use crate::binding::monitor_options::StartOptions;
use crate::binding::registry::{EntryObjects, TaskCallbacks};
use crate::binding::wait::JsWaits;
use crate::core::monitor::hub::MonitorHub;
use crate::core::restart::{RestartBook, MONITOR};

/// A monitor's JavaScript objects.
pub(super) struct JsEntry {
  pub(super) objects: EntryObjects,
  /// See [`JsSide::next_generation`].
  pub(super) generation: u64,
  /// A fed entry's idle timer: the value `setTimeout` returned.
  pub(super) idle_timer: Option<Persistent>,
  /// `keepAlive: true` (API.md §6.6): the JavaScript layer's function that lets go the timer
  /// that holds Node's event loop while the monitor runs.
  pub(super) keep_alive: Option<Persistent>,
}

#[derive(Default)]
pub(super) struct Callbacks {
  /// The notification (entries without an owner), register and status-change callbacks.
  pub(super) task: TaskCallbacks,
  pub(super) agent_notification: HashMap<String, Persistent>,
  pub(super) agent_lifecycle: HashMap<String, Persistent>,
}

/// State that only the JavaScript thread touches. No borrow is held across a
/// call into JavaScript.
pub(crate) struct JsSide {
  pub(super) entries: RefCell<HashMap<String, JsEntry>>,
  /// The options of each entry `start()` began (not persisted), for `restart()` (API.md §6.8).
  pub(crate) restarts: RefCell<RestartBook<Rc<StartOptions>, (), ()>>,
  /// Numbers each entry object made, so a listener of a restarted run's controller knows its
  /// id belongs to a newer run.
  pub(super) generations: std::cell::Cell<u64>,
  pub(super) callbacks: RefCell<Callbacks>,
  pub(super) waits: JsWaits,
  /// Keeps the registry's object reachable while it has work (set once, by the constructor).
  pub(super) anchor: OnceCell<Anchor>,
}

impl Default for JsSide {
  fn default() -> Self {
    Self {
      entries: RefCell::default(),
      restarts: RefCell::new(RestartBook::new(MONITOR)),
      generations: std::cell::Cell::default(),
      callbacks: RefCell::default(),
      waits: JsWaits::default(),
      anchor: OnceCell::new(),
    }
  }
}

impl JsSide {
  /// A number for the next entry object.
  pub(crate) fn next_generation(&self) -> u64 {
    let next = self.generations.get() + 1;
    self.generations.set(next);
    next
  }

  /// The generation of the entry object `id` names now.
  pub(crate) fn generation_of(&self, id: &str) -> Option<u64> {
    self.entries.borrow().get(id).map(|e| e.generation)
  }

  /// Holds the registry's object while a task runs (fed or native), a wait
  /// is pending or a notification is queued; lets it go once all settled.
  pub(crate) fn hold_while_busy(&self, env: &Env, hub: &MonitorHub) {
    let Some(anchor) = self.anchor.get() else {
      return;
    };
    let busy = self.waits.has_pending() || hub.has_pending() || hub.registry().running_count() > 0;
    anchor.hold(env, busy);
  }
}
