//! How `MonitorRegistry` carries out the hub's effects on the JavaScript
//! thread ([`JsHost`]): entry objects kept in step with the registry, the
//! callbacks, aborts, waits, a fed entry's idle timer and keep-alive, and the
//! notification `meta` objects.

use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::*;

use super::js_side::{Callbacks, JsEntry, JsSide};
use crate::binding::js::{self, call_value, release, set_opt, Persistent, RealClock};
use crate::binding::registry::{
  abort_controller, call_notification, call_register, call_status_change, caller_pid, end_object,
  set_unref_timeout,
};
use crate::core::monitor::hub::{MonitorHost, MonitorHub};
use crate::core::monitor::{AbortKind, EntryMode, MonitorEntry, Notification, Route};
use crate::core::wait::WaitOutcome;

/// Carries out hub effects on the JavaScript thread.
pub(crate) struct JsHost<'a> {
  env: &'a Env,
  js: &'a JsSide,
}

impl<'a> JsHost<'a> {
  pub(crate) fn new(env: &'a Env, js: &'a JsSide) -> Self {
    Self { env, js }
  }

  /// The entry's object, refreshed from the registry.
  pub(super) fn synced(&self, hub: &MonitorHub, id: &str) -> Option<Object<'a>> {
    let object = {
      let entries = self.js.entries.borrow();
      entries.get(id)?.objects.object(self.env)?
    };
    let snapshot = hub.registry().get(id).cloned()?;
    let mut object = object;
    if let Err(error) = write_entry(self.env, &mut object, &snapshot) {
      tracing::warn!(%error, id, "taskstream: could not update a monitor entry object");
    }
    Some(object)
  }

  fn callback(&self, pick: impl FnOnce(&Callbacks) -> Option<&Persistent>) -> Option<Object<'a>> {
    let callbacks = self.js.callbacks.borrow();
    pick(&callbacks).and_then(|f| f.get_value(self.env).ok())
  }
}

impl MonitorHost for HostWithHub<'_> {
  fn registered(&mut self, id: &str) {
    let Some(entry) = self.host.synced(self.hub, id) else {
      return;
    };
    let cb = self.host.callback(|c| c.task.register.as_ref());
    call_register(self.host.env, cb, Some(entry));
  }

  fn status_changed(&mut self, id: Option<&str>) {
    if let Some(id) = id {
      if !self.hub.registry().is_running(id) {
        clear_idle_timer(self.host.env, self.host.js, id);
        release_keep_alive(self.host.env, self.host.js, id);
      }
    }
    let entry = id.and_then(|id| self.host.synced(self.hub, id));
    let cb = self.host.callback(|c| c.task.status_change.as_ref());
    call_status_change(self.host.env, cb, entry);
  }

  fn notify(&mut self, n: Notification) {
    self.host.synced(self.hub, &n.meta.monitor_id);
    let cb = match &n.route {
      Route::Global => self.host.callback(|c| c.task.notification.as_ref()),
      Route::Agent(agent) => {
        let cb = self.host.callback(|c| c.agent_notification.get(agent));
        if cb.is_none() {
          tracing::debug!(
            "Dropping monitor notification for {}: owner agent {agent} has no notification callback",
            n.meta.monitor_id
          );
        }
        cb
      }
    };
    let Some(cb) = cb else {
      return;
    };
    let meta = meta_object(self.host.env, &n);
    call_notification(self.host.env, cb, n.display_text, n.model_text, meta);
  }

  fn abort(&mut self, id: &str, _kind: AbortKind) {
    self.host.synced(self.hub, id);
    let controller = {
      let entries = self.host.js.entries.borrow();
      entries
        .get(id)
        .and_then(|e| e.objects.controller(self.host.env))
    };
    abort_controller(self.host.env, controller);
  }

  fn wake(&mut self, agent_id: &str) {
    if let Some(cb) = self.host.callback(|c| c.agent_lifecycle.get(agent_id)) {
      call_value(self.host.env, cb, "lifecycle", ());
    }
  }

  fn removed(&mut self, ids: &[String]) {
    for id in ids {
      clear_idle_timer(self.host.env, self.host.js, id);
      release_keep_alive(self.host.env, self.host.js, id);
    }
    self.host.js.restarts.borrow_mut().forget(ids);
    let removed: Vec<JsEntry> = {
      let mut entries = self.host.js.entries.borrow_mut();
      ids.iter().filter_map(|id| entries.remove(id)).collect()
    };
    for entry in removed {
      entry.objects.release(self.host.env);
    }
  }

  fn wait_resolved(&mut self, id: &str, wait: u64, outcome: WaitOutcome) {
    self.host.synced(self.hub, id);
    self.host.js.waits.resolve(self.host.env, wait, &outcome);
  }

  fn before_terminal(&mut self, hub: &MonitorHub, id: &str) {
    let fed = hub.registry().get(id).map(|e| e.mode) == Some(EntryMode::Fed);
    let object = {
      let entries = self.host.js.entries.borrow();
      entries
        .get(id)
        .filter(|_| fed)
        .and_then(|e| e.objects.object(self.host.env))
    };
    if let Some(object) = object {
      let pid = caller_pid(&object);
      let dropped = read_f64(&object, "droppedLines").unwrap_or(0.0).max(0.0) as u64;
      hub.registry().set_caller_fields(id, pid, dropped);
    }
  }
}

/// A [`JsHost`] together with the hub it serves.
pub(crate) struct HostWithHub<'a> {
  host: JsHost<'a>,
  hub: &'a MonitorHub,
}

impl<'a> HostWithHub<'a> {
  pub(crate) fn new(env: &'a Env, js: &'a JsSide, hub: &'a MonitorHub) -> Self {
    Self {
      host: JsHost::new(env, js),
      hub,
    }
  }
}

/// Every delivery runs through a host: once it is done, whether the registry
/// still has work decides whether it keeps itself reachable.
impl Drop for HostWithHub<'_> {
  fn drop(&mut self) {
    self.host.js.hold_while_busy(self.host.env, self.hub);
  }
}

/// Arms (or re-arms) a fed entry's idle timer with JavaScript's own
/// `setTimeout`, looked up on the global object each time, so test suites
/// that install fake timers (`vi.useFakeTimers()`) drive it as they drove the
/// TypeScript registry's. The timer is unref'd, as that one was: it never
/// keeps Node alive. Native entries keep Rust deadlines.
pub(super) fn arm_idle_timer(
  env: &Env,
  hub: &Arc<MonitorHub>,
  js_side: &Rc<JsSide>,
  id: &str,
  timeout_ms: u64,
) -> Result<()> {
  clear_idle_timer(env, js_side, id);
  let (weak, js_side_for_timer, id_for_timer) =
    (Arc::downgrade(hub), Rc::clone(js_side), id.to_owned());
  let timer = set_unref_timeout(env, "taskstreamMonitorIdle", timeout_ms, move |env| {
    let (js_side, id) = (&js_side_for_timer, &id_for_timer);
    if let Some(timer) = js_side
      .entries
      .borrow_mut()
      .get_mut(id)
      .and_then(|e| e.idle_timer.take())
    {
      release(env, timer);
    }
    if let Some(hub) = weak.upgrade() {
      let mut host = HostWithHub::new(env, js_side, &hub);
      hub.fed_idle_timeout(&mut host, &RealClock, id);
    }
  })?;
  let timer = js::persist(&timer)?;
  match js_side.entries.borrow_mut().get_mut(id) {
    Some(entry) => entry.idle_timer = Some(timer),
    None => release(env, timer),
  }
  Ok(())
}

/// Stops a keep-alive monitor's hold on the event loop (it settled or left).
fn release_keep_alive(env: &Env, js_side: &JsSide, id: &str) {
  let keep_alive = js_side
    .entries
    .borrow_mut()
    .get_mut(id)
    .and_then(|e| e.keep_alive.take());
  if let Some(release) = keep_alive {
    crate::binding::layer::call_once(env, release, "keepAlive", ());
  }
}

/// Clears a fed entry's idle timer, if one is armed, with the global
/// `clearTimeout` of now.
fn clear_idle_timer(env: &Env, js_side: &JsSide, id: &str) {
  let Some(timer) = js_side
    .entries
    .borrow_mut()
    .get_mut(id)
    .and_then(|e| e.idle_timer.take())
  else {
    return;
  };
  let cleared = (|| -> Result<()> {
    let clear: Function<Unknown, Unknown> = env.get_global()?.get_named_property("clearTimeout")?;
    clear.call(timer.get_value(env)?.to_unknown())?;
    Ok(())
  })();
  if let Err(error) = cleared {
    tracing::debug!(%error, "taskstream: could not clear an idle timer");
  }
  release(env, timer);
}

fn read_f64(object: &Object, key: &str) -> Option<f64> {
  let value: Unknown = object.get_named_property(key).ok()?;
  match value.get_type() {
    Ok(ValueType::Number) => unsafe { value.cast::<f64>() }.ok(),
    _ => None,
  }
}

/// Copies registry state onto an entry object. Fed entries keep the fields
/// their caller owns (`pid`, `droppedLines`, and the registration fields).
fn write_entry(env: &Env, object: &mut Object, e: &MonitorEntry) -> Result<()> {
  object.set_named_property("id", e.id.as_str())?;
  object.set_named_property("kind", "monitor")?;
  object.set_named_property("outputOffset", 0)?;
  object.set_named_property("notified", e.notified)?;
  // Lifecycle fields as JavaScript has been told so far (see `visible_status`).
  let settled = !e.is_visibly_running();
  object.set_named_property("status", e.visible_status.as_str())?;
  set_opt(object, "endTime", e.end_time.filter(|_| settled))?;
  object.set_named_property("lastEventTime", e.last_event_time)?;
  set_opt(object, "exitCode", e.exit_code.filter(|_| settled))?;
  set_opt(object, "error", e.error.as_deref().filter(|_| settled))?;
  // `reset` records an end on entries it removes without settling them.
  if let Some(end) = e.end.as_ref().filter(|_| settled || e.is_running()) {
    object.set_named_property("end", end_object(env, end)?)?;
  }
  match e.mode {
    // Native counters are live accessors (see `define_live_counters`).
    EntryMode::Native => set_opt(object, "pid", e.pid)?,
    EntryMode::Fed => {
      object.set_named_property("eventCount", e.event_count as f64)?;
      object.set_named_property("bytesRead", 0)?;
      object.set_named_property("linesSeen", 0)?;
      object.set_named_property("truncatedBytes", 0)?;
    }
  }
  Ok(())
}

/// The fields a native entry object starts with (the rest come from [`write_entry`]).
pub(crate) fn write_native_registration(
  env: &Env,
  object: &mut Object,
  e: &MonitorEntry,
) -> Result<()> {
  object.set_named_property("monitorId", e.id.as_str())?;
  object.set_named_property("command", e.command.as_str())?;
  object.set_named_property("description", e.description.as_str())?;
  set_opt(object, "toolUseId", e.tool_use_id.as_deref())?;
  set_opt(object, "ownerAgentId", e.owner_agent_id.as_deref())?;
  set_opt(object, "todoWorkChainId", e.todo_work_chain_id.as_deref())?;
  object.set_named_property("startTime", e.start_time)?;
  object.set_named_property("maxEvents", e.max_events as f64)?;
  object.set_named_property("idleTimeoutMs", e.idle_timeout_ms as f64)?;
  object.set_named_property("outputFile", e.output_file.as_str())?;
  write_entry(env, object, e)
}

fn meta_object<'a>(env: &'a Env, n: &Notification) -> Result<Object<'a>> {
  let mut meta = Object::new(env)?;
  meta.set_named_property("type", n.meta.kind.as_str())?;
  if let Some(end) = &n.meta.end {
    meta.set_named_property("end", end_object(env, end)?)?;
  }
  meta.set_named_property("monitorId", n.meta.monitor_id.as_str())?;
  meta.set_named_property("status", n.meta.status.as_str())?;
  meta.set_named_property("eventCount", n.meta.event_count as f64)?;
  set_opt(&mut meta, "toolUseId", n.meta.tool_use_id.as_deref())?;
  set_opt(&mut meta, "ownerAgentId", n.meta.owner_agent_id.as_deref())?;
  set_opt(
    &mut meta,
    "todoWorkChainId",
    n.meta.todo_work_chain_id.as_deref(),
  )?;
  if let Some(lines) = &n.meta.lines {
    let mut array = env.create_array(lines.len() as u32)?;
    for (index, line) in lines.iter().enumerate() {
      array.set(index as u32, line.as_str())?;
    }
    meta.set_named_property("lines", array)?;
  }
  if let Some(dropped) = n.meta.dropped_since {
    meta.set_named_property("droppedSince", dropped as f64)?;
  }
  Ok(meta)
}
