//! `screen()`, `write()` and `resize()` of `BackgroundShellRegistry` (API.md
//! §6.5): a terminal shell's screen and input (the rule is core `ShellHub`'s).

use super::*;
use crate::binding::terminal::{data_arg, refusal, screen_object, size_args, terminal_error};

/// `screen()`, `write()` and `resize()` (API.md §6.5) of terminal shells.
#[napi]
impl BackgroundShellRegistry {
  /// The screen of a shell started with `terminal` (also after it ended,
  /// until its entry is pruned); `undefined` for any other shell.
  #[napi(
    catch_unwind,
    ts_args_type = "shellId: string",
    ts_return_type = "ScreenSnapshot | undefined"
  )]
  pub fn screen(&self, env: Env, shell_id: Unknown) -> Result<Unknown<'static>> {
    let id = args::string(&env, &shell_id, "shellId")?;
    let screen = self.inner.hub.borrow().screen(&id);
    match screen.map_err(|r| refusal(&what(&id), &r))? {
      Some(snapshot) => Ok(args::out(&env, &screen_object(&env, &snapshot)?)),
      None => args::undefined(&env),
    }
  }

  /// Sends `data` (a string, as UTF-8, or bytes) to the terminal's input;
  /// never blocks (a bounded 1 MiB queue; past it the write is refused whole).
  #[napi(
    catch_unwind,
    ts_args_type = "shellId: string, data: string | Uint8Array"
  )]
  pub fn write(&self, env: Env, shell_id: Unknown, data: Unknown) -> Result<()> {
    let id = args::string(&env, &shell_id, "shellId")?;
    let data = data_arg(&env, &data)?;
    let run = self.live_terminal(&id)?;
    match run.write_terminal(&data) {
      Some(result) => result.map_err(|e| terminal_error(&what(&id), &e)),
      None => Err(refusal(&what(&id), &TerminalRefusal::NoTerminal)),
    }
  }

  /// Resizes the terminal (the program gets SIGWINCH) and its screen.
  #[napi(
    catch_unwind,
    ts_args_type = "shellId: string, cols: number, rows: number"
  )]
  pub fn resize(&self, env: Env, shell_id: Unknown, cols: Unknown, rows: Unknown) -> Result<()> {
    let id = args::string(&env, &shell_id, "shellId")?;
    let size = size_args(&env, &cols, &rows)?;
    let run = self.live_terminal(&id)?;
    match run.resize_terminal(size) {
      Some(result) => result.map_err(|e| terminal_error(&what(&id), &e)),
      None => Err(refusal(&what(&id), &TerminalRefusal::NoTerminal)),
    }
  }
}

impl BackgroundShellRegistry {
  fn live_terminal(&self, id: &str) -> Result<Arc<ShellRun>> {
    let live = self.inner.hub.borrow().live_terminal(id);
    live.map_err(|r| refusal(&what(id), &r))
  }
}

/// How errors name the shell.
fn what(id: &str) -> String {
  format!("Background shell \"{id}\"")
}
