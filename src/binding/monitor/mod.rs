//! `MonitorRegistry` (API.md §3): the binding of `core::monitor`'s hub.
//!
//! JavaScript-thread state (entry objects, controllers, timers, callbacks) lives in the
//! registry's side (`lib/side.js`, reached through [`JsSide`]); registry state lives in the hub.
//! Every method first queues its transition in the hub, then drains the hub's outbox through
//! [`HostWithHub`], so
//! callbacks run synchronously inside the call and after any effect a native
//! thread queued earlier. Native threads wake the JavaScript thread through a
//! weak threadsafe function, which never keeps Node alive.

use std::rc::Rc;
use std::sync::{Arc, Weak};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;

use super::anchor::Anchor;
use super::args::{self, Bag};
use super::js::{self, RealClock};
use super::registry::{entries_array, registry_surface, resolve_wait, RegistrySurface};
use super::side::Side;
use crate::core::end::EndVia;
use crate::core::monitor::hub::{MonitorHost, MonitorHub};
use crate::core::monitor::throttle::ThrottleConfig;
use crate::core::monitor::{AbortKind, EntryMode, Registration, RegistryConfig};
use crate::core::task::TaskStatus;
use crate::core::wait::{WaitOutcome, WaitReason, WaitSpec};

/// Items one wake-up of the JavaScript thread delivers before yielding to the event loop.
const DRAIN_BUDGET: usize = 256;

pub(crate) mod host;
pub(crate) mod js_side;

pub(crate) use host::HostWithHub;
pub(crate) use js_side::JsSide;

/// A registry that is garbage-collected takes its running native tasks along
/// (their trees are terminated); fed entries have no process of ours.
impl Drop for MonitorRegistry {
  fn drop(&mut self) {
    for native in self.hub.natives() {
      if !native.is_persisted() {
        native.abort(&self.hub, AbortKind::Discard);
      }
    }
  }
}

/// The monitor registry: a drop-in for the TypeScript `MonitorRegistry`
/// (`register` + `emitEvent`/`complete`/`fail`/`cancel`, fed from JavaScript),
/// which can also spawn and stream commands itself (`start`).
#[napi]
pub struct MonitorRegistry {
  pub(crate) hub: Arc<MonitorHub>,
  pub(crate) js: Rc<JsSide>,
  pub(crate) throttle: Option<ThrottleConfig>,
  pub(crate) remove_env: Vec<String>,
}

/// `options.notify` of the cancels: `true` unless `false` is given.
fn parse_cancel_notify(env: &Env, options: &Unknown) -> Result<bool> {
  let Some(options) = args::optional_object(env, options, "options")? else {
    return Ok(true);
  };
  Ok(
    Bag::new(env, &options, "options")
      .opt_bool("notify")?
      .unwrap_or(true),
  )
}

impl RegistrySurface for MonitorRegistry {
  fn entry_ids(&self) -> Vec<String> {
    self.hub.registry().ids()
  }

  fn synced_entry<'a>(&'a self, env: &'a Env, id: &str) -> Option<Object<'a>> {
    self.host(env).synced(id)
  }

  fn register_object(&self, env: &Env, object: &Object) -> Result<()> {
    let reg = read_registration(env, object)?;
    let id = reg.monitor_id.clone();
    // Checks first, so nothing changes when register refuses.
    self
      .hub
      .registry()
      .check_can_register(&id)
      .map_err(|e| Error::from_reason(e.to_string()))?;
    let mut object = *object;
    object.set_named_property("id", id.as_str())?;
    object.set_named_property("kind", "monitor")?;
    object.set_named_property("outputOffset", 0)?;
    object.set_named_property("notified", false)?;
    self.js.side.add(env, &id, &object, None, None)?;
    let idle_timeout_ms = reg.idle_timeout_ms;
    if let Err(error) = self.hub.register(reg, js::mono_ms()) {
      self.forget_js_entry(env, &id);
      return Err(Error::from_reason(error.to_string()));
    }
    self.js.side.arm_idle(env, &id, idle_timeout_ms);
    self.drain_for(env, &id);
    Ok(())
  }

  fn wait_target(&self, id: &str) -> Option<(TaskStatus, bool)> {
    self.hub.registry().get(id).map(|e| (e.status, false))
  }

  fn side(&self) -> &Side {
    &self.js.side
  }

  fn abort_wait(&self, env: &Env, id: &str, wait: u64) {
    self.hub.abort_wait(id, wait, js::mono_ms());
    let mut host = HostWithHub::new(env, &self.js, &self.hub);
    self.hub.drain_for(&mut host, id);
  }

  /// A wait on an entry the hub no longer follows ends as `exit`, `cancelled`.
  fn restart_task(&self, env: &Env, id: String) -> Result<Unknown<'static>> {
    self.restart_native(env, id)
  }

  fn ports(&self, id: &str) -> Option<Vec<u16>> {
    self.native_ports(id)
  }

  fn usage(&self, id: &str) -> Option<crate::core::process::Usage> {
    self.hub.native(id)?.usage()
  }

  fn task_aborted(&self, env: &Env, id: &str, _generation: u64, current: bool) {
    self.abort_native(env, id, current)
  }

  fn add_wait(&self, env: &Env, id: &str, wait: u64, spec: WaitSpec) -> Result<()> {
    match self.hub.add_wait(id, wait, spec, js::mono_ms()) {
      Ok(None) => {}
      Ok(Some(outcome)) => resolve_wait(env, &self.js.side, wait, &outcome),
      Err(_) => {
        let outcome = WaitOutcome {
          reason: WaitReason::Exit,
          line: None,
          port: None,
          status: TaskStatus::Cancelled,
          elapsed_ms: 0.0,
        };
        resolve_wait(env, &self.js.side, wait, &outcome);
      }
    }
    self.js.hold_while_busy(env, &self.hub);
    Ok(())
  }
}

impl MonitorRegistry {
  pub(crate) fn host<'a>(&'a self, env: &'a Env) -> HostWithHub<'a> {
    HostWithHub::new(env, &self.js, &self.hub)
  }

  /// Delivers what is queued for one entry (see [`MonitorHub::drain_for`]).
  pub(crate) fn drain_for(&self, env: &Env, id: &str) {
    let mut host = self.host(env);
    self.hub.drain_for(&mut host, id);
  }

  /// Whether the entry's AbortController (the one taskstream made or the
  /// caller registered) has been aborted.
  pub(crate) fn controller_aborted(&self, env: &Env, id: &str) -> bool {
    self.js.side.aborted(env, id)
  }

  pub(crate) fn forget_js_entry(&self, env: &Env, id: &str) {
    self.host(env).removed(&[id.to_owned()]);
  }

  /// Builds the drain function the native threads wake through (a weak
  /// threadsafe function: it never keeps Node alive).
  fn install_waker(env: &Env, hub: &Arc<MonitorHub>, js_side: &Rc<JsSide>) -> Result<()> {
    let weak: Weak<MonitorHub> = Arc::downgrade(hub);
    let js_side = Rc::clone(js_side);
    let drain =
      env.create_function_from_closure::<(), (), _>("taskstreamMonitorDrain", move |ctx| {
        if let Some(hub) = weak.upgrade() {
          let mut host = HostWithHub::new(ctx.env, &js_side, &hub);
          hub.drain_some(&mut host, DRAIN_BUDGET);
        }
        Ok(())
      })?;
    let tsfn = Arc::new(
      drain
        .build_threadsafe_function::<()>()
        .weak::<true>()
        .build()?,
    );
    hub.set_waker(Box::new(move || {
      let status = tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
      if status != Status::Ok {
        tracing::debug!(?status, "taskstream: could not wake the JavaScript thread");
      }
    }));
    Ok(())
  }
}

#[napi]
impl MonitorRegistry {
  #[napi(
    constructor,
    catch_unwind,
    ts_args_type = "options?: MonitorRegistryOptions"
  )]
  pub fn new(env: Env, this: This<Unknown>, options: Unknown) -> Result<Self> {
    args::require_new::<&MonitorRegistry>(&env, &this, "MonitorRegistry")?;
    let mut config = RegistryConfig::default();
    let mut throttle = Some(ThrottleConfig::default());
    let mut remove_env = crate::core::launch::default_remove_env();
    if let Some(options) = args::optional_object(&env, &options, "options")? {
      let bag = Bag::new(&env, &options, "options");
      if let Some(n) = bag.opt_u64("maxConcurrent", 1, 1_000_000)? {
        config.max_concurrent = n as usize;
      }
      if let Some(n) = bag.opt_u64("maxRetainedTerminal", 1, 1_000_000)? {
        config.max_retained_terminal = n as usize;
      }
      throttle = parse_throttle(&env, &bag.get("throttle")?)?;
      let remove = bag.get("removeEnv")?;
      if !args::is_undefined(&remove) {
        remove_env = args::string_list(&env, &remove, "options.removeEnv")?;
      }
    }
    let hub = Arc::new(MonitorHub::new(config));
    let js_side = Rc::new(JsSide::new(Side::new(&env, &this)?));
    let _ = js_side.anchor.set(Anchor::new(&env, &this)?);
    Self::install_waker(&env, &hub, &js_side)?;
    MonitorHub::spawn_idle_watcher(&hub, RealClock)
      .map_err(|e| Error::from_reason(format!("could not start the idle watcher: {e}")))?;
    Ok(Self {
      hub,
      js: js_side,
      throttle,
      remove_env,
    })
  }

  /// Accepts one event line for a running monitor (CONTRACT.md §2.1 emitEvent).
  #[napi(catch_unwind, ts_args_type = "monitorId: string, line: string")]
  pub fn emit_event(&self, env: Env, monitor_id: Unknown, line: Unknown) -> Result<()> {
    let id = args::string(&env, &monitor_id, "monitorId")?;
    let line = args::string(&env, &line, "line")?;
    let (wall, mono) = (js::wall_ms(), js::mono_ms());
    self.hub.apply(|r| r.emit_event(&id, &line, wall, mono));
    // A fed entry's idle timer restarts with every event (§2.1 emitEvent).
    let rearm = {
      let registry = self.hub.registry();
      registry
        .get(&id)
        .filter(|e| e.mode == EntryMode::Fed && e.is_running())
        .map(|e| e.idle_timeout_ms)
    };
    if let Some(timeout_ms) = rearm {
      self.js.side.arm_idle(&env, &id, timeout_ms);
    }
    self.drain_for(&env, &id);
    Ok(())
  }

  /// Settles a running monitor `completed`; a numeric code is stored and shown.
  #[napi(
    catch_unwind,
    ts_args_type = "monitorId: string, exitCode: number | null"
  )]
  pub fn complete(&self, env: Env, monitor_id: Unknown, exit_code: Unknown) -> Result<()> {
    let id = args::string(&env, &monitor_id, "monitorId")?;
    let code = args::nullable_exit_code(&env, &exit_code)?;
    let wall = js::wall_ms();
    self.hub.apply(|r| r.complete(&id, code, wall));
    // A native task settled from JavaScript is stopped, not lost.
    self.hub.stop_if_settled(&id);
    self.drain_for(&env, &id);
    Ok(())
  }

  /// Settles a running monitor `failed` with this error text.
  #[napi(catch_unwind, ts_args_type = "monitorId: string, error: string")]
  pub fn fail(&self, env: Env, monitor_id: Unknown, error: Unknown) -> Result<()> {
    let id = args::string(&env, &monitor_id, "monitorId")?;
    let error = args::string(&env, &error, "error")?;
    let wall = js::wall_ms();
    self.hub.apply(|r| r.fail(&id, &error, wall));
    self.hub.stop_if_settled(&id);
    self.drain_for(&env, &id);
    Ok(())
  }

  /// Cancels a running monitor. `notify: false` settles silently before aborting;
  /// the default aborts first (flushed lines are delivered) and then notifies.
  #[napi(
    catch_unwind,
    ts_args_type = "monitorId: string, options?: MonitorCancelOptions"
  )]
  pub fn cancel(&self, env: Env, monitor_id: Unknown, options: Unknown) -> Result<()> {
    let id = args::string(&env, &monitor_id, "monitorId")?;
    let notify = parse_cancel_notify(&env, &options)?;
    let mut host = self.host(&env);
    self
      .hub
      .cancel(&mut host, &RealClock, &id, notify, EndVia::Cancel);
    Ok(())
  }

  /// The running entries, in insertion order.
  #[napi(catch_unwind, ts_return_type = "MonitorTask[]")]
  pub fn get_running(&self, env: Env) -> Result<Unknown<'static>> {
    let ids = self.hub.registry().running_ids();
    entries_array(&env, self, ids)
  }

  #[napi(catch_unwind, ts_args_type = "ownerAgentId: string")]
  pub fn has_running_for_owner(&self, env: Env, owner_agent_id: Unknown) -> Result<bool> {
    let agent = args::string(&env, &owner_agent_id, "ownerAgentId")?;
    Ok(self.hub.registry().has_running_for_owner(&agent))
  }

  /// Cancels every running monitor of this owner (collected first).
  #[napi(
    catch_unwind,
    ts_args_type = "ownerAgentId: string, options?: MonitorCancelOptions"
  )]
  pub fn cancel_running_for_owner(
    &self,
    env: Env,
    owner_agent_id: Unknown,
    options: Unknown,
  ) -> Result<()> {
    let agent = args::string(&env, &owner_agent_id, "ownerAgentId")?;
    let notify = parse_cancel_notify(&env, &options)?;
    let mut host = self.host(&env);
    self
      .hub
      .cancel_running_for_owner(&mut host, &RealClock, &agent, notify);
    Ok(())
  }

  /// Cancels every entry (terminal ones are no-ops). With the default options a
  /// cancelled notification is emitted for each running monitor; shutdown paths
  /// pass `{ notify: false }`.
  #[napi(catch_unwind, ts_args_type = "options?: MonitorCancelOptions")]
  pub fn abort_all(&self, env: Env, options: Unknown) -> Result<()> {
    let notify = parse_cancel_notify(&env, &options)?;
    let mut host = self.host(&env);
    self.hub.abort_all(&mut host, &RealClock, notify);
    Ok(())
  }

  /// Clears the per-agent callbacks, aborts every running monitor without
  /// notifications, removes every entry and fires status-change once with no
  /// argument (nothing at all when the registry is empty).
  #[napi(catch_unwind)]
  pub fn reset(&self, env: Env) -> Result<()> {
    self.js.side.clear_agents(&env);
    let mut host = self.host(&env);
    self.hub.reset(&mut host);
    Ok(())
  }

  /// A fed entry's idle timer fired (`lib/side.js` arms it).
  #[napi(catch_unwind, js_name = "__idleTimeout", skip_typescript)]
  pub fn idle_timeout(&self, env: Env, monitor_id: String) {
    let mut host = self.host(&env);
    self
      .hub
      .fed_idle_timeout(&mut host, &RealClock, &monitor_id);
  }

  /// The live counters of entry `monitorId`, in the order of `monitor_native::LIVE_COUNTERS`;
  /// `null` once it left the registry (the getters then read 0).
  #[napi(catch_unwind, js_name = "__counters", skip_typescript)]
  pub fn counters(&self, monitor_id: String) -> Option<Vec<f64>> {
    let registry = self.hub.registry();
    let e = registry.get(&monitor_id)?;
    let counters = [
      e.event_count,
      e.dropped_lines,
      e.bytes_read,
      e.lines_seen,
      e.truncated_bytes,
    ];
    Some(counters.map(|n| n as f64).to_vec())
  }
}

registry_surface!(MonitorRegistry, wait_id = "monitorId", id = "monitorId");

fn parse_throttle(env: &Env, value: &Unknown) -> Result<Option<ThrottleConfig>> {
  match value.get_type()? {
    ValueType::Undefined => Ok(Some(ThrottleConfig::default())),
    ValueType::Boolean if !unsafe { value.cast::<bool>() }? => Ok(None),
    ValueType::Object => {
      let object: Object = unsafe { value.cast() }?;
      let bag = Bag::new(env, &object, "options.throttle");
      let int = |key: &str, max: f64| {
        args::integer_in_range(env, &bag.get(key)?, &bag.path(key), "property", 1.0, max)
      };
      let burst = int("burst", 1_000_000.0)?;
      let refill = int("refillMs", 86_400_000.0)?;
      Ok(Some(ThrottleConfig {
        burst: burst as u32,
        refill_ms: refill as u64,
      }))
    }
    _ => Err(args::type_error(
      env,
      format!(
        "The \"options.throttle\" property must be an object or false. {}",
        args::received(value)
      ),
    )),
  }
}

/// Longest fed-mode `idleTimeoutMs`: the largest delay Node's `setTimeout`
/// honours. The TypeScript registry armed its idle timer with `setTimeout`,
/// which fires after 1 ms for anything larger (or NaN, or negative), so such a
/// value never worked as a timeout.
const MAX_FED_IDLE_TIMEOUT_MS: f64 = 2_147_483_647.0;

/// Reads the TypeScript registration shape, with the TypeScript defaults for
/// fields a caller may leave out. Wrong types are `TypeError`s naming the field.
///
/// Values a registry cannot work with are `RangeError`s naming the field, and
/// nothing is registered: `startTime` and `lastEventTime` must be finite times
/// in `0..=8.64e15` (a JavaScript `Date`'s range from 1970 on); `eventCount`
/// and `droppedLines` integers in `0..=Number.MAX_SAFE_INTEGER`; `maxEvents`
/// an integer in `1..=Number.MAX_SAFE_INTEGER` (the limit the TypeScript tool
/// passed is at most 10000, but fed mode keeps any limit that can be counted
/// to); `idleTimeoutMs` an integer in `1..=2147483647` (Node's timer limit).
/// The TypeScript registry stored any number; NaN, infinities, negatives and
/// fractions there gave a monitor that stopped at once or never.
fn read_registration(env: &Env, object: &Object) -> Result<Registration> {
  let bag = Bag::new(env, object, "registration");
  let time = |key: &str, default: f64| -> Result<f64> {
    let value = bag.get(key)?;
    if args::is_undefined(&value) {
      return Ok(default);
    }
    args::time_ms(env, &value, &bag.path(key), "property")
  };
  let count = |key: &str, default: u64, min: u64, max: f64| -> Result<u64> {
    Ok(
      bag
        .opt_int(key, min as f64, max)?
        .map_or(default, |n| n as u64),
    )
  };
  let monitor_id = bag.string("monitorId")?;
  let command = bag.string("command")?;
  let description = bag
    .opt_string("description")?
    .unwrap_or_else(|| command.clone());
  let start_time = time("startTime", js::wall_ms())?;
  let pid = args::optional_pid_field(env, object, "registration.pid")?;
  Ok(Registration {
    monitor_id,
    command,
    description,
    start_time,
    last_event_time: time("lastEventTime", start_time)?,
    event_count: count("eventCount", 0, 0, args::MAX_SAFE_INTEGER)?,
    max_events: count("maxEvents", 1000, 1, args::MAX_SAFE_INTEGER)?,
    idle_timeout_ms: count("idleTimeoutMs", 300_000, 1, MAX_FED_IDLE_TIMEOUT_MS)?,
    dropped_lines: count("droppedLines", 0, 0, args::MAX_SAFE_INTEGER)?,
    output_file: bag.opt_string("outputFile")?.unwrap_or_default(),
    pid,
    tool_use_id: bag.opt_string("toolUseId")?,
    owner_agent_id: bag.opt_string("ownerAgentId")?,
    todo_work_chain_id: bag.opt_string("todoWorkChainId")?,
    mode: EntryMode::Fed,
    settle_ms: None,
  })
}
