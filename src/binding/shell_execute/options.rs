//! `executeBackground()`'s options, checked in one place: a wrong type is a `TypeError` and a
//! number out of range a `RangeError`, each naming `options.<field>`.

use napi::bindgen_prelude::*;

use crate::binding::args::{self, Bag};
use crate::core::ids::shell_id_problem;
use crate::core::launch::ShellStart;
use crate::core::shell::DEFAULT_MAX_OUTPUT_BYTES;
use crate::core::text::ecma_trim;
use crate::core::wait::{MAX_SETTLE_MS, MIN_SETTLE_MS};

pub(super) fn parse_options(env: &Env, o: &Object) -> Result<ShellStart> {
  let bag = Bag::new(env, o, "options");
  let command = bag.string("command")?;
  if ecma_trim(&command).is_empty() {
    return Err(args::type_error(
      env,
      "The \"options.command\" property must be a non-empty command".into(),
    ));
  }
  args::no_nul(env, &command, "options.command")?;
  let cwd = args::absolute_path(env, bag.string("cwd")?, "options.cwd")?;
  let cwd = cwd.to_string_lossy().into_owned();
  let shell_id = bag.opt_string("shellId")?;
  if let Some(problem) = shell_id.as_deref().and_then(shell_id_problem) {
    return Err(args::value_error(
      env,
      format!(
        "The \"options.shellId\" property {problem}: it becomes the file name shell-<shellId>.output. Received {}",
        args::quoted(shell_id.as_deref().unwrap_or_default())
      ),
    ));
  }
  let output_dir = bag.string("outputDir")?;
  if output_dir.is_empty() {
    return Err(args::value_error(
      env,
      "The \"options.outputDir\" property must be a non-empty path. Received ''".into(),
    ));
  }
  args::no_nul(env, &output_dir, "options.outputDir")?;
  let terminal = crate::binding::terminal::parse_terminal_option(&bag)?;
  let persist = crate::binding::persist::parse_persist_option(&bag, terminal.is_some())?;
  // `yieldMs` (API.md §6.8) is checked with the rest; the JavaScript layer (`lib/surface.js`)
  // acts on it once the handle is back.
  bag.opt_u64("yieldMs", 1, 600_000)?;
  Ok(ShellStart {
    command,
    cwd,
    output_dir,
    env: args::env_record(env, &bag.get("env")?, "options.env")?,
    max_output_bytes: bag
      .opt_u64("maxOutputBytes", 1, args::MAX_SAFE_INTEGER as u64)?
      .unwrap_or(DEFAULT_MAX_OUTPUT_BYTES),
    shell_id,
    terminal,
    timeout_ms: args::parse_timeout_ms(&bag, persist.is_some())?,
    limits: args::parse_limits(&bag, persist.is_some())?,
    stop_at_cap: parse_on_output_cap(&bag, persist.is_some())?,
    persist,
    settle_ms: bag.opt_u64("settleMs", MIN_SETTLE_MS, MAX_SETTLE_MS)?,
  })
}

/// `onOutputCap`: `'truncate'` (the default) or `'stop'`; `'stop'` is refused with `persist`
/// (the keeper writes a persisted shell's file).
fn parse_on_output_cap(bag: &Bag, persisted: bool) -> Result<bool> {
  let env = bag.env;
  let value = bag.opt_string("onOutputCap")?;
  match value.as_deref() {
    None | Some("truncate") => Ok(false),
    Some("stop") if persisted => Err(args::type_error(
      env,
      "The \"options.onOutputCap\" option 'stop' cannot be used with \"options.persist\"".into(),
    )),
    Some("stop") => Ok(true),
    Some(other) => Err(args::type_error(
      env,
      format!(
        "The \"options.onOutputCap\" property must be 'truncate' or 'stop'. Received '{other}'"
      ),
    )),
  }
}
