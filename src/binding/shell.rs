//! `BackgroundShellRegistry` (API.md §4, CONTRACT.md §2.13): the binding of
//! `core::shell::ShellRegistry`.
//!
//! Every transition of a shell registry happens on the JavaScript thread (the
//! runners of `executeBackground` hand their outcome over through a
//! threadsafe function), so its state sits in a `RefCell` next to the
//! JavaScript objects. No borrow is held across a call into JavaScript.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::args;
use super::js::{
  self, call_method_guarded, call_value, clear_slot_if_installed, optional_callback,
  persist_object, release, replace_slot, set_callback_slot, set_opt, Persistent,
};
use crate::core::shell::{
  ShellEffect, ShellEntry, ShellRegistration, ShellRegistry, ShellSettled, ShellVerdict,
  MAX_RETAINED_TERMINAL_SHELLS,
};

/// A shell's JavaScript objects.
struct ShellJsEntry {
  object: Persistent,
  controller: Option<Persistent>,
}

#[derive(Default)]
struct ShellCallbacks {
  notification: Option<Persistent>,
  register: Option<Persistent>,
  status_change: Option<Persistent>,
}

/// The registry state and the JavaScript objects it hands out.
pub(crate) struct ShellInner {
  core: RefCell<ShellRegistry>,
  entries: RefCell<HashMap<String, ShellJsEntry>>,
  callbacks: RefCell<ShellCallbacks>,
  /// The processes `executeBackground` started, by shell id, until they settle.
  #[cfg(unix)]
  processes: RefCell<HashMap<String, std::sync::Arc<crate::core::shell::ShellRun>>>,
}

impl ShellInner {
  fn new() -> Self {
    Self {
      core: RefCell::new(ShellRegistry::new(
        MAX_RETAINED_TERMINAL_SHELLS,
        std::process::id(),
      )),
      entries: RefCell::default(),
      callbacks: RefCell::default(),
      #[cfg(unix)]
      processes: RefCell::default(),
    }
  }

  /// Links a started process to its entry (see [`Self::stop_process_if_settled`]).
  #[cfg(unix)]
  pub(crate) fn attach_process(&self, id: &str, run: std::sync::Arc<crate::core::shell::ShellRun>) {
    self.processes.borrow_mut().insert(id.to_owned(), run);
  }

  /// Unlinks a process that settled.
  #[cfg(unix)]
  pub(crate) fn detach_process(
    &self,
    id: &str,
    run: &std::sync::Arc<crate::core::shell::ShellRun>,
  ) {
    let mut processes = self.processes.borrow_mut();
    if processes
      .get(id)
      .is_some_and(|p| std::sync::Arc::ptr_eq(p, run))
    {
      processes.remove(id);
    }
  }

  /// `complete()`/`fail()` from JavaScript settled a shell whose process we
  /// started: the process is stopped too (SIGTERM to its tree, SIGKILL 200 ms
  /// later), never left running unreachable.
  fn stop_process_if_settled(&self, id: &str) {
    #[cfg(unix)]
    {
      if self.entry(id).is_some_and(|e| e.is_running()) {
        return;
      }
      let run = self.processes.borrow().get(id).cloned();
      if let Some(run) = run {
        run.cancel();
      }
    }
    #[cfg(not(unix))]
    let _ = id;
  }

  pub(crate) fn entry(&self, id: &str) -> Option<ShellEntry> {
    self.core.borrow().get(id).cloned()
  }

  fn object<'a>(&self, env: &'a Env, id: &str) -> Option<Object<'a>> {
    let entries = self.entries.borrow();
    entries.get(id).and_then(|e| e.object.get_value(env).ok())
  }

  /// The entry's object, refreshed from the registry (or as last written, once
  /// the entry has left the registry).
  fn synced<'a>(&self, env: &'a Env, id: &str) -> Option<Object<'a>> {
    let mut object = self.object(env, id)?;
    if let Some(entry) = self.entry(id) {
      if let Err(error) = write_shell_entry(&mut object, &entry) {
        tracing::warn!(%error, id, "taskstream: could not update a shell entry object");
      }
    }
    Some(object)
  }

  fn callback<'a>(
    &self,
    env: &'a Env,
    pick: impl FnOnce(&ShellCallbacks) -> Option<&Persistent>,
  ) -> Option<Object<'a>> {
    let callbacks = self.callbacks.borrow();
    pick(&callbacks).and_then(|f| f.get_value(env).ok())
  }

  /// A `pid` the caller wrote on its object reaches the registry (and so the notification).
  fn read_caller_pid(&self, env: &Env, id: &str) {
    let Some(object) = self.object(env, id) else {
      return;
    };
    let pid = object
      .get_named_property::<Unknown>("pid")
      .ok()
      .filter(|v| v.get_type().ok() == Some(ValueType::Number))
      .and_then(|v| unsafe { v.cast::<f64>() }.ok())
      .filter(|n| *n > 0.0 && n.fract() == 0.0 && *n <= u32::MAX as f64)
      .map(|n| n as u32);
    self.core.borrow_mut().set_pid(id, pid);
  }

  /// Carries out effects in order. Objects of removed entries are released
  /// only after every effect ran (status-change after `reset` still needs one).
  pub(crate) fn run(&self, env: &Env, effects: Vec<ShellEffect>) {
    let mut removed = Vec::new();
    for effect in effects {
      match effect {
        ShellEffect::Registered(id) => {
          if let (Some(entry), Some(cb)) = (
            self.synced(env, &id),
            self.callback(env, |c| c.register.as_ref()),
          ) {
            call_value(env, cb, "register", entry);
          }
        }
        ShellEffect::StatusChanged(id) => {
          let entry = id.and_then(|id| self.synced(env, &id));
          if let Some(cb) = self.callback(env, |c| c.status_change.as_ref()) {
            match entry {
              Some(entry) => call_value(env, cb, "statusChange", entry),
              None => call_value(env, cb, "statusChange", ()),
            }
          }
        }
        ShellEffect::Notify(id) => self.notify(env, &id),
        ShellEffect::Abort(id) => self.abort(env, &id),
        ShellEffect::Removed(ids) => removed.extend(ids),
      }
    }
    self.forget(env, &removed);
  }

  /// §2.13 emitNotification, behind the registry's `notified` gate.
  fn notify(&self, env: &Env, id: &str) {
    self.read_caller_pid(env, id);
    let cb = self.callback(env, |c| c.notification.as_ref());
    let built = self.core.borrow_mut().take_notification(id, cb.is_some());
    self.synced(env, id);
    let (Some(cb), Some(n)) = (cb, built) else {
      return;
    };
    let meta = (|| -> Result<Object> {
      let mut meta = Object::new(env)?;
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
      Ok(meta) => call_value(
        env,
        cb,
        "notification",
        FnArgs::from((n.display_text, n.model_text, meta)),
      ),
      Err(error) => tracing::warn!(%error, "taskstream: could not build shell notification meta"),
    }
  }

  fn abort(&self, env: &Env, id: &str) {
    self.synced(env, id);
    let controller = {
      let entries = self.entries.borrow();
      entries
        .get(id)
        .and_then(|e| e.controller.as_ref())
        .and_then(|c| c.get_value(env).ok())
    };
    if let Some(controller) = controller.and_then(|c| c.create_ref::<false>().ok()) {
      call_method_guarded(env, &controller, "abort");
      release(env, controller);
    }
  }

  fn forget(&self, env: &Env, ids: &[String]) {
    let removed: Vec<ShellJsEntry> = {
      let mut entries = self.entries.borrow_mut();
      ids.iter().filter_map(|id| entries.remove(id)).collect()
    };
    for entry in removed {
      release(env, entry.object);
      if let Some(controller) = entry.controller {
        release(env, controller);
      }
    }
  }

  /// `register` for a caller's object or one `executeBackground` built.
  pub(crate) fn register(
    &self,
    env: &Env,
    object: &Object,
    reg: ShellRegistration,
    controller: Option<Persistent>,
  ) -> Result<()> {
    let id = reg.shell_id.clone();
    self
      .core
      .borrow()
      .check_can_register(&id)
      .map_err(Error::from_reason)?;
    let mut object = *object;
    object.set_named_property("id", id.as_str())?;
    object.set_named_property("kind", "shell")?;
    object.set_named_property("description", reg.command.as_str())?;
    object.set_named_property("outputFile", reg.output_path.as_str())?;
    object.set_named_property("outputOffset", 0)?;
    object.set_named_property("notified", false)?;
    self.entries.borrow_mut().insert(
      id.clone(),
      ShellJsEntry {
        object: object.create_ref::<false>()?,
        controller,
      },
    );
    let effects = self.core.borrow_mut().register(reg);
    match effects {
      Ok(effects) => {
        self.run(env, effects);
        Ok(())
      }
      Err(message) => {
        self.forget(env, &[id]);
        Err(Error::from_reason(message))
      }
    }
  }

  pub(crate) fn complete(&self, env: &Env, id: &str, exit_code: i32, end_time: f64) {
    let effects = self.core.borrow_mut().complete(id, exit_code, end_time);
    self.run(env, effects);
  }

  pub(crate) fn fail(&self, env: &Env, id: &str, error: &str, end_time: f64) {
    let effects = self.core.borrow_mut().fail(id, error, end_time);
    self.run(env, effects);
  }

  pub(crate) fn cancel(&self, env: &Env, id: &str, end_time: f64) {
    let effects = self.core.borrow_mut().cancel(id, end_time);
    self.run(env, effects);
  }

  /// Follows the run of the entry `id` just registered; see `finish_run`.
  pub(crate) fn track_run(&self, id: &str) -> u64 {
    self.core.borrow_mut().track_run(id)
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
    end_time: f64,
  ) -> ShellSettled {
    let (effects, settled) = self
      .core
      .borrow_mut()
      .finish_run(id, token, verdict, end_time);
    self.run(env, effects);
    settled
  }

  pub(crate) fn entry_value(&self, env: &Env, id: &str) -> Option<Unknown<'static>> {
    self.synced(env, id).map(|o| args::out(env, &o))
  }
}

/// Copies registry state onto a shell entry object.
fn write_shell_entry(object: &mut Object, e: &ShellEntry) -> Result<()> {
  object.set_named_property("id", e.id.as_str())?;
  object.set_named_property("shellId", e.id.as_str())?;
  object.set_named_property("kind", "shell")?;
  object.set_named_property("status", e.status.as_str())?;
  set_opt(object, "exitCode", e.exit_code)?;
  set_opt(object, "error", e.error.as_deref())?;
  set_opt(object, "endTime", e.end_time)?;
  object.set_named_property("notified", e.notified)?;
  Ok(())
}

/// The registry of background shells: the same shape as the TypeScript
/// `BackgroundShellRegistry`. It has no concurrency cap and keeps the 32
/// newest terminal entries.
#[napi]
pub struct BackgroundShellRegistry {
  pub(crate) inner: Rc<ShellInner>,
}

impl BackgroundShellRegistry {
  /// A registry for Rust callers (the process-wide one is made through this
  /// and napi-rs's factory path, which skips the JavaScript constructor).
  pub(crate) fn create() -> Self {
    Self {
      inner: Rc::new(ShellInner::new()),
    }
  }
}

fn read_shell_registration(env: &Env, object: &Object) -> Result<ShellRegistration> {
  let string = |key: &str| {
    args::string(
      env,
      &args::field(object, key)?,
      &format!("registration.{key}"),
    )
  };
  let number = |key: &str| -> Result<Option<f64>> {
    let value = args::field(object, key)?;
    match value.get_type()? {
      ValueType::Undefined | ValueType::Null => Ok(None),
      ValueType::Number => Ok(Some(unsafe { value.cast::<f64>() }?)),
      _ => Err(args::type_error(
        env,
        format!(
          "The \"registration.{key}\" property must be of type number. {}",
          args::received(&value)
        ),
      )),
    }
  };
  let (shell_id, command, cwd) = (string("shellId")?, string("command")?, string("cwd")?);
  let start_time = match args::field(object, "startTime")? {
    value if matches!(value.get_type()?, ValueType::Undefined | ValueType::Null) => js::wall_ms(),
    value => args::time_ms(env, &value, "registration.startTime", "property")?,
  };
  Ok(ShellRegistration {
    shell_id,
    command,
    cwd,
    start_time,
    output_path: string("outputPath")?,
    pid: number("pid")?
      .filter(|n| *n > 0.0 && n.fract() == 0.0)
      .map(|n| n as u32),
    todo_work_chain_id: args::optional_string_field(
      env,
      object,
      "todoWorkChainId",
      "registration.todoWorkChainId",
    )?,
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
    Ok(Self::create())
  }

  /// Registers a shell and returns the very object given (with `id`, `kind`,
  /// `description`, `outputFile`, `outputOffset` and `notified` filled in);
  /// writes its status sidecar. A duplicate id throws and changes nothing.
  #[napi(
    catch_unwind,
    ts_args_type = "registration: ShellTaskRegistration",
    ts_return_type = "ShellTask"
  )]
  pub fn register(&self, env: Env, registration: Unknown) -> Result<Unknown<'static>> {
    let object = args::object(&env, &registration, "registration")?;
    let reg = read_shell_registration(&env, &object)?;
    let controller = persist_object(&args::field(&object, "abortController")?)?;
    self.inner.register(&env, &object, reg, controller)?;
    Ok(args::out(&env, &registration))
  }

  /// The entry object, or `undefined`.
  #[napi(
    catch_unwind,
    ts_args_type = "id: string",
    ts_return_type = "ShellTask | undefined"
  )]
  pub fn get(&self, env: Env, id: Unknown) -> Result<Unknown<'static>> {
    let id = args::string(&env, &id, "id")?;
    match self.inner.entry_value(&env, &id) {
      Some(value) => Ok(value),
      None => args::undefined(&env),
    }
  }

  /// Every entry, in insertion order.
  #[napi(catch_unwind, ts_return_type = "ShellTask[]")]
  pub fn get_all(&self, env: Env) -> Result<Unknown<'static>> {
    let mut array = env.create_array(0)?;
    let ids = self.inner.core.borrow().ids();
    let mut i = 0;
    for id in ids {
      if let Some(object) = self.inner.synced(&env, &id) {
        array.set(i, object)?;
        i += 1;
      }
    }
    Ok(args::out(&env, &array))
  }

  #[napi(catch_unwind)]
  pub fn has_running_entries(&self) -> bool {
    self.inner.core.borrow().has_running_entries()
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
    let code = args::integer_in_range(
      &env,
      &exit_code,
      "exitCode",
      "argument",
      i32::MIN as f64,
      i32::MAX as f64,
    )? as i32;
    let end_time = end_time_arg(&env, &end_time)?;
    self.inner.complete(&env, &id, code, end_time);
    self.inner.stop_process_if_settled(&id);
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
    self.inner.fail(&env, &id, &error, end_time);
    self.inner.stop_process_if_settled(&id);
    Ok(())
  }

  /// Settles a running shell `cancelled` (sidecar first, then the abort).
  #[napi(catch_unwind, ts_args_type = "id: string, endTime: number")]
  pub fn cancel(&self, env: Env, id: Unknown, end_time: Unknown) -> Result<()> {
    let id = args::string(&env, &id, "id")?;
    let end_time = end_time_arg(&env, &end_time)?;
    self.inner.cancel(&env, &id, end_time);
    Ok(())
  }

  /// Only aborts a running shell; its spawn's settle path records the outcome.
  #[napi(catch_unwind, ts_args_type = "id: string")]
  pub fn request_cancel(&self, env: Env, id: Unknown) -> Result<()> {
    let id = args::string(&env, &id, "id")?;
    let effects = self.inner.core.borrow().request_cancel(&id);
    self.inner.run(&env, effects);
    Ok(())
  }

  /// Shutdown: cancels every running shell, notifications suppressed.
  #[napi(catch_unwind)]
  pub fn abort_all(&self, env: Env) -> Result<()> {
    let effects = self.inner.core.borrow_mut().abort_all(js::wall_ms());
    self.inner.run(&env, effects);
    Ok(())
  }

  /// Removes every entry without killing anything (their children stay
  /// tracked for host-exit cleanup) and fires status-change with the first.
  #[napi(catch_unwind)]
  pub fn reset(&self, env: Env) -> Result<()> {
    let effects = self.inner.core.borrow_mut().reset();
    self.inner.run(&env, effects);
    Ok(())
  }

  /// Installs the notification callback (`undefined` clears it) and replays
  /// terminal entries that were never notified, oldest first.
  #[napi(
    catch_unwind,
    ts_args_type = "cb?: (displayText: string, modelText: string, meta: ShellNotificationMeta) => void"
  )]
  pub fn set_notification_callback(&self, env: Env, cb: Unknown) -> Result<()> {
    let cb = optional_callback(&env, &cb, "cb")?;
    let installed = cb.is_some();
    replace_slot(
      &env,
      &mut self.inner.callbacks.borrow_mut().notification,
      cb,
    );
    if installed {
      let ids = self.inner.core.borrow().replay_ids();
      self
        .inner
        .run(&env, ids.into_iter().map(ShellEffect::Notify).collect());
    }
    Ok(())
  }

  #[napi(catch_unwind, ts_args_type = "cb?: (entry: ShellTask) => void")]
  pub fn set_register_callback(&self, env: Env, cb: Unknown) -> Result<()> {
    set_callback_slot(&env, &mut self.inner.callbacks.borrow_mut().register, &cb)
  }

  #[napi(catch_unwind, ts_args_type = "cb?: (entry?: ShellTask) => void")]
  pub fn set_status_change_callback(&self, env: Env, cb: Unknown) -> Result<()> {
    set_callback_slot(
      &env,
      &mut self.inner.callbacks.borrow_mut().status_change,
      &cb,
    )
  }

  /// Clears the status-change callback only if `cb` is the one installed.
  #[napi(catch_unwind, ts_args_type = "cb: (entry?: ShellTask) => void")]
  pub fn clear_status_change_callback(&self, env: Env, cb: Unknown) -> Result<()> {
    clear_slot_if_installed(
      &env,
      &mut self.inner.callbacks.borrow_mut().status_change,
      &cb,
    )
  }
}
