//! How `MonitorRegistry` carries out the hub's effects on the JavaScript thread
//! ([`HostWithHub`]): each one handed to the registry's side (`lib/side.js`) with the entry's
//! fields as the registry has them, and the notification `meta` objects.

use napi::bindgen_prelude::*;

use super::js_side::JsSide;
use crate::binding::js::set_opt;
use crate::binding::registry::{caller_pid, end_object, resolve_wait};
use crate::core::monitor::hub::{MonitorHost, MonitorHub};
use crate::core::monitor::{AbortKind, EntryMode, MonitorEntry, Notification, Route};
use crate::core::wait::WaitOutcome;

/// Carries out a hub's effects on the JavaScript thread.
pub(crate) struct HostWithHub<'a> {
  env: &'a Env,
  js: &'a JsSide,
  hub: &'a MonitorHub,
}

impl<'a> HostWithHub<'a> {
  pub(crate) fn new(env: &'a Env, js: &'a JsSide, hub: &'a MonitorHub) -> Self {
    Self { env, js, hub }
  }

  /// Entry `id`'s fields as the registry has them (`None` once it left the registry).
  fn fields(&self, id: &str) -> Option<Object<'a>> {
    let snapshot = self.hub.registry().get(id).cloned()?;
    let mut fields = Object::new(self.env).ok()?;
    match write_entry(self.env, &mut fields, &snapshot) {
      Ok(()) => Some(fields),
      Err(error) => {
        tracing::warn!(%error, id, "taskstream: could not read a monitor entry");
        None
      }
    }
  }

  /// The entry's object, brought up to date from the registry.
  pub(super) fn synced(&self, id: &str) -> Option<Object<'a>> {
    let fields = self.fields(id)?;
    self.js.side.sync(self.env, id, Some(fields))
  }
}

impl MonitorHost for HostWithHub<'_> {
  fn registered(&mut self, id: &str) {
    if let Some(fields) = self.fields(id) {
      self.js.side.registered(self.env, id, Some(fields));
    }
  }

  fn status_changed(&mut self, id: Option<&str>) {
    let running = id.is_some_and(|id| self.hub.registry().is_running(id));
    // An entry that left the registry is reported with no object.
    let fields = id.and_then(|id| self.fields(id));
    let id = id.filter(|_| fields.is_some());
    self.js.side.status_changed(self.env, id, fields, running);
  }

  fn notify(&mut self, n: Notification) {
    let meta = match meta_object(self.env, &n) {
      Ok(meta) => meta,
      Err(error) => return tracing::warn!(%error, "taskstream: could not build notification meta"),
    };
    let id = n.meta.monitor_id.as_str();
    let agent = match &n.route {
      Route::Global => None,
      Route::Agent(agent) => Some(agent.as_str()),
    };
    let texts = (n.display_text.as_str(), n.model_text.as_str());
    let called = (self.js.side).notify(self.env, id, self.fields(id), agent, texts, meta);
    if let (false, Some(agent)) = (called, agent) {
      // CONTRACT.md §2.4: no fallback to the global callback.
      tracing::debug!(
        "Dropping monitor notification for {id}: owner agent {agent} has no notification callback"
      );
    }
  }

  fn abort(&mut self, id: &str, _kind: AbortKind) {
    self.js.side.abort(self.env, id, self.fields(id));
  }

  fn wake(&mut self, agent_id: &str) {
    self.js.side.wake(self.env, agent_id);
  }

  fn removed(&mut self, ids: &[String]) {
    self.js.side.removed(self.env, ids);
    self.js.restarts.borrow_mut().forget(ids);
  }

  fn wait_resolved(&mut self, id: &str, wait: u64, outcome: WaitOutcome) {
    self.synced(id);
    resolve_wait(self.env, &self.js.side, wait, &outcome);
  }

  fn before_terminal(&mut self, hub: &MonitorHub, id: &str) {
    if hub.registry().get(id).map(|e| e.mode) != Some(EntryMode::Fed) {
      return;
    }
    if let Some(object) = self.js.side.object(self.env, id) {
      let pid = caller_pid(&object);
      let dropped = read_f64(&object, "droppedLines").unwrap_or(0.0).max(0.0) as u64;
      hub.registry().set_caller_fields(id, pid, dropped);
    }
  }
}

/// Every delivery runs through a host: once it is done, whether the registry
/// still has work decides whether it keeps itself reachable.
impl Drop for HostWithHub<'_> {
  fn drop(&mut self) {
    self.js.hold_while_busy(self.env, self.hub);
  }
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
    // Native counters are live getters (`lib/side.js`, `__counters`).
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
