//! `MonitorRegistry.start()`: native monitors (API.md §3, CONTRACT.md §2.10).
//! Options are checked before anything is spawned or registered.

use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::args;
use super::js::{self, RealClock};
use super::monitor::host::write_native_registration;
use super::monitor::MonitorRegistry;
use super::monitor_options::parse_start_options;
use crate::core::launch::{launch, Contained, LaunchError, Launched, MonitorStart, Reading};
use crate::core::monitor::hub::NativeTask;
use crate::core::monitor::plan_monitor;
use crate::core::monitor::signal::config::RECOMMENDED;
use crate::core::monitor::RunCounters;
use crate::core::monitor::{AbortKind, MonitorEntry, Registration};
use crate::core::persist::records::check_task_id;
use crate::core::process::PORTS_SUPPORTED;
use crate::core::restart::Refusal;

/// `RECOMMENDED_SIGNAL` (API.md §6.7): the options of the recommended setting, to spread into
/// `start()`. The loader exports it frozen; the values are the core's
/// (`signal::config::RECOMMENDED`).
#[napi(object, object_from_js = false)]
pub struct RecommendedSignal {
  pub important: String,
  pub batch_ms: u32,
  pub sample_lines: u32,
  pub context_before: u32,
  pub context_after: u32,
  #[napi(ts_type = "'templates'")]
  pub digest: String,
}

/// A fresh copy of the recommended §6.7 setting (`RECOMMENDED_SIGNAL` is a frozen one).
#[napi(catch_unwind)]
pub fn recommended_signal() -> RecommendedSignal {
  let r = RECOMMENDED;
  RecommendedSignal {
    important: r.important.to_owned(),
    batch_ms: r.batch_ms,
    sample_lines: r.sample_lines,
    context_before: r.context_before,
    context_after: r.context_after,
    digest: r.digest.to_owned(),
  }
}

#[napi]
impl MonitorRegistry {
  /// Spawns `bash -c <command>` in its own process group and streams its
  /// output from Rust threads; only accepted events reach JavaScript. Returns
  /// the entry, whose counters stay live. A spawn failure gives a `failed`
  /// entry (and its notification) rather than a throw.
  #[napi(
    catch_unwind,
    ts_args_type = "options: MonitorStartOptions",
    ts_return_type = "MonitorTask"
  )]
  pub fn start(&self, env: Env, options: Unknown) -> Result<Unknown<'static>> {
    let opts = parse_start_options(&env, &options)?;
    let plan = plan_monitor(&opts.command, opts.monitor_id.as_deref())
      .map_err(|refusal| args::type_error(&env, refusal.message().into()))?;
    let id = plan.id;
    self
      .hub
      .registry()
      .check_can_register(&id)
      .map_err(|e| Error::from_reason(e.to_string()))?;
    self.start_native(&env, opts, id, RunCounters::default())
  }
}

impl MonitorRegistry {
  /// `restart(id)` (API.md §6.8, `registry_surface!`): a running monitor is cancelled with the
  /// end `restarted`, its settled entry leaves, and a new run of the same options starts
  /// under its id with the counters the last run ended with.
  pub(crate) fn restart_native(&self, env: &Env, id: String) -> Result<Unknown<'static>> {
    let opts = {
      let registered = self.hub.registry().get(&id).is_some();
      let book = self.js.restarts.borrow();
      book.options(&id, registered).cloned()
    };
    let opts = opts.map_err(Error::from_reason)?;
    let counters = {
      let mut host = self.host(env);
      self.hub.stop_for_restart(&mut host, &RealClock, &id)
    };
    let Some(counters) = counters else {
      let refusal = self.js.restarts.borrow().refuse(&id, Refusal::StillRunning);
      return Err(Error::from_reason(refusal));
    };
    self.start_native(env, (*opts).clone(), id, counters)
  }

  /// `start()` after its checks, and `restart()`: launches (contained, in a terminal, or by a
  /// keeper with `persist`: its state directory checked and its lock taken first, a failure
  /// thrown with nothing started), registers (with the counters a restarted entry carries),
  /// commits; keeps the options of a task that is not persisted for a later `restart()`.
  fn start_native(
    &self,
    env: &Env,
    opts: MonitorStart,
    id: String,
    counters: RunCounters,
  ) -> Result<Unknown<'static>> {
    let restartable = opts.persist.is_none().then(|| Rc::new(opts.clone()));
    let link = match &opts.persist {
      Some(persist) => {
        check_task_id(&id).map_err(|e| {
          let why = format!("The \"options.monitorId\" property cannot name a persisted task: {e}");
          args::value_error(env, why)
        })?;
        Some(super::persist::prepare(persist, &id)?)
      }
      None => None,
    };
    let (now_wall, now_mono) = (js::wall_ms(), js::mono_ms());
    let command = opts.command_as_run();
    let request = opts.request(&id, &command, link, &self.remove_env, now_wall);
    let launched = launch(request).map(Launched::into_monitor);
    if let Some(group) = launched.as_ref().ok().and_then(Contained::group) {
      super::environment_tasks::adopt(group);
    }
    let pid = launched.as_ref().ok().map(Contained::pid);
    let registration = opts.registration(&id, &command, now_wall, pid);
    let reading = opts.reading(self.throttle);
    let object = self.register_native(env, registration, now_mono, opts.keep_alive)?;
    self.hub.apply(|r| {
      r.carry_counters(&id, counters);
      Vec::new()
    });
    if let Some(restartable) = restartable {
      self.js.restarts.borrow_mut().keep(&id, restartable);
    }
    if let Some(timeout_ms) = opts.timeout_ms {
      self.hub.apply(|r| {
        r.set_deadline(&id, timeout_ms, now_mono);
        Vec::new()
      });
      self.hub.poke_idle_watcher();
    }
    self.commit_native(env, &id, now_wall, launched, reading);
    Ok(args::out(env, &object))
  }
}

impl MonitorRegistry {
  /// The entry object, then the registration (its register callbacks run
  /// inside this call). The JavaScript objects come first: if anything fails
  /// before `register`, nothing is registered, and the caller's launched task
  /// is stopped as its guard drops (CONTRACT.md §4 item 21).
  pub(crate) fn register_native<'a>(
    &'a self,
    env: &'a Env,
    registration: Registration,
    now_mono: i64,
    keep_alive: bool,
  ) -> Result<Object<'a>> {
    let id = registration.monitor_id.clone();
    let snapshot = MonitorEntry::from_registration(registration.clone(), now_mono);
    let object = self.create_native_objects(env, &snapshot, keep_alive)?;
    if let Err(error) = self.hub.register(registration, now_mono) {
      self.forget_js_entry(env, &id);
      return Err(Error::from_reason(error.to_string()));
    }
    // Register callbacks (and a launch failure) are caused by this call and
    // run inside it; the reader threads start after, so events arrive once
    // the JavaScript thread is free again.
    self.drain_for(env, &id);
    Ok(object)
  }

  /// Hands a registered entry's launched task to its reader threads (the
  /// commit), or fails the entry with why it could not start.
  pub(crate) fn commit_native(
    &self,
    env: &Env,
    id: &str,
    now_wall: f64,
    launched: std::result::Result<Contained, LaunchError>,
    reading: Reading,
  ) {
    let started = launched.and_then(|task| task.start_monitor(&self.hub, id, reading, RealClock));
    self.started_native(env, id, now_wall, started);
  }

  /// A native task's reader threads started, or the entry fails.
  pub(crate) fn started_native(
    &self,
    env: &Env,
    id: &str,
    now_wall: f64,
    started: std::result::Result<Arc<dyn NativeTask>, LaunchError>,
  ) {
    match started {
      Ok(monitor) => {
        // The callbacks above may already have stopped the task: an
        // `abort()` of its controller (the child is then killed and the
        // entry cancelled once it is gone, as for any abort), or a
        // `cancel()`/`abortAll()`/`reset()` that settled the entry before
        // the process was attached (the child is killed now).
        if self.controller_aborted(env, id) {
          monitor.abort(&self.hub, AbortKind::Flush);
        }
        self.hub.stop_if_settled(id);
      }
      Err(LaunchError { message, end }) => {
        self
          .hub
          .apply(|r| r.fail_with_end(id, &message, end, now_wall));
        self.drain_for(env, id);
      }
    }
  }

  /// The entry object and its AbortController, whose `abort` flushes, kills and (once the child
  /// is gone) cancels the monitor with a notification (`task_aborted`). Its counters, `ports`
  /// and `usage` read the registry live (getters `lib/side.js` defines).
  pub(crate) fn create_native_objects<'a>(
    &'a self,
    env: &'a Env,
    entry: &MonitorEntry,
    keep_alive: bool,
  ) -> Result<Object<'a>> {
    let id = entry.id.as_str();
    let (mut object, release) = super::layer::task_parts(env, keep_alive)?;
    let objects = (|| -> Result<()> {
      let release = release.as_ref().map(|f| f.get_value(env)).transpose()?;
      let release = release.map(|f| f.to_unknown());
      (self.js.side).add(env, id, &object, release, Some(&LIVE_COUNTERS))?;
      write_native_registration(env, &mut object, entry)
    })();
    match objects {
      Ok(()) => {
        if let Some(release) = release {
          js::release(env, release);
        }
        Ok(object)
      }
      Err(error) => {
        // Nothing is registered: the side lets the entry and its keep-alive timer go.
        self.js.side.removed(env, &[id.to_owned()]);
        if let Some(release) = release {
          super::layer::call_once(env, release, "keepAlive", ());
        }
        Err(error)
      }
    }
  }

  /// An abort of a native entry's controller flushes and kills; the supervisor then cancels
  /// the entry with a notification. The controller of a run `restart()` replaced (or of a
  /// removed entry) stops nothing.
  pub(crate) fn abort_native(&self, env: &Env, id: &str, current: bool) {
    if !current {
      return;
    }
    if let Some(native) = self.hub.native(id) {
      native.abort(&self.hub, AbortKind::Flush);
    }
    self.drain_for(env, id);
  }

  /// `entry.ports` of a running native monitor.
  pub(crate) fn native_ports(&self, id: &str) -> Option<Vec<u16>> {
    if !PORTS_SUPPORTED || !self.hub.registry().is_running(id) {
      return None;
    }
    Some(self.hub.native(id)?.listening_ports())
  }
}

/// A native entry's counters, live between notifications: enumerable getters (so they still
/// show in `Object.keys` and `JSON.stringify`) reading `__counters`, in this order.
const LIVE_COUNTERS: [&str; 5] = [
  "eventCount",
  "droppedLines",
  "bytesRead",
  "linesSeen",
  "truncatedBytes",
];
