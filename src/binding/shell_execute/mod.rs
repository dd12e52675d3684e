//! `executeBackground()` (API.md §4, CONTRACT.md §2.15): validate, spawn,
//! register, stream to the output file from Rust threads, and settle on the
//! JavaScript thread once the file is flushed and closed.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::{Arc, Weak};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;

use super::args;
use super::js::{self, release, Persistent};
use super::pending::{new_promise, on_abort, remove_abort_listener, KeepAlive};
use super::shell::{BackgroundShellRegistry, ShellInner};
use super::wait::signal_aborted;
use crate::core::end::TaskEnd;
use crate::core::guards::strip_trailing_background_amp;
use crate::core::ids::{random_hex, shell_id_problem};
use crate::core::launch::{
  default_remove_env, launch_shell, LaunchError, LaunchedShell, ShellCallbacks, ShellCommand, Term,
};
use crate::core::process;
use crate::core::shell::RunSignal;
use crate::core::shell::{
  ShellOutcome, ShellRegistration, ShellRun, ShellSettled, ShellVerdict, DEFAULT_MAX_OUTPUT_BYTES,
};
use crate::core::text::{ecma_trim, status_file_path_for};
use crate::core::wait::{MAX_SETTLE_MS, MIN_SETTLE_MS};

/// `executeBackground()` options after validation.
#[cfg_attr(not(unix), allow(dead_code))] // `persist` is refused before use off Unix
struct Options {
  command: String,
  cwd: String,
  output_dir: String,
  env: Vec<(String, String)>,
  max_output_bytes: u64,
  shell_id: Option<String>,
  settle_ms: Option<u64>,
  /// `terminal` (API.md §6.5): the size of its pseudo-terminal.
  terminal: Option<crate::core::terminal::TerminalSize>,
  /// `persist` (docs/persistence.md).
  persist: Option<super::persist::PersistOptions>,
}

fn parse_options(env: &Env, o: &Object) -> Result<Options> {
  let command = args::string(env, &args::field(o, "command")?, "options.command")?;
  if ecma_trim(&command).is_empty() {
    return Err(args::type_error(
      env,
      "The \"options.command\" property must be a non-empty command".into(),
    ));
  }
  args::no_nul(env, &command, "options.command")?;
  let cwd = args::string(env, &args::field(o, "cwd")?, "options.cwd")?;
  if !Path::new(&cwd).is_absolute() {
    return Err(args::type_error(
      env,
      format!("The \"options.cwd\" property must be an absolute path. Received '{cwd}'"),
    ));
  }
  args::no_nul(env, &cwd, "options.cwd")?;
  let shell_id = args::optional_string_field(env, o, "shellId", "options.shellId")?;
  if let Some(problem) = shell_id.as_deref().and_then(shell_id_problem) {
    return Err(args::value_error(
      env,
      format!(
        "The \"options.shellId\" property {problem}: it becomes the file name shell-<shellId>.output. Received {}",
        args::quoted(shell_id.as_deref().unwrap_or_default())
      ),
    ));
  }
  let output_dir = args::string(env, &args::field(o, "outputDir")?, "options.outputDir")?;
  if output_dir.is_empty() {
    return Err(args::value_error(
      env,
      "The \"options.outputDir\" property must be a non-empty path. Received ''".into(),
    ));
  }
  args::no_nul(env, &output_dir, "options.outputDir")?;
  let terminal = super::terminal::parse_terminal_option(env, o)?;
  let persist = super::persist::parse_persist_option(env, o, terminal.is_some())?;
  Ok(Options {
    command,
    cwd,
    output_dir,
    env: args::env_record(env, &args::field(o, "env")?, "options.env")?,
    max_output_bytes: args::optional_integer_field(
      env,
      o,
      "maxOutputBytes",
      "options.maxOutputBytes",
      1.0,
      9_007_199_254_740_991.0,
    )?
    .map_or(DEFAULT_MAX_OUTPUT_BYTES, |n| n as u64),
    shell_id,
    terminal,
    persist,
    settle_ms: args::optional_integer_field(
      env,
      o,
      "settleMs",
      "options.settleMs",
      MIN_SETTLE_MS as f64,
      MAX_SETTLE_MS as f64,
    )?
    .map(|n| n as u64),
  })
}

/// The registry option, or the process-wide one.
fn registry_inner(env: &Env, value: &Unknown) -> Result<Rc<ShellInner>> {
  if args::is_undefined(value) {
    return default_registry(env);
  }
  let instance =
    unsafe { ClassInstance::<BackgroundShellRegistry>::from_napi_value(env.raw(), value.raw()) }
      .map_err(|_| {
        args::type_error(
          env,
          format!(
            "The \"options.registry\" property must be an instance of BackgroundShellRegistry. {}",
            args::received(value)
          ),
        )
      })?;
  Ok(Rc::clone(&instance.inner))
}

thread_local! {
  /// The process-wide registry of this JavaScript thread.
  static DEFAULT_REGISTRY: RefCell<Option<(Persistent, Rc<ShellInner>)>> = const { RefCell::new(None) };
}

fn default_registry_instance<'a>(env: &'a Env) -> Result<(Object<'a>, Rc<ShellInner>)> {
  if let Some((object, inner)) = DEFAULT_REGISTRY.with(|d| {
    d.borrow()
      .as_ref()
      .and_then(|(object, inner)| object.get_value(env).ok().map(|o| (o, Rc::clone(inner))))
  }) {
    return Ok((object, inner));
  }
  let instance = BackgroundShellRegistry::create().into_instance(env)?;
  let inner = Rc::clone(&instance.inner);
  let object: Object = unsafe { Object::from_napi_value(env.raw(), instance.value) }?;
  let persistent = object.create_ref::<false>()?;
  DEFAULT_REGISTRY.with(|d| *d.borrow_mut() = Some((persistent, Rc::clone(&inner))));
  Ok((object, inner))
}

fn default_registry(env: &Env) -> Result<Rc<ShellInner>> {
  default_registry_instance(env).map(|(_, inner)| inner)
}

/// The process-wide registry `executeBackground` uses when no `registry` is given.
#[napi(catch_unwind, ts_return_type = "BackgroundShellRegistry")]
pub fn get_default_background_shell_registry(env: Env) -> Result<Unknown<'static>> {
  let (object, _) = default_registry_instance(&env)?;
  Ok(args::out(&env, &object))
}

/// An optional `AbortSignal`: aborted already → its reason is thrown, as
/// `signal.throwIfAborted()` does.
fn check_signal<'a>(env: &Env, value: &Unknown<'a>) -> Result<Option<Object<'a>>> {
  if args::is_undefined(value) {
    return Ok(None);
  }
  let signal = args::object(env, value, "options.signal")?;
  let has_listener = signal
    .get_named_property::<Unknown>("addEventListener")?
    .get_type()?
    == ValueType::Function;
  if !has_listener {
    return Err(args::type_error(
      env,
      "The \"options.signal\" property must be an instance of AbortSignal".into(),
    ));
  }
  let throw_if_aborted: Function<(), Unknown> = signal.get_named_property("throwIfAborted")?;
  throw_if_aborted.bind(signal)?.call(())?;
  Ok(Some(signal))
}

fn check_output_dir(dir: &str) -> std::result::Result<(), String> {
  std::fs::create_dir_all(dir)
    .map_err(|e| format!("The \"outputDir\" directory {dir} cannot be created: {e}"))?;
  #[cfg(unix)]
  nix::unistd::access(
    dir,
    nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
  )
  .map_err(|e| format!("The \"outputDir\" directory {dir} is not writable: {e}"))?;
  Ok(())
}

/// Starts `options.command` as a managed background shell and returns its
/// handle at once. Output lands, ANSI-stripped, in
/// `<outputDir>/shell-<shellId>.output` as it arrives; `done` resolves after
/// the shell settled and the file is flushed and closed. If that file cannot
/// be opened (a symlink, FIFO or directory at its path), nothing runs: the
/// shell is registered and fails with `Cannot open output file <path>: <OS
/// error>`, as when the spawn fails.
#[napi(
  catch_unwind,
  ts_args_type = "options: ExecuteBackgroundOptions",
  ts_return_type = "BackgroundShellHandle"
)]
pub fn execute_background(env: Env, options: Unknown) -> Result<Unknown<'static>> {
  let o = args::object(&env, &options, "options")?;
  let opts = parse_options(&env, &o)?;
  let inner = registry_inner(&env, &args::field(&o, "registry")?)?;
  let signal = check_signal(&env, &args::field(&o, "signal")?)?;

  let trimmed = ecma_trim(&opts.command);
  let command = strip_trailing_background_amp(trimmed);
  let stripped_trailing_amp = command != trimmed;
  if stripped_trailing_amp {
    tracing::debug!(
      "Stripped trailing & from background command — the shell registry handles backgrounding"
    );
  }
  let shell_id = opts
    .shell_id
    .clone()
    .unwrap_or_else(|| format!("bg_{}", random_hex(8)));
  if inner.entry(&shell_id).is_some() {
    return Err(Error::from_reason(format!(
      "Background shell \"{shell_id}\" is already registered."
    )));
  }
  check_output_dir(&opts.output_dir).map_err(Error::from_reason)?;
  // A persisted shell: its state directory checked and its lock taken
  // before anything starts (a failure throws).
  #[cfg(unix)]
  let persisted = match &opts.persist {
    Some(persist) => {
      crate::core::persist::records::check_task_id(&shell_id)
        .map_err(|e| Error::from_reason(e.to_string()))?;
      Some(super::persist::prepare(persist, &shell_id)?)
    }
    None => None,
  };
  #[cfg(not(unix))]
  let persisted: Option<std::convert::Infallible> = None;
  let output_path = Path::new(&opts.output_dir)
    .join(format!("shell-{shell_id}.output"))
    .to_string_lossy()
    .into_owned();
  let status_path = status_file_path_for(&output_path);

  // Every JavaScript object the shell needs comes before any process: a
  // throwing `AbortController`, a stubbed `setInterval` or a signal whose
  // `addEventListener` throws end the call while nothing runs yet.
  let controller = new_abort_controller(&env)?;
  let controller_signal: Object = controller.get_named_property("signal")?;
  let (done, resolve) = new_promise(&env)?;
  let mut registration = Object::new(&env)?;
  registration.set_named_property("shellId", shell_id.as_str())?;
  registration.set_named_property("command", command.as_str())?;
  registration.set_named_property("cwd", opts.cwd.as_str())?;
  registration.set_named_property("status", "running")?;
  registration.set_named_property("outputPath", output_path.as_str())?;
  registration.set_named_property("abortController", controller)?;
  let mut handle = Object::new(&env)?;
  handle.set_named_property("shellId", shell_id.as_str())?;
  handle.set_named_property("outputPath", output_path.as_str())?;
  handle.set_named_property("statusPath", status_path.as_str())?;
  handle.set_named_property("command", command.as_str())?;
  handle.set_named_property("strippedTrailingAmp", stripped_trailing_amp)?;
  handle.set_named_property("done", done)?;
  // Aborting our controller cancels the run once there is one (an abort
  // before that, from a register callback, is checked right after the start).
  // The listener lives as long as the controller (it is not removed), so it
  // holds the run weakly and we keep no reference to it: the run, its
  // threadsafe function and the listener are freed once the shell settled
  // and the entry left the registry.
  let run_slot: Rc<RefCell<Weak<ShellRun>>> = Rc::default();
  let controller_listener = on_abort(&env, &controller_signal, {
    let run_slot = Rc::clone(&run_slot);
    let (inner, id) = (Rc::downgrade(&inner), shell_id.clone());
    move |_env| {
      if let Some(run) = run_slot.borrow().upgrade() {
        cancel_run(&run, &inner, &id);
      }
    }
  })?;
  release(&env, controller_listener);
  let keep_alive = KeepAlive::start(&env)?;
  let caller_signal = (|| -> Result<Option<CallerSignal>> {
    handle.set_named_property("unref", keep_alive.method(&env, "unref")?)?;
    handle.set_named_property("ref", keep_alive.method(&env, "ref")?)?;
    let Some(signal) = signal else {
      return Ok(None);
    };
    // The listener reaches our controller through a slot the settle empties,
    // so nothing it captured outlives the shell.
    let controller_slot = Rc::new(RefCell::new(Some(controller.create_ref::<false>()?)));
    let listener = on_abort(&env, &signal, {
      let controller_slot = Rc::clone(&controller_slot);
      move |env| {
        if let Some(controller) = controller_slot.borrow().as_ref() {
          js::call_method_guarded(env, controller, "abort");
        }
      }
    });
    let listener = match listener {
      Ok(listener) => listener,
      Err(error) => {
        if let Some(controller) = controller_slot.borrow_mut().take() {
          release(&env, controller);
        }
        return Err(error);
      }
    };
    Ok(Some(CallerSignal {
      signal: signal.create_ref::<false>()?,
      listener,
      controller: controller_slot,
    }))
  })();
  let caller_signal = match caller_signal {
    Ok(caller_signal) => caller_signal,
    Err(error) => {
      keep_alive.stop(&env);
      return Err(error);
    }
  };
  let (resolve, controller_ref) = match controller.create_ref::<false>() {
    Ok(controller_ref) => (resolve, controller_ref),
    Err(error) => {
      keep_alive.stop(&env);
      return Err(error);
    }
  };

  // The output file is opened first: when it cannot be (a symlink, a FIFO or
  // a directory at its path), nothing is spawned and the entry fails with the
  // open error, as on a spawn failure (§2.15 step 7). A persisted shell's
  // keeper opens it (and fails its handshake if it cannot).
  let now = js::wall_ms();
  let remove_env = default_remove_env();
  let request = ShellCommand {
    command: &command,
    cwd: Path::new(&opts.cwd),
    env: &opts.env,
    remove_env: &remove_env,
    term: Term::Shell,
    terminal: opts.terminal,
  };
  let launched = match persisted {
    #[cfg(unix)]
    Some(link) => {
      let persist = opts.persist.as_ref().expect("persist");
      // The task record keeps `settleMs` for a later host.
      let options = serde_json::json!({ "cwd": opts.cwd, "outputDir": opts.output_dir, "settleMs": opts.settle_ms });
      let kept = crate::core::launch::Kept {
        persist,
        link,
        id: &shell_id,
        description: &command,
        start_time: now,
        max_output_bytes: opts.max_output_bytes,
        options,
      };
      crate::core::launch::launch_kept_shell(&request, kept, Path::new(&output_path), &status_path)
    }
    #[cfg(not(unix))]
    Some(never) => match never {},
    None => launch_shell(&request, Path::new(&output_path), opts.max_output_bytes),
  };
  let pid = launched.as_ref().ok().map(LaunchedShell::pid);
  if let Some(group) = launched.as_ref().ok().and_then(LaunchedShell::group) {
    super::lifecycle::adopt(group);
  }
  // From here on a failure leaves nothing registered (the launched task
  // stops as its guard drops).
  let abandon = |env: &Env, caller_signal: Option<CallerSignal>| {
    keep_alive.stop(env);
    if let Some(caller) = caller_signal {
      caller.release(env);
    }
  };
  let with_pid = (|| -> Result<()> {
    registration.set_named_property("startTime", now)?;
    js::set_opt(&mut registration, "pid", pid)?;
    js::set_opt(&mut handle, "pid", pid)
  })();
  if let Err(error) = with_pid {
    abandon(&env, caller_signal);
    return Err(error);
  }
  let reg = ShellRegistration {
    shell_id: shell_id.clone(),
    command: command.clone(),
    cwd: opts.cwd.clone(),
    start_time: now,
    output_path: output_path.clone(),
    pid,
    todo_work_chain_id: None,
  };
  if let Err(error) = inner.register(&env, &registration, reg, Some(controller_ref)) {
    abandon(&env, caller_signal);
    return Err(error);
  }

  let settle = Settle {
    inner: Rc::clone(&inner),
    run: inner.track_run(&shell_id),
    shell_id: shell_id.clone(),
    resolve,
    keep_alive: keep_alive.clone(),
    signal: caller_signal,
    process: None,
  };
  match launched {
    Err(LaunchError { message, end }) => settle.failed_to_start(&env, &message, end, now),
    Ok(launched) => {
      let settle = Rc::new(RefCell::new(Some(settle)));
      let run = launched.start(opts.settle_ms, || {
        run_callbacks(&env, &settle, &inner, &shell_id)
      });
      attach_run(
        &env,
        &inner,
        &shell_id,
        &settle,
        &run_slot,
        &controller_signal,
        run,
        now,
      );
    }
  }
  Ok(args::out(&env, &handle))
}

type ShellTsfn =
  napi::threadsafe_function::ThreadsafeFunction<RunEvent, (), (), Status, false, true>;

/// The run's signal and settle callbacks, both through one weak threadsafe
/// function (see [`settle_function`]).
fn run_callbacks(
  env: &Env,
  settle: &Rc<RefCell<Option<Settle>>>,
  inner: &Rc<ShellInner>,
  shell_id: &str,
) -> std::result::Result<ShellCallbacks, String> {
  let tsfn = settle_function(
    env,
    Rc::clone(settle),
    Rc::clone(inner),
    shell_id.to_owned(),
  )
  .map_err(|error| error.reason)?;
  let tsfn = Arc::new(tsfn);
  let signals = Arc::clone(&tsfn);
  Ok((
    Box::new(move |signal| {
      let status = signals.call(
        RunEvent::Signal(signal),
        ThreadsafeFunctionCallMode::NonBlocking,
      );
      if status != Status::Ok {
        tracing::debug!(
          ?status,
          "taskstream: a shell signal after its host environment closed"
        );
      }
    }),
    Box::new(move |outcome| {
      let status = tsfn.call(
        RunEvent::Settled(outcome),
        ThreadsafeFunctionCallMode::NonBlocking,
      );
      if status != Status::Ok {
        tracing::warn!(
          ?status,
          "taskstream: a background shell settled after its host environment closed"
        );
      }
    }),
  ))
}

/// Links a started run to its entry, its controller and its settle; a run
/// that could not start fails the entry after `stop` ended the process.
#[allow(clippy::too_many_arguments)] // the pieces of one shell, all needed here
fn attach_run(
  env: &Env,
  inner: &Rc<ShellInner>,
  shell_id: &str,
  settle: &Rc<RefCell<Option<Settle>>>,
  run_slot: &Rc<RefCell<Weak<ShellRun>>>,
  controller_signal: &Object,
  run: std::result::Result<Arc<ShellRun>, LaunchError>,
  now: f64,
) {
  match run {
    Ok(run) => {
      *run_slot.borrow_mut() = Arc::downgrade(&run);
      inner.attach_process(shell_id, Arc::clone(&run));
      if let Some(settle) = settle.borrow_mut().as_mut() {
        settle.process = Some(Arc::clone(&run));
      }
      // A register or status-change callback may already have stopped the
      // shell (cancel, abortAll, complete, fail, an abort of its
      // controller) before the run existed: stop it now.
      let stopped =
        !inner.entry(shell_id).is_some_and(|e| e.is_running()) || signal_aborted(controller_signal);
      if stopped {
        run.cancel();
      }
    }
    Err(LaunchError { message, end }) => {
      if let Some(settle) = settle.borrow_mut().take() {
        settle.failed_to_start(env, &message, end, now);
      }
    }
  }
}

/// The entry's controller was aborted: the run is cancelled. A persisted
/// run first learns who cancelled it (the registry's `cancel()`,
/// `abortAll()`, …), for the end its keeper records.
fn cancel_run(run: &ShellRun, inner: &std::rc::Weak<ShellInner>, id: &str) {
  if run.is_persisted() {
    let via = inner.upgrade().and_then(|inner| {
      let entry = inner.entry(id)?;
      entry.end.or(entry.ending)?.via
    });
    if let Some(via) = via {
      run.cancel_via(via);
    }
  }
  run.cancel();
}

fn new_abort_controller<'a>(env: &'a Env) -> Result<Object<'a>> {
  let constructor: Function<(), Unknown> =
    env.get_global()?.get_named_property("AbortController")?;
  let controller = constructor.new_instance(())?;
  unsafe { controller.cast() }
}

/// The caller's `signal`, our listener on it, and the controller the listener
/// aborts: all released when the shell settles.
struct CallerSignal {
  signal: Persistent,
  listener: Persistent,
  controller: Rc<RefCell<Option<Persistent>>>,
}

impl CallerSignal {
  fn release(self, env: &Env) {
    remove_abort_listener(env, &self.signal, &self.listener);
    release(env, self.signal);
    release(env, self.listener);
    if let Some(controller) = self.controller.borrow_mut().take() {
      release(env, controller);
    }
  }
}

/// What the JavaScript thread needs when the shell settles.
struct Settle {
  inner: Rc<ShellInner>,
  shell_id: String,
  /// The registry's token for this run: `done` reports the status the
  /// registry settled the shell with, even once the entry has left it.
  run: u64,
  resolve: Persistent,
  keep_alive: KeepAlive,
  /// The caller's signal and our listener on it, removed at settle.
  signal: Option<CallerSignal>,
  /// The running process, unlinked from the registry at settle.
  process: Option<Arc<ShellRun>>,
}

impl Settle {
  /// §2.15 step 9, after the runner flushed and closed the file.
  fn settled(self, env: &Env, outcome: ShellOutcome) {
    // A persisted run ended when its keeper says.
    let end_time = outcome
      .recorded_end_time
      .map_or_else(js::wall_ms, |t| t as f64);
    self.settled_at(env, outcome, end_time);
  }

  /// [`Self::settled`] at a given end time (a recorded end's).
  fn settled_at(self, env: &Env, outcome: ShellOutcome, end_time: f64) {
    let settled = self.inner.finish_run(
      env,
      &self.shell_id,
      self.run,
      outcome.verdict(),
      outcome.end(),
      end_time,
    );
    self.finish(env, &outcome, &settled);
  }

  /// The spawn failed: the entry fails with the OS error text and `done` resolves.
  fn failed_to_start(self, env: &Env, error: &str, end: TaskEnd, now: f64) {
    let settled = self.inner.finish_run(
      env,
      &self.shell_id,
      self.run,
      ShellVerdict::Failed(error.to_owned()),
      end,
      now,
    );
    let outcome = ShellOutcome {
      exit: process::ExitStatusInfo {
        code: None,
        signal: None,
      },
      aborted: false,
      cancelled_via: None,
      spawn_or_io_error: Some(error.to_owned()),
      counters: Default::default(),
      recorded_end: None,
      recorded_end_time: None,
    };
    self.finish(env, &outcome, &settled);
  }

  fn finish(mut self, env: &Env, outcome: &ShellOutcome, settled: &ShellSettled) {
    self.keep_alive.stop(env);
    if let Some(process) = self.process.take() {
      // `screen()` keeps answering with the last screen until the entry is pruned.
      if let Some(screen) = process.screen() {
        self.inner.keep_last_screen(&self.shell_id, screen);
      }
      self.inner.detach_process(&self.shell_id, &process);
    }
    if let Some(caller) = self.signal.take() {
      caller.release(env);
    }
    match self.result(env, outcome, settled) {
      Ok(result) => {
        let resolve = self.resolve.get_value(env).and_then(|f| {
          let f = unsafe { Function::<Object, Unknown>::from_napi_value(env.raw(), f.raw()) }?;
          f.call(result)
        });
        if let Err(error) = resolve {
          tracing::warn!(%error, "taskstream: could not resolve a background shell's done promise");
        }
      }
      Err(error) => tracing::warn!(%error, "taskstream: could not build a background shell result"),
    }
    release(env, self.resolve);
    self
      .inner
      .resolve_waits_exit(env, &self.shell_id, settled.status);
  }

  /// `BackgroundShellResult` (CONTRACT.md §2.15): `status` and `error` as
  /// the registry settled the shell, the rest as the process ended.
  fn result<'a>(
    &self,
    env: &'a Env,
    outcome: &ShellOutcome,
    settled: &ShellSettled,
  ) -> Result<Object<'a>> {
    let counters = &outcome.counters;
    let mut result = Object::new(env)?;
    result.set_named_property("shellId", self.shell_id.as_str())?;
    result.set_named_property("status", settled.status.as_str())?;
    set_or_null(&mut result, "exitCode", outcome.exit.code)?;
    set_or_null(&mut result, "signal", outcome.exit.signal)?;
    js::set_opt(&mut result, "error", settled.error.as_deref())?;
    result.set_named_property("aborted", outcome.aborted)?;
    result.set_named_property("bytesRead", counters.bytes_read as f64)?;
    result.set_named_property("bytesWritten", counters.bytes_written as f64)?;
    result.set_named_property("bytesNotWritten", counters.bytes_not_written as f64)?;
    result.set_named_property("binaryDetected", counters.binary_detected)?;
    let end = settled.end.clone().unwrap_or_else(|| outcome.end());
    result.set_named_property("end", super::registry::end_object(env, &end)?)?;
    Ok(result)
  }
}

fn set_or_null(object: &mut Object, key: &str, value: Option<i32>) -> Result<()> {
  match value {
    Some(v) => object.set_named_property(key, v),
    None => object.set_named_property(key, Null),
  }
}

/// What a run hands to the JavaScript thread, in order, through one
/// threadsafe function (so a wait's `match` is delivered before the settle).
enum RunEvent {
  Signal(RunSignal),
  Settled(ShellOutcome),
}

/// The weak threadsafe function a runner calls with its signals and its outcome.
fn settle_function(
  env: &Env,
  settle: Rc<RefCell<Option<Settle>>>,
  inner: Rc<ShellInner>,
  shell_id: String,
) -> Result<ShellTsfn> {
  let noop = env.create_function_from_closure::<(), (), _>("taskstreamShellSettled", |_| Ok(()))?;
  noop
    .build_threadsafe_function::<RunEvent>()
    .weak::<true>()
    .build_callback(move |ctx| {
      match ctx.value {
        RunEvent::Signal(RunSignal::Wait(wait, outcome)) => {
          inner.resolve_wait(&ctx.env, &shell_id, wait, &outcome)
        }
        RunEvent::Signal(RunSignal::Settled { settle_ms }) => {
          inner.notify_settled(&ctx.env, &shell_id, settle_ms, None)
        }
        RunEvent::Signal(RunSignal::ScreenSettled { settle_ms, screen }) => {
          inner.notify_settled(&ctx.env, &shell_id, settle_ms, Some(&screen))
        }
        RunEvent::Settled(outcome) => {
          if let Some(settle) = settle.borrow_mut().take() {
            settle.settled(&ctx.env, outcome);
          }
        }
      }
      Ok(())
    })
}

/// Persisted shells: `recover({ stateDir })` (docs/persistence.md).
#[cfg(unix)]
mod recover;
