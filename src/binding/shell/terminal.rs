//! `screen()`, `write()` and `resize()` of `BackgroundShellRegistry` (API.md
//! §6.5): a terminal shell's screen and input (the rule is core `ShellHub`'s).

use super::*;
use crate::binding::terminal::{terminal_surface, TerminalSurface};
use crate::core::terminal::TerminalTasks;

impl TerminalSurface for BackgroundShellRegistry {
  const KIND_NAME: &'static str = "Background shell";
  fn with_terminals<R>(&self, call: impl FnOnce(&dyn TerminalTasks) -> R) -> R {
    call(&*self.inner.hub.borrow())
  }
}

terminal_surface!(
  BackgroundShellRegistry,
  id = "shellId",
  screen_args = "shellId: string",
  write_args = "shellId: string, data: string | Uint8Array",
  resize_args = "shellId: string, cols: number, rows: number",
);
