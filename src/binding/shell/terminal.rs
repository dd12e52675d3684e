//! `screen()`, `write()` and `resize()` of `BackgroundShellRegistry` (API.md
//! §6.5): a terminal shell's screen and input (the rule is core `ShellHub`'s).

use super::*;
use crate::binding::terminal::{terminal_surface, TerminalInput, TerminalSurface};
use crate::core::terminal::{ScreenSnapshot, TerminalError};

impl TerminalSurface for BackgroundShellRegistry {
  const KIND_NAME: &'static str = "Background shell";

  fn screen(&self, id: &str) -> std::result::Result<Option<ScreenSnapshot>, TerminalRefusal> {
    self.inner.hub.borrow().screen(id)
  }

  fn terminal_input(
    &self,
    id: &str,
    input: TerminalInput,
  ) -> std::result::Result<Option<std::result::Result<(), TerminalError>>, TerminalRefusal> {
    let run = self.inner.hub.borrow().live_terminal(id)?;
    Ok(match input {
      TerminalInput::Write(data) => run.write_terminal(&data),
      TerminalInput::Resize(size) => run.resize_terminal(size),
    })
  }
}

terminal_surface!(
  BackgroundShellRegistry,
  id = "shellId",
  screen_args = "shellId: string",
  write_args = "shellId: string, data: string | Uint8Array",
  resize_args = "shellId: string, cols: number, rows: number",
);
