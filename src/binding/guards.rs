//! Bindings for the shell-command guards (API.md §1). Pure functions; the
//! behaviour is in `core::guards`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::args;
use crate::core::guards as core;

/// Returns `null` when the command is allowed; otherwise the description of the
/// blocked sleep (for example `standalone sleep 5`), exactly as the TypeScript
/// `detectBlockedSleepPattern` did. One shell wrapper (`bash -c '…'`) is stripped first.
#[napi(catch_unwind, ts_args_type = "command: string")]
pub fn detect_blocked_sleep_pattern(env: Env, command: Unknown) -> Result<Option<String>> {
  let command = args::string(&env, &command, "command")?;
  Ok(core::detect_blocked_sleep_pattern(&command))
}

/// Returns `null` when the command is allowed; otherwise the whole guidance message
/// the shell tool shows the model (`Blocked: <description>. Run blocking commands …`).
#[napi(catch_unwind, ts_args_type = "command: string")]
pub fn blocked_sleep_message(env: Env, command: Unknown) -> Result<Option<String>> {
  let command = args::string(&env, &command, "command")?;
  Ok(core::blocked_sleep_message(&command))
}

/// Removes one bare trailing background `&` (keeps `&&` and an escaped `\&`).
/// Returns the input unchanged when there is none.
#[napi(catch_unwind, ts_args_type = "command: string")]
pub fn strip_trailing_background_amp(env: Env, command: Unknown) -> Result<String> {
  let command = args::string(&env, &command, "command")?;
  Ok(core::strip_trailing_background_amp(&command))
}

/// Removes every top-level `# comment` (each up to its line end); later lines are kept.
#[napi(catch_unwind, ts_args_type = "command: string")]
pub fn trim_trailing_shell_comment(env: Env, command: Unknown) -> Result<String> {
  let command = args::string(&env, &command, "command")?;
  Ok(core::trim_trailing_shell_comment(&command))
}

/// Unwraps `bash -c '<script>'` (and sh, zsh, cmd, powershell, pwsh) to the script.
/// The env prefix and any argv suffix are dropped; anything else is returned trimmed.
#[napi(catch_unwind, ts_args_type = "command: string")]
pub fn strip_shell_wrapper(env: Env, command: Unknown) -> Result<String> {
  let command = args::string(&env, &command, "command")?;
  Ok(core::strip_shell_wrapper(&command))
}

/// True when the command ends with a bare top-level background `&`.
#[napi(catch_unwind, ts_args_type = "command: string")]
pub fn has_top_level_trailing_background_operator(env: Env, command: Unknown) -> Result<bool> {
  let command = args::string(&env, &command, "command")?;
  Ok(core::has_top_level_trailing_background_operator(&command))
}

/// True when a top-level `&` is followed by more text (comments count as text).
#[napi(catch_unwind, ts_args_type = "command: string")]
pub fn has_non_final_top_level_background_operator(env: Env, command: Unknown) -> Result<bool> {
  let command = args::string(&env, &command, "command")?;
  Ok(core::has_non_final_top_level_background_operator(&command))
}

/// True when `$(…)`, a backtick, `<(…)` or `>(…)` is live under bash quoting rules.
#[napi(catch_unwind, ts_args_type = "command: string")]
pub fn detect_command_substitution(env: Env, command: Unknown) -> Result<bool> {
  let command = args::string(&env, &command, "command")?;
  Ok(core::detect_command_substitution(&command))
}

/// The three views of a monitor command (CONTRACT.md §2.11).
#[napi(object)]
pub struct NormalizedMonitorCommand {
  /// The inner script without a trailing `&`: what permission checks analyse.
  pub analysis_command: String,
  /// Env tokens, inner script and argv suffix joined by spaces: what safety checks scan.
  pub safety_command: String,
  /// What is spawned: env and wrapper tokens as given, the re-quoted script and the suffix.
  pub spawn_command: String,
  /// True when a trailing bare `&` was removed.
  pub stripped_trailing_amp: bool,
}

/// Parses an optional env prefix and shell wrapper and strips one bare trailing `&`.
#[napi(catch_unwind, ts_args_type = "command: string")]
pub fn normalize_monitor_command(env: Env, command: Unknown) -> Result<NormalizedMonitorCommand> {
  let command = args::string(&env, &command, "command")?;
  let n = core::normalize_monitor_command(&command);
  Ok(NormalizedMonitorCommand {
    analysis_command: n.analysis_command,
    safety_command: n.safety_command,
    spawn_command: n.spawn_command,
    stripped_trailing_amp: n.stripped_trailing_amp,
  })
}

fn string_param(value: &Unknown) -> Result<core::StringParam> {
  Ok(match value.get_type()? {
    ValueType::Undefined => core::StringParam::Absent,
    ValueType::String => core::StringParam::Value(unsafe { value.cast::<String>() }?),
    _ => core::StringParam::NotString,
  })
}

/// `directory` as the TypeScript monitor tool reads it (`if (params.directory)`): a falsy value
/// (`''`, `null`, `false`, `0`, `NaN`) means no directory. A truthy non-string stays a wrong
/// type (the TypeScript tool threw on it; we answer with the absolute-path message).
fn directory_param(value: &Unknown) -> Result<core::StringParam> {
  Ok(match value.get_type()? {
    ValueType::Undefined | ValueType::Null => core::StringParam::Absent,
    ValueType::Boolean if !unsafe { value.cast::<bool>() }? => core::StringParam::Absent,
    ValueType::Number => {
      let number = unsafe { value.cast::<f64>() }?;
      if number == 0.0 || number.is_nan() {
        core::StringParam::Absent
      } else {
        core::StringParam::NotString
      }
    }
    _ => string_param(value)?,
  })
}

fn number_param(value: &Unknown) -> Result<core::NumberParam> {
  Ok(match value.get_type()? {
    ValueType::Undefined => core::NumberParam::Absent,
    ValueType::Number => core::NumberParam::Value(unsafe { value.cast::<f64>() }?),
    _ => core::NumberParam::NotNumber,
  })
}

/// Checks monitor tool parameters in the CLI's order and returns the first error
/// text, or `null` when they are valid (CONTRACT.md §2.11). Values are rejected,
/// never clamped; the command-substitution check comes last on purpose.
#[napi(
  catch_unwind,
  ts_args_type = "params: MonitorToolParams, ctx: MonitorValidationContext"
)]
pub fn validate_monitor_params(env: Env, params: Unknown, ctx: Unknown) -> Result<Option<String>> {
  let params = args::object(&env, &params, "params")?;
  let ctx = args::object(&env, &ctx, "ctx")?;
  // No check reads `description`, so a wrong type there is the caller's bug,
  // not a policy answer for the model (the schema says `description?: string`;
  // `null` is let through, as the TypeScript tool's `description || command` did).
  let description = args::field(&params, "description")?;
  if !matches!(
    description.get_type()?,
    ValueType::Undefined | ValueType::Null | ValueType::String
  ) {
    return Err(args::type_error(
      &env,
      format!(
        "The \"params.description\" property must be of type string. {}",
        args::received(&description)
      ),
    ));
  }
  let workspace_dirs = args::string_list(
    &env,
    &args::field(&ctx, "workspaceDirs")?,
    "ctx.workspaceDirs",
  )?;
  let skills = args::field(&ctx, "userSkillsDirs")?;
  let user_skills_dirs = if args::is_undefined(&skills) {
    Vec::new()
  } else {
    args::string_list(&env, &skills, "ctx.userSkillsDirs")?
  };
  let input = core::MonitorParams {
    command: string_param(&args::field(&params, "command")?)?,
    max_events: number_param(&args::field(&params, "max_events")?)?,
    idle_timeout_ms: number_param(&args::field(&params, "idle_timeout_ms")?)?,
    directory: directory_param(&args::field(&params, "directory")?)?,
  };
  let ctx = core::ValidationContext {
    workspace_dirs,
    user_skills_dirs,
  };
  Ok(core::validate_monitor_params(&input, &ctx))
}
