//! `MonitorRegistry.screen()`, `write()` and `resize()` (API.md §6.5): a
//! terminal-mode monitor's screen and input (the rule is core `MonitorHub`'s).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::args;
use super::monitor::MonitorRegistry;
use super::terminal::{data_arg, refusal, screen_object, size_args, terminal_error};
use crate::core::monitor::hub::NativeTask;
use crate::core::terminal::TerminalRefusal;
use std::sync::Arc;

impl MonitorRegistry {
  fn live_terminal(&self, id: &str) -> Result<Arc<dyn NativeTask>> {
    self
      .hub
      .live_terminal(id)
      .map_err(|r| refusal(&what(id), &r))
  }
}

/// How errors name the monitor.
fn what(id: &str) -> String {
  format!("Monitor \"{id}\"")
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
    match self.hub.screen(&id).map_err(|r| refusal(&what(&id), &r))? {
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
    match self.live_terminal(&id)?.write_terminal(&data) {
      Some(result) => result.map_err(|e| terminal_error(&what(&id), &e)),
      None => Err(refusal(&what(&id), &TerminalRefusal::NoTerminal)),
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
    match self.live_terminal(&id)?.resize_terminal(size) {
      Some(result) => result.map_err(|e| terminal_error(&what(&id), &e)),
      None => Err(refusal(&what(&id), &TerminalRefusal::NoTerminal)),
    }
  }
}
