//! `MonitorRegistry.screen()`, `write()` and `resize()` (API.md §6.5): a
//! terminal-mode monitor's screen and input (the rule is core `MonitorHub`'s).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::monitor::MonitorRegistry;
use super::terminal::{terminal_surface, TerminalInput, TerminalSurface};
use crate::core::terminal::{ScreenSnapshot, TerminalError, TerminalRefusal};

impl TerminalSurface for MonitorRegistry {
  const KIND_NAME: &'static str = "Monitor";

  fn screen(&self, id: &str) -> std::result::Result<Option<ScreenSnapshot>, TerminalRefusal> {
    self.hub.screen(id)
  }

  fn terminal_input(
    &self,
    id: &str,
    input: TerminalInput,
  ) -> std::result::Result<Option<std::result::Result<(), TerminalError>>, TerminalRefusal> {
    let task = self.hub.live_terminal(id)?;
    Ok(match input {
      TerminalInput::Write(data) => task.write_terminal(&data),
      TerminalInput::Resize(size) => task.resize_terminal(size),
    })
  }
}

terminal_surface!(
  MonitorRegistry,
  id = "monitorId",
  screen_args = "monitorId: string",
  write_args = "monitorId: string, data: string | Uint8Array",
  resize_args = "monitorId: string, cols: number, rows: number",
);
