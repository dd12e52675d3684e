//! `MonitorRegistry.screen()`, `write()` and `resize()` (API.md §6.5): a
//! terminal-mode monitor's screen and input (the rule is core `MonitorHub`'s).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::monitor::MonitorRegistry;
use super::terminal::{terminal_surface, TerminalSurface};
use crate::core::terminal::TerminalTasks;

impl TerminalSurface for MonitorRegistry {
  const KIND_NAME: &'static str = "Monitor";
  fn with_terminals<R>(&self, call: impl FnOnce(&dyn TerminalTasks) -> R) -> R {
    call(&*self.hub)
  }
}

terminal_surface!(
  MonitorRegistry,
  id = "monitorId",
  screen_args = "monitorId: string",
  write_args = "monitorId: string, data: string | Uint8Array",
  resize_args = "monitorId: string, cols: number, rows: number",
);
