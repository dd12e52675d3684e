//! What runs when the addon loads: debug logging, and the host-exit kill.
//!
//! Every child taskstream starts must die with the Node process however it
//! ends (CONTRACT.md §4 item 6). `process.on('exit')` covers a normal end,
//! `process.exit()` and an uncaught exception with a synchronous SIGKILL of
//! every tracked process tree.
//! Deaths that run no JavaScript are covered by `core::process` (the watchdog
//! and, for children started through the fork fallback, `PR_SET_PDEATHSIG`).
//!
//! Tasks also belong to the Node environment (the main thread or a Worker)
//! that started them: each environment's cleanup hook SIGKILLs the trees it
//! started, so `worker.terminate()` or a Worker that ends takes its tasks
//! along while the rest of the process goes on.

#[cfg(any(unix, windows))]
use std::sync::atomic::{AtomicBool, Ordering};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::environment_tasks;

/// The environment variable that turns on debug logging (to stderr).
pub const LOG_ENV: &str = "TASKSTREAM_LOG";

/// Set once the first environment (the main thread, in practice) installed the exit hook.
static EXIT_HOOK_INSTALLED: AtomicBool = AtomicBool::new(false);

#[napi(module_exports)]
pub fn init(_exports: Object, env: Env) -> Result<()> {
  init_logging();
  // The kill-all is process-wide, so only the first environment installs it: a
  // worker that loads the addon and ends must not kill the main thread's children.
  if !EXIT_HOOK_INSTALLED.swap(true, Ordering::AcqRel) {
    install_exit_hook(&env)?;
  }
  env.add_env_cleanup_hook((), |()| environment_tasks::kill_all())?;
  Ok(())
}

/// `TASKSTREAM_LOG=debug` (or any `tracing` filter) writes logs to stderr; off by default.
fn init_logging() {
  let Ok(filter) = std::env::var(LOG_ENV) else {
    return;
  };
  let filter = if filter == "1" || filter.eq_ignore_ascii_case("true") {
    "debug".to_owned()
  } else {
    filter
  };
  let _ = tracing_subscriber::fmt()
    .with_env_filter(tracing_subscriber::EnvFilter::new(format!(
      "taskstream={filter}"
    )))
    .with_writer(std::io::stderr)
    .try_init();
}

fn install_exit_hook(env: &Env) -> Result<()> {
  let process: Object = env.get_global()?.get_named_property("process")?;
  let on: Function<FnArgs<(&str, Function<(), ()>)>, Unknown> = process.get_named_property("on")?;
  let hook = env.create_function_from_closure::<(), (), _>("taskstreamKillAllOnExit", |_ctx| {
    // Sidecars first: a CLI that starts again reads why these shells ended.
    crate::core::shell::record_host_exit(crate::core::clock::wall_ms());
    kill_all_children();
    Ok(())
  })?;
  on.bind(process)?.call(FnArgs::from(("exit", hook)))?;
  Ok(())
}

fn kill_all_children() {
  #[cfg(any(unix, windows))]
  crate::core::process::kill_all_sync();
}
