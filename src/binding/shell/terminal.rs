//! `screen()`, `write()` and `resize()` of `BackgroundShellRegistry` (API.md
//! §6.5): a terminal shell's screen and input.

use super::*;

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
    self.known(&id)?;
    let live = self.inner.run_of(&id).and_then(|run| run.screen());
    let snapshot = live.or_else(|| self.inner.last_screens.borrow().get(&id).cloned());
    match snapshot {
      Some(snapshot) => Ok(args::out(
        &env,
        &crate::binding::terminal::screen_object(&env, &snapshot)?,
      )),
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
    let data = crate::binding::terminal::data_arg(&env, &data)?;
    self.known(&id)?;
    let what = format!("Background shell \"{id}\"");
    self.refuse_if_settled(&id, &what)?;
    match self
      .inner
      .run_of(&id)
      .and_then(|run| run.write_terminal(&data))
    {
      Some(result) => result.map_err(|e| crate::binding::terminal::terminal_error(&what, &e)),
      None => Err(self.no_live_terminal(&id, &what)),
    }
  }

  /// Resizes the terminal (the program gets SIGWINCH) and its screen.
  #[napi(
    catch_unwind,
    ts_args_type = "shellId: string, cols: number, rows: number"
  )]
  pub fn resize(&self, env: Env, shell_id: Unknown, cols: Unknown, rows: Unknown) -> Result<()> {
    let id = args::string(&env, &shell_id, "shellId")?;
    let size = crate::binding::terminal::size_args(&env, &cols, &rows)?;
    self.known(&id)?;
    let what = format!("Background shell \"{id}\"");
    self.refuse_if_settled(&id, &what)?;
    match self
      .inner
      .run_of(&id)
      .and_then(|run| run.resize_terminal(size))
    {
      Some(result) => result.map_err(|e| crate::binding::terminal::terminal_error(&what, &e)),
      None => Err(self.no_live_terminal(&id, &what)),
    }
  }
}

impl BackgroundShellRegistry {
  fn known(&self, id: &str) -> Result<()> {
    match self.inner.entry(id) {
      Some(_) => Ok(()),
      None => Err(Error::from_reason(format!(
        "Background shell \"{id}\" is not registered."
      ))),
    }
  }

  /// A settled shell whose terminal is still closing: it ended.
  fn refuse_if_settled(&self, id: &str, what: &str) -> Result<()> {
    let settled = !self.inner.entry(id).is_some_and(|e| e.is_running());
    let has_terminal = self.inner.run_of(id).is_some_and(|run| run.has_terminal());
    if settled && has_terminal {
      return Err(crate::binding::terminal::terminal_error(
        what,
        &crate::core::terminal::TerminalError::Ended,
      ));
    }
    Ok(())
  }

  /// A shell with no running terminal: one that ended, or one without a terminal.
  fn no_live_terminal(&self, id: &str, what: &str) -> Error {
    if self.inner.last_screens.borrow().contains_key(id) {
      crate::binding::terminal::terminal_error(what, &crate::core::terminal::TerminalError::Ended)
    } else {
      crate::binding::terminal::no_terminal(what)
    }
  }
}
