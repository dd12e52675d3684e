//! `MonitorRegistry.screen()`, `write()` and `resize()` (API.md §6.5): a
//! terminal-mode monitor's screen and input.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::args;
use super::monitor::MonitorRegistry;
use super::terminal::{data_arg, no_terminal, screen_object, size_args, terminal_error};
use crate::core::monitor::hub::NativeTask;
use crate::core::terminal::TerminalError;
use std::sync::Arc;

impl MonitorRegistry {
  /// The entry's native task; an `Error` naming an unknown id.
  fn terminal_task(&self, id: &str) -> Result<Option<Arc<dyn NativeTask>>> {
    if self.hub.registry().get(id).is_none() {
      return Err(Error::from_reason(format!(
        "Monitor \"{id}\" is not registered."
      )));
    }
    Ok(self.hub.native(id))
  }

  /// `write()`/`resize()` on a terminal monitor that settled (its process may
  /// still be on its way out): it ended.
  fn refuse_if_settled(
    &self,
    id: &str,
    task: &Option<Arc<dyn NativeTask>>,
    what: &str,
  ) -> Result<()> {
    let settled = !self.hub.registry().is_running(id);
    if settled && task.as_ref().is_some_and(|t| t.has_terminal()) {
      return Err(terminal_error(what, &TerminalError::Ended));
    }
    Ok(())
  }
}

#[napi]
impl MonitorRegistry {
  /// The screen of a monitor started with `terminal` (also after it ended,
  /// until its entry is pruned); `undefined` for any other monitor.
  #[napi(
    catch_unwind,
    ts_args_type = "monitorId: string",
    ts_return_type = "ScreenSnapshot | undefined"
  )]
  pub fn screen(&self, env: Env, monitor_id: Unknown) -> Result<Unknown<'static>> {
    let id = args::string(&env, &monitor_id, "monitorId")?;
    match self.terminal_task(&id)?.and_then(|task| task.screen()) {
      Some(snapshot) => Ok(args::out(&env, &screen_object(&env, &snapshot)?)),
      None => args::undefined(&env),
    }
  }

  /// Sends `data` (a string, as UTF-8, or bytes) to the terminal's input.
  /// Never blocks: bytes the terminal cannot take yet wait in a bounded queue
  /// (1 MiB); past it the write is refused whole with an `Error`.
  #[napi(
    catch_unwind,
    ts_args_type = "monitorId: string, data: string | Uint8Array"
  )]
  pub fn write(&self, env: Env, monitor_id: Unknown, data: Unknown) -> Result<()> {
    let id = args::string(&env, &monitor_id, "monitorId")?;
    let data = data_arg(&env, &data)?;
    let what = format!("Monitor \"{id}\"");
    let task = self.terminal_task(&id)?;
    self.refuse_if_settled(&id, &task, &what)?;
    match task.as_ref().and_then(|task| task.write_terminal(&data)) {
      Some(result) => result.map_err(|e| terminal_error(&what, &e)),
      None => Err(no_terminal(&what)),
    }
  }

  /// Resizes the terminal (the program gets SIGWINCH) and its screen.
  #[napi(
    catch_unwind,
    ts_args_type = "monitorId: string, cols: number, rows: number"
  )]
  pub fn resize(&self, env: Env, monitor_id: Unknown, cols: Unknown, rows: Unknown) -> Result<()> {
    let id = args::string(&env, &monitor_id, "monitorId")?;
    let size = size_args(&env, &cols, &rows)?;
    let what = format!("Monitor \"{id}\"");
    let task = self.terminal_task(&id)?;
    self.refuse_if_settled(&id, &task, &what)?;
    match task.as_ref().and_then(|task| task.resize_terminal(size)) {
      Some(result) => result.map_err(|e| terminal_error(&what, &e)),
      None => Err(no_terminal(&what)),
    }
  }
}
