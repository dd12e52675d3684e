//! `executeBackground()` (API.md §4, CONTRACT.md §2.15): validate, spawn,
//! register, stream to the output file from Rust threads, and settle on the
//! JavaScript thread once the file is flushed and closed.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;

use super::args;
use super::js::{self, Persistent};
use super::layer::{call_once, shell_parts, ShellParts};
use super::shell::{BackgroundShellRegistry, ShellInner};
use crate::core::launch::{
  default_remove_env, launch, LaunchError, Launched, LaunchedShell, ShellCallbacks, ShellStart,
};
use crate::core::shell::RunSignal;
use crate::core::shell::{OutputCounters, Resume};
use crate::core::shell::{ShellOutcome, ShellPlan, ShellRegistration, ShellRun};
use options::parse_options;

/// The registry `executeBackground` starts the shell in: `options.registry`, or the
/// process-wide one, which the JavaScript layer (`lib/surface.js`) keeps and passes.
fn registry_inner(env: &Env, value: &Unknown) -> Result<Rc<ShellInner>> {
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

/// An optional `AbortSignal`: aborted already → its reason is thrown, as
/// `signal.throwIfAborted()` does.
fn check_signal<'a>(env: &Env, value: &Unknown<'a>) -> Result<Option<Object<'a>>> {
  let Some(signal) = args::optional_abort_signal(env, value, "options.signal")? else {
    return Ok(None);
  };
  let throw_if_aborted: Function<(), Unknown> = signal.get_named_property("throwIfAborted")?;
  throw_if_aborted.bind(signal)?.call(())?;
  Ok(Some(signal))
}

/// `executeBackground(options)` (API.md §4, declared in `header.d.ts`) without `yieldMs`, which
/// the JavaScript layer (`lib/surface.js`) adds: checks the options, starts the shell in
/// `registry` (the `options.registry` the layer read, or its process-wide registry) and returns
/// the handle at once.
#[napi(catch_unwind, js_name = "__executeBackground", skip_typescript)]
pub fn execute_background(
  env: Env,
  options: Unknown,
  registry: Unknown,
) -> Result<Unknown<'static>> {
  let o = args::object(&env, &options, "options")?;
  let opts = parse_options(&env, &o)?;
  let inner = registry_inner(&env, &registry)?;
  let signal = check_signal(&env, &args::field(&o, "signal")?)?;
  let handle = start_shell(&env, &inner, opts, signal, None)?;
  Ok(args::out(&env, &handle))
}

/// `executeBackground()` after its checks, and a restart's new run (`resume`): registers,
/// launches, attaches; keeps what a later `restart()` needs. Returns the handle.
fn start_shell<'a>(
  env: &'a Env,
  inner: &Rc<ShellInner>,
  opts: ShellStart,
  signal: Option<Object<'a>>,
  resume: Option<crate::core::shell::Resume>,
) -> Result<Object<'a>> {
  let facts = opts
    .plan(|id| inner.entry(id).is_some())
    .map_err(Error::from_reason)?;
  // A persisted shell: its lock taken before anything starts (a failure throws).
  let persisted = match &opts.persist {
    Some(persist) => Some(super::persist::prepare(persist, &facts.shell_id)?),
    None => None,
  };

  // Every JavaScript object the shell needs comes before any process: a
  // throwing `AbortController`, a stubbed `setInterval` or a signal whose
  // `addEventListener` throws end the call while nothing runs yet.
  let ShellObjects {
    mut registration,
    mut handle,
    settled,
  } = shell_objects(env, signal.as_ref(), &facts, &opts.cwd)?;

  let now = js::wall_ms();
  let remove_env = default_remove_env();
  let request = opts.request(&facts, persisted, &remove_env, now, resume.as_ref());
  let launched = launch(request).and_then(Launched::into_shell);
  let pid = launched.as_ref().ok().map(LaunchedShell::pid);
  if let Some(group) = launched.as_ref().ok().and_then(LaunchedShell::group) {
    super::environment_tasks::adopt(group);
  }
  // From here on a failure leaves nothing registered (the launched task
  // stops as its guard drops) and lets the JavaScript side go.
  let with_pid = (|| -> Result<()> {
    registration.set_named_property("startTime", now)?;
    js::set_opt(&mut registration, "pid", pid)?;
    js::set_opt(&mut handle, "pid", pid)
  })();
  if let Err(error) = with_pid {
    call_once(env, settled, "executeBackground", ());
    return Err(error);
  }
  let reg = ShellRegistration {
    shell_id: facts.shell_id.clone(),
    command: facts.command.clone(),
    cwd: opts.cwd.clone(),
    start_time: now,
    output_path: facts.output_path.clone(),
    pid,
    todo_work_chain_id: None,
  };
  let generation = match inner.register(env, &registration, reg, true) {
    Ok(generation) => generation,
    Err(error) => {
      call_once(env, settled, "executeBackground", ());
      return Err(error);
    }
  };
  if opts.persist.is_none() {
    keep_for_restart(env, inner, &opts, &facts.shell_id, signal.as_ref());
  }

  let token = inner.hub.borrow_mut().begin_run(&facts.shell_id);
  let settle = Settle {
    inner: Rc::clone(inner),
    run: token,
    shell_id: facts.shell_id.clone(),
    settled: Some(settled),
  };
  match launched {
    Err(LaunchError { message, end }) => {
      let waiting = settle.failed_to_start(env, &message, end, now);
      go_on_after(env, inner, &facts.shell_id, waiting);
    }
    Ok(launched) => {
      let settle = Rc::new(RefCell::new(Some(settle)));
      let run = launched.start(opts.settle_ms, || {
        run_callbacks(env, &settle, inner, &facts.shell_id)
      });
      if let Ok(run) = &run {
        if let Some(timeout_ms) = opts.timeout_ms {
          run.set_deadline(timeout_ms);
        }
        if opts.stop_at_cap {
          run.stop_at_output_cap();
        }
      }
      let linked = (facts.shell_id.as_str(), generation, token);
      attach_run(env, inner, linked, &settle, run, now);
    }
  }
  Ok(handle)
}

/// Keeps what a later `restart(id)` needs: the options (its shell id filled in) in the registry's
/// book, the caller's `signal`, which cancels the new run too, on its side.
fn keep_for_restart(
  env: &Env,
  inner: &ShellInner,
  opts: &ShellStart,
  id: &str,
  signal: Option<&Object>,
) {
  let mut opts = opts.clone();
  opts.shell_id = Some(id.to_owned());
  let earlier = inner.restarts.borrow_mut().keep(id, opts);
  if let Some(gone) = earlier.filter(|gone| gone.waiting.is_some()) {
    let refusal = Error::from_reason(gone.refusal);
    inner.side.end_restart(env, id, Err(refusal));
  }
  if let Some(signal) = signal {
    inner.side.keep_signal(env, id, signal);
  }
}

/// A restart of `id` goes on once the old run settled with `counters` (or is refused): its
/// ended entry leaves the registry and the new run starts under its id with the caller's
/// `signal`; the restart's promise settles with the new handle or the error.
pub(crate) fn go_on(
  env: &Env,
  inner: &Rc<ShellInner>,
  id: &str,
  counters: std::result::Result<OutputCounters, String>,
) {
  let started = counters.map_err(Error::from_reason).and_then(|counters| {
    let opts = inner.restarts.borrow_mut().take(id);
    let opts = opts.map_err(Error::from_reason)?;
    // Read before the old entry, which keeps it, leaves.
    let signal = inner.side.signal(env, id);
    inner.transition(env, |r| r.remove_ended(id).unwrap_or_default());
    let resume = Resume::at(counters, js::wall_ms());
    start_shell(env, inner, opts, signal, Some(resume))
  });
  inner.side.end_restart(env, id, started);
}

/// A restart that waited for the run of `id` to settle goes on with its counters.
fn go_on_after(env: &Env, inner: &Rc<ShellInner>, id: &str, waiting: Option<OutputCounters>) {
  if let Some(counters) = waiting {
    go_on(env, inner, id, Ok(counters));
  }
}

/// A shell's JavaScript objects, all made before anything starts.
struct ShellObjects<'a> {
  /// The entry object the registry holds.
  registration: Object<'a>,
  /// The `BackgroundShellHandle` returned.
  handle: Object<'a>,
  /// The JavaScript layer's `settled(result)`: resolves `done` and lets the shell's timer and
  /// signal listener go (with no result: the start failed).
  settled: Persistent,
}

/// The entry object and its `AbortController`, the handle with `done`, `ref()` and `unref()`,
/// and the caller's `signal` wired to the controller (the JavaScript layer's part), then the
/// shell's fields; on a failure whatever was held is let go. Its `ports`, `usage` and the abort
/// of its controller are the side's, once it is registered (`lib/side.js`).
fn shell_objects<'a>(
  env: &'a Env,
  signal: Option<&Object>,
  facts: &ShellPlan,
  cwd: &str,
) -> Result<ShellObjects<'a>> {
  let ShellParts {
    entry: mut registration,
    mut handle,
    settled,
  } = shell_parts(env, signal)?;
  let fields = (|| -> Result<()> {
    registration.set_named_property("shellId", facts.shell_id.as_str())?;
    registration.set_named_property("command", facts.command.as_str())?;
    registration.set_named_property("cwd", cwd)?;
    registration.set_named_property("status", "running")?;
    registration.set_named_property("outputPath", facts.output_path.as_str())?;
    handle.set_named_property("shellId", facts.shell_id.as_str())?;
    handle.set_named_property("outputPath", facts.output_path.as_str())?;
    handle.set_named_property("statusPath", facts.status_path.as_str())?;
    handle.set_named_property("command", facts.command.as_str())?;
    handle.set_named_property("strippedTrailingAmp", facts.stripped_trailing_amp)
  })();
  match fields {
    Ok(()) => Ok(ShellObjects {
      registration,
      handle,
      settled,
    }),
    Err(error) => {
      call_once(env, settled, "executeBackground", ());
      Err(error)
    }
  }
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
      if let Err(status) = send(&signals, RunEvent::Signal(signal)) {
        tracing::debug!(
          ?status,
          "taskstream: a shell signal after its host environment closed"
        );
      }
    }),
    Box::new(move |outcome| {
      if let Err(status) = send(&tsfn, RunEvent::Settled(outcome)) {
        tracing::warn!(
          ?status,
          "taskstream: a background shell settled after its host environment closed"
        );
      }
    }),
  ))
}

/// Queues `event` for the JavaScript thread, without blocking; the status when it was refused.
fn send(tsfn: &ShellTsfn, event: RunEvent) -> std::result::Result<(), Status> {
  match tsfn.call(event, ThreadsafeFunctionCallMode::NonBlocking) {
    Status::Ok => Ok(()),
    status => Err(status),
  }
}

/// Links started run `token` to its entry, `(id, generation of its object, token)` (the hub
/// cancels it when a register or status-change callback already stopped the shell, or aborted
/// its controller, before the run existed); a run that could not start fails the entry after
/// `stop` ended the process.
fn attach_run(
  env: &Env,
  inner: &Rc<ShellInner>,
  (shell_id, generation, token): (&str, u64, u64),
  settle: &Rc<RefCell<Option<Settle>>>,
  run: std::result::Result<Arc<ShellRun>, LaunchError>,
  now: f64,
) {
  match run {
    Ok(run) => {
      let aborted = inner.controller_aborted(env, shell_id);
      let mut hub = inner.hub.borrow_mut();
      hub.attach_run(shell_id, token, generation, run, aborted);
    }
    Err(LaunchError { message, end }) => {
      if let Some(settle) = settle.borrow_mut().take() {
        let waiting = settle.failed_to_start(env, &message, end, now);
        go_on_after(env, inner, shell_id, waiting);
      }
    }
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
            let waiting = settle.settled(&ctx.env, outcome);
            go_on_after(&ctx.env, &inner, &shell_id, waiting);
          }
        }
      }
      Ok(())
    })
}

/// Persisted shells: `recover({ stateDir })` (docs/persistence.md).
pub(crate) mod options;
mod recover;
pub(crate) mod restart;
mod settle;

use settle::Settle;
