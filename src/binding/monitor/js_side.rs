//! The monitor registry's JavaScript-thread state: its side (`lib/side.js`: entry objects,
//! timers, callbacks, pending waits), what `restart()` keeps, and the registry's anchor. No borrow is held across a call into JavaScript.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use napi::bindgen_prelude::*;

use crate::binding::anchor::Anchor;
use crate::binding::side::Side;
use crate::core::launch::MonitorStart;
use crate::core::monitor::hub::MonitorHub;
use crate::core::restart::{RestartBook, MONITOR};

/// State that only the JavaScript thread touches.
pub(crate) struct JsSide {
  pub(crate) side: Side,
  /// The options of each entry `start()` began (not persisted), for `restart()` (API.md §6.8).
  pub(crate) restarts: RefCell<RestartBook<Rc<MonitorStart>, (), ()>>,
  /// Keeps the registry's object reachable while it has work (set once, by the constructor).
  pub(super) anchor: OnceCell<Anchor>,
}

impl JsSide {
  pub(super) fn new(side: Side) -> Self {
    Self {
      side,
      restarts: RefCell::new(RestartBook::new(MONITOR)),
      anchor: OnceCell::new(),
    }
  }

  /// Holds the registry's object while a task runs (fed or native), a wait
  /// is pending or a notification is queued; lets it go once all settled.
  pub(crate) fn hold_while_busy(&self, env: &Env, hub: &MonitorHub) {
    let Some(anchor) = self.anchor.get() else {
      return;
    };
    let busy = hub.has_pending() || hub.registry().running_count() > 0 || self.side.has_waits(env);
    anchor.hold(env, busy);
  }
}
