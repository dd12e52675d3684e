//! `BackgroundShellRegistry` (API.md §4, CONTRACT.md §2.13): the binding of
//! `core::shell::ShellRegistry`.
//!
//! Every transition of a shell registry happens on the JavaScript thread (the
//! runners of `executeBackground` hand their outcome over through a
//! threadsafe function), so its state sits in a `RefCell` next to the
//! JavaScript objects. No borrow is held across a call into JavaScript.

use std::cell::RefCell;
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::args;
use super::js::{self, set_opt};
use super::registry::{
  caller_pid, end_object, registry_surface, resolve_wait, set_unref_timeout, RegistrySurface,
};
use super::side::Side;
use crate::core::end::TaskEnd;
use crate::core::launch::ShellStart;
use crate::core::restart::{RestartBook, SHELL};
use crate::core::shell::{
  shell_settled_notification, OutputCounters, ShellEffect, ShellEntry, ShellHub, ShellNotification,
  ShellOutgoing, ShellRegistration, ShellRegistry, ShellSettled, ShellStatus, ShellVerdict,
  WaitPlan, MAX_RETAINED_TERMINAL_SHELLS,
};
use crate::core::wait::{WaitOutcome, WaitSpec};

/// The registry's hub (core `shell::hub`) and its JavaScript side (`lib/side.js`: the entry
/// objects it hands out, their controllers, the callbacks).
pub(crate) struct ShellInner {
  pub(crate) hub: RefCell<ShellHub>,
  pub(crate) side: Side,
  /// The options of each shell `executeBackground()` started (not persisted), for `restart()`
  /// (API.md §6.8), until its entry leaves; a restart waiting for the old run is `()`.
  pub(crate) restarts: RefCell<RestartBook<ShellStart, OutputCounters, ()>>,
}

impl ShellInner {
  fn new(side: Side) -> Self {
    let registry = ShellRegistry::new(MAX_RETAINED_TERMINAL_SHELLS, std::process::id());
    Self {
      hub: RefCell::new(ShellHub::new(registry)),
      side,
      restarts: RefCell::new(RestartBook::new(SHELL)),
    }
  }

  /// A registry transition, carried out.
  pub(crate) fn transition(
    &self,
    env: &Env,
    change: impl FnOnce(&mut ShellRegistry) -> Vec<ShellEffect>,
  ) {
    let out = {
      let mut hub = self.hub.borrow_mut();
      let effects = change(hub.registry_mut());
      hub.outgoing(effects)
    };
    self.carry_out(env, out);
  }

  /// Resolves wait `wait` of shell `id` (once), with the outcome's own `elapsedMs`.
  pub(crate) fn resolve_wait(&self, env: &Env, id: &str, wait: u64, outcome: &WaitOutcome) {
    self.hub.borrow_mut().forget_wait(id, wait);
    resolve_wait(env, &self.side, wait, outcome);
  }

  /// The run of shell `id` settled: its waits end with `status`.
  pub(crate) fn settle_waits(&self, env: &Env, id: &str, status: ShellStatus) {
    let out = self.hub.borrow_mut().settle_waits(id, status);
    self.carry_out(env, out);
  }

  /// A settled notification from a shell's run (API.md §6.2): not gated by
  /// `notified` and never replayed; dropped when no callback is installed.
  pub(crate) fn notify_settled(&self, env: &Env, id: &str, settle_ms: u64, screen: Option<&str>) {
    let Some(entry) = self.entry(id).filter(ShellEntry::is_running) else {
      return;
    };
    if self.side.has_notification(env) {
      let n = shell_settled_notification(&entry, settle_ms, screen);
      self.call_notification(env, id, n);
    }
  }

  /// Hands notification `n` of shell `id` to the side.
  fn call_notification(&self, env: &Env, id: &str, n: ShellNotification) {
    let meta = (|| -> Result<Object<'_>> {
      let mut meta = Object::new(env)?;
      meta.set_named_property("type", n.meta.kind)?;
      if let Some(end) = &n.meta.end {
        meta.set_named_property("end", end_object(env, end)?)?;
      }
      meta.set_named_property("shellId", n.meta.shell_id.as_str())?;
      meta.set_named_property("status", n.meta.status.as_str())?;
      set_opt(&mut meta, "exitCode", n.meta.exit_code)?;
      set_opt(
        &mut meta,
        "todoWorkChainId",
        n.meta.todo_work_chain_id.as_deref(),
      )?;
      Ok(meta)
    })();
    match meta {
      Ok(meta) => {
        let texts = (n.display_text.as_str(), n.model_text.as_str());
        self.side.notify(env, id, None, None, texts, meta);
      }
      Err(error) => tracing::warn!(%error, "taskstream: could not build notification meta"),
    }
  }

  pub(crate) fn entry(&self, id: &str) -> Option<ShellEntry> {
    self.hub.borrow().entry(id).cloned()
  }

  /// Shell `id`'s fields as the registry has them (`None` once it left the registry).
  fn fields<'a>(&self, env: &'a Env, id: &str) -> Option<Object<'a>> {
    let entry = self.entry(id)?;
    let mut fields = Object::new(env).ok()?;
    match write_shell_entry(env, &mut fields, &entry) {
      Ok(()) => Some(fields),
      Err(error) => {
        tracing::warn!(%error, id, "taskstream: could not read a shell entry");
        None
      }
    }
  }

  /// The entry's object, refreshed from the registry (or as last written, once
  /// the entry has left the registry).
  fn synced<'a>(&self, env: &'a Env, id: &str) -> Option<Object<'a>> {
    self.side.sync(env, id, self.fields(env, id))
  }

  /// A `pid` the caller wrote on its object reaches the registry (and so the notification).
  fn read_caller_pid(&self, env: &Env, id: &str) {
    let Some(object) = self.side.object(env, id) else {
      return;
    };
    let pid = caller_pid(&object);
    self.hub.borrow_mut().registry_mut().set_pid(id, pid);
  }

  /// Carries out what a transition asks of JavaScript, in order (core `ShellHub::outgoing`).
  fn carry_out(&self, env: &Env, out: Vec<ShellOutgoing>) {
    for item in out {
      match item {
        ShellOutgoing::Registered(id) => self.side.registered(env, &id, self.fields(env, &id)),
        ShellOutgoing::StatusChanged(id) => {
          let fields = id.as_deref().and_then(|id| self.fields(env, id));
          (self.side).status_changed(env, id.as_deref(), fields, false);
        }
        ShellOutgoing::Notify(id) => self.notify(env, &id),
        ShellOutgoing::Abort(id) => self.side.abort(env, &id, self.fields(env, &id)),
        ShellOutgoing::ResolveWait(wait, outcome) => resolve_wait(env, &self.side, wait, &outcome),
        ShellOutgoing::Forget(ids) => self.forget(env, &ids),
      }
    }
  }

  /// §2.13 emitNotification, behind the registry's `notified` gate.
  fn notify(&self, env: &Env, id: &str) {
    self.read_caller_pid(env, id);
    let installed = self.side.has_notification(env);
    let built = self
      .hub
      .borrow_mut()
      .registry_mut()
      .take_notification(id, installed);
    self.synced(env, id);
    if let Some(n) = built {
      self.call_notification(env, id, n);
    }
  }

  /// These entries left the registry: what they kept goes, and a restart waiting for one of
  /// them is refused.
  fn forget(&self, env: &Env, ids: &[String]) {
    let forgotten = self.restarts.borrow_mut().forget(ids);
    for gone in forgotten.into_iter().filter(|gone| gone.waiting.is_some()) {
      let refusal = Error::from_reason(gone.refusal);
      self.side.end_restart(env, &gone.id, Err(refusal));
    }
    self.side.removed(env, ids);
  }

  /// `register` for a caller's object, or (`ours`) one `executeBackground` or `recover` built,
  /// whose `ports`, `usage` and controller the side then follows. The object's generation
  /// (`Side::add`), by which the hub links its run.
  pub(crate) fn register(
    &self,
    env: &Env,
    object: &Object,
    reg: ShellRegistration,
    ours: bool,
  ) -> Result<u64> {
    let id = reg.shell_id.clone();
    self
      .hub
      .borrow()
      .registry()
      .check_can_register(&id)
      .map_err(Error::from_reason)?;
    let mut object = *object;
    object.set_named_property("id", id.as_str())?;
    object.set_named_property("kind", "shell")?;
    object.set_named_property("description", reg.command.as_str())?;
    object.set_named_property("outputFile", reg.output_path.as_str())?;
    object.set_named_property("outputOffset", 0)?;
    object.set_named_property("notified", false)?;
    let generation = (self.side).add(env, &id, &object, None, ours.then_some(&[]))?;
    let registered = {
      let mut hub = self.hub.borrow_mut();
      let registered = hub.registry_mut().register(reg);
      registered.map(|effects| hub.outgoing(effects))
    };
    match registered {
      Ok(out) => {
        self.carry_out(env, out);
        Ok(generation)
      }
      Err(message) => {
        self.forget(env, &[id]);
        Err(Error::from_reason(message))
      }
    }
  }

  /// Whether the controller of shell `id`'s object has been aborted.
  pub(crate) fn controller_aborted(&self, env: &Env, id: &str) -> bool {
    self.side.aborted(env, id)
  }

  /// The run `token` of `id` ended: settles a held running entry with
  /// `verdict`, and returns what the run's `done` reports (the status the
  /// registry settled the shell with; core `runs.rs` has the rule).
  pub(crate) fn finish_run(
    &self,
    env: &Env,
    id: &str,
    token: u64,
    verdict: ShellVerdict,
    end: TaskEnd,
    end_time: f64,
  ) -> ShellSettled {
    let (out, settled) = (self.hub.borrow_mut()).finish_run(id, token, verdict, end, end_time);
    self.carry_out(env, out);
    settled
  }
}

/// Copies registry state onto a shell entry object.
fn write_shell_entry(env: &Env, object: &mut Object, e: &ShellEntry) -> Result<()> {
  object.set_named_property("id", e.id.as_str())?;
  object.set_named_property("shellId", e.id.as_str())?;
  object.set_named_property("kind", "shell")?;
  object.set_named_property("status", e.status.as_str())?;
  set_opt(object, "exitCode", e.exit_code)?;
  set_opt(object, "error", e.error.as_deref())?;
  set_opt(object, "endTime", e.end_time)?;
  object.set_named_property("notified", e.notified)?;
  if let Some(end) = &e.end {
    object.set_named_property("end", end_object(env, end)?)?;
  }
  Ok(())
}

/// The registry of background shells: the same shape as the TypeScript
/// `BackgroundShellRegistry`. It has no concurrency cap and keeps the 32
/// newest terminal entries.
#[napi]
pub struct BackgroundShellRegistry {
  pub(crate) inner: Rc<ShellInner>,
}

impl RegistrySurface for BackgroundShellRegistry {
  fn entry_ids(&self) -> Vec<String> {
    self.inner.hub.borrow().registry().ids()
  }

  fn synced_entry<'a>(&'a self, env: &'a Env, id: &str) -> Option<Object<'a>> {
    self.inner.synced(env, id)
  }

  /// Also writes the shell's status sidecar.
  fn register_object(&self, env: &Env, object: &Object) -> Result<()> {
    let reg = read_shell_registration(env, object)?;
    self.inner.register(env, object, reg, false).map(|_| ())
  }

  fn ports(&self, id: &str) -> Option<Vec<u16>> {
    self.inner.hub.borrow().ports(id)
  }

  fn usage(&self, id: &str) -> Option<crate::core::process::Usage> {
    self.inner.hub.borrow().usage(id)
  }

  /// The run of that object, also when a reset removed its entry while the run went on.
  fn task_aborted(&self, _env: &Env, _id: &str, generation: u64, _current: bool) {
    self.inner.hub.borrow().cancel_run(generation);
  }

  fn wait_target(&self, id: &str) -> Option<(ShellStatus, bool)> {
    self.inner.entry(id).map(|e| (e.status, !e.is_running()))
  }

  fn side(&self) -> &Side {
    &self.inner.side
  }

  fn abort_wait(&self, env: &Env, id: &str, wait: u64) {
    let outcome = self.inner.hub.borrow_mut().abort_wait(id, wait);
    if let Some(outcome) = outcome {
      resolve_wait(env, &self.inner.side, wait, &outcome);
    }
  }

  fn restart_task(&self, env: &Env, id: String) -> Result<Unknown<'static>> {
    self.restart_shell(env, id)
  }

  /// A wait on a shell with no run of ours ends by its earlier clock (core `ShellHub`).
  fn add_wait(&self, env: &Env, id: &str, wait: u64, spec: WaitSpec) -> Result<()> {
    let inner = &self.inner;
    let plan = inner.hub.borrow_mut().add_wait(id, wait, spec);
    if let WaitPlan::Timer(ms, reason) = plan {
      let (inner, id) = (Rc::clone(inner), id.to_owned());
      set_unref_timeout(env, "taskstreamWaitTimer", ms, move |env| {
        let outcome = inner.hub.borrow_mut().wait_timer_fired(&id, wait, reason);
        if let Some(outcome) = outcome {
          resolve_wait(env, &inner.side, wait, &outcome);
        }
      })?;
    }
    Ok(())
  }
}

fn read_shell_registration(env: &Env, object: &Object) -> Result<ShellRegistration> {
  let bag = args::Bag::new(env, object, "registration");
  let (shell_id, command, cwd) = (
    bag.string("shellId")?,
    bag.string("command")?,
    bag.string("cwd")?,
  );
  let start_time = match bag.get("startTime")? {
    value if matches!(value.get_type()?, ValueType::Undefined | ValueType::Null) => js::wall_ms(),
    value => args::time_ms(env, &value, "registration.startTime", "property")?,
  };
  Ok(ShellRegistration {
    shell_id,
    command,
    cwd,
    start_time,
    output_path: bag.string("outputPath")?,
    pid: args::optional_pid_field(env, object, "registration.pid")?,
    todo_work_chain_id: bag.opt_string("todoWorkChainId")?,
  })
}

/// A settle time: a finite time in `0..=8.64e15` like `startTime` (NaN would
/// leave the sidecar saying `running`: it cannot be written with such a time).
fn end_time_arg(env: &Env, value: &Unknown) -> Result<f64> {
  args::time_ms(env, value, "endTime", "argument")
}

#[napi]
impl BackgroundShellRegistry {
  #[napi(constructor, catch_unwind)]
  pub fn new(env: Env, this: This<Unknown>) -> Result<Self> {
    args::require_new::<&BackgroundShellRegistry>(&env, &this, "BackgroundShellRegistry")?;
    Ok(Self {
      inner: Rc::new(ShellInner::new(Side::new(&env, &this)?)),
    })
  }

  #[napi(catch_unwind)]
  pub fn has_running_entries(&self) -> bool {
    self.inner.hub.borrow().registry().has_running_entries()
  }

  /// Settles a running shell `completed`.
  #[napi(
    catch_unwind,
    ts_args_type = "id: string, exitCode: number, endTime: number"
  )]
  pub fn complete(
    &self,
    env: Env,
    id: Unknown,
    exit_code: Unknown,
    end_time: Unknown,
  ) -> Result<()> {
    let id = args::string(&env, &id, "id")?;
    let code = args::exit_code(&env, &exit_code)?;
    let end_time = end_time_arg(&env, &end_time)?;
    self
      .inner
      .transition(&env, |r| r.complete(&id, code, end_time));
    self.inner.hub.borrow().stop_run_if_settled(&id);
    Ok(())
  }

  /// Settles a running shell `failed` with this error text.
  #[napi(
    catch_unwind,
    ts_args_type = "id: string, error: string, endTime: number"
  )]
  pub fn fail(&self, env: Env, id: Unknown, error: Unknown, end_time: Unknown) -> Result<()> {
    let id = args::string(&env, &id, "id")?;
    let error = args::string(&env, &error, "error")?;
    let end_time = end_time_arg(&env, &end_time)?;
    self
      .inner
      .transition(&env, |r| r.fail(&id, &error, end_time));
    self.inner.hub.borrow().stop_run_if_settled(&id);
    Ok(())
  }

  /// Settles a running shell `cancelled` (sidecar first, then the abort).
  #[napi(catch_unwind, ts_args_type = "id: string, endTime: number")]
  pub fn cancel(&self, env: Env, id: Unknown, end_time: Unknown) -> Result<()> {
    let id = args::string(&env, &id, "id")?;
    let end_time = end_time_arg(&env, &end_time)?;
    self.inner.transition(&env, |r| r.cancel(&id, end_time));
    Ok(())
  }

  /// Only aborts a running shell; its spawn's settle path records the outcome.
  #[napi(catch_unwind, ts_args_type = "id: string")]
  pub fn request_cancel(&self, env: Env, id: Unknown) -> Result<()> {
    let id = args::string(&env, &id, "id")?;
    self.inner.transition(&env, |r| r.request_cancel(&id));
    Ok(())
  }

  /// Shutdown: cancels every running shell, notifications suppressed.
  #[napi(catch_unwind)]
  pub fn abort_all(&self, env: Env) -> Result<()> {
    self.inner.transition(&env, |r| r.abort_all(js::wall_ms()));
    Ok(())
  }

  /// Removes every entry without killing anything (their children stay
  /// tracked for host-exit cleanup) and fires status-change with the first.
  #[napi(catch_unwind)]
  pub fn reset(&self, env: Env) -> Result<()> {
    self.inner.transition(&env, ShellRegistry::reset);
    Ok(())
  }

  /// Replays the terminal entries that were never notified, oldest first (`lib/side.js` calls
  /// it once a notification callback is installed).
  #[napi(catch_unwind, js_name = "__replayNotifications", skip_typescript)]
  pub fn replay_notifications(&self, env: Env) {
    let ids = self.inner.hub.borrow().registry().replay_ids();
    self
      .inner
      .transition(&env, |_| ids.into_iter().map(ShellEffect::Notify).collect());
  }
}

registry_surface!(BackgroundShellRegistry, wait_id = "shellId", id = "id");

mod terminal;
