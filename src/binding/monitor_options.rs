//! `MonitorRegistry.start()`'s options, checked in one place: a wrong type is a `TypeError`, a
//! number out of range a `RangeError`, an `important` the regex parser refuses a `SyntaxError`,
//! each naming `options.<field>`.

use std::path::{Path, PathBuf};

use napi::bindgen_prelude::*;

use crate::core::monitor::persisted::MonitorTaskOptions;

use super::args;
use crate::core::monitor::persisted::{DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_EVENTS};
use crate::core::monitor::signal::config::{
  BATCH_MS_MAX, BATCH_MS_MIN, CONTEXT_LINES_MAX, MAX_BATCH_LINES_MAX, MAX_BATCH_LINES_MIN,
  SAMPLE_LINES_MAX,
};
use crate::core::monitor::signal::{
  DigestSetting, SignalConfig, SignalConfigError, SignalSettings,
};
use crate::core::wait::{MAX_SETTLE_MS, MIN_SETTLE_MS};

/// `start()` options after validation.
#[derive(Clone)]
pub(crate) struct StartOptions {
  pub(crate) command: String,
  /// `limits` (API.md §6.8).
  pub(crate) limits: Option<crate::core::process::Limits>,
  pub(crate) description: Option<String>,
  pub(crate) max_events: u64,
  pub(crate) idle_timeout_ms: u64,
  pub(crate) cwd: PathBuf,
  pub(crate) env: Vec<(String, String)>,
  pub(crate) tool_use_id: Option<String>,
  pub(crate) owner_agent_id: Option<String>,
  pub(crate) todo_work_chain_id: Option<String>,
  pub(crate) monitor_id: Option<String>,
  pub(crate) settle_ms: Option<u64>,
  /// `timeoutMs` (API.md §6.8): a wall-clock deadline.
  pub(crate) timeout_ms: Option<u64>,
  /// `terminal` (API.md §6.5): the size of its pseudo-terminal.
  pub(crate) terminal: Option<crate::core::terminal::TerminalSize>,
  pub(crate) keep_alive: bool,
  /// `batchMs`, `maxBatchLines`, `important`, `digest` (API.md §6.7).
  pub(crate) signal: SignalConfig,
  /// The same options as given, for a persisted task's record.
  pub(crate) signal_settings: SignalSettings,
  /// `persist` (docs/persistence.md).
  pub(crate) persist: Option<super::persist::PersistOptions>,
}

impl StartOptions {
  /// What a registration (and a persisted task's record) takes from these options.
  pub(crate) fn task_options(&self) -> MonitorTaskOptions {
    MonitorTaskOptions {
      max_events: self.max_events,
      idle_timeout_ms: self.idle_timeout_ms,
      tool_use_id: self.tool_use_id.clone(),
      owner_agent_id: self.owner_agent_id.clone(),
      todo_work_chain_id: self.todo_work_chain_id.clone(),
      settle_ms: self.settle_ms,
      signal: self.signal_settings.clone(),
    }
  }
}

/// The §6.7 options: a wrong type is a `TypeError` naming `options.<field>`,
/// a number out of range a `RangeError`, an `important` the regex parser
/// refuses a `SyntaxError` quoting it. The regex is compiled here, once.
fn parse_signal_options(env: &Env, o: &Object) -> Result<(SignalConfig, SignalSettings)> {
  let batch_ms = args::optional_integer_field(
    env,
    o,
    "batchMs",
    "options.batchMs",
    BATCH_MS_MIN as f64,
    BATCH_MS_MAX as f64,
  )?;
  let max_batch_lines = args::optional_integer_field(
    env,
    o,
    "maxBatchLines",
    "options.maxBatchLines",
    f64::from(MAX_BATCH_LINES_MIN),
    f64::from(MAX_BATCH_LINES_MAX),
  )?;
  let important = args::optional_string_field(env, o, "important", "options.important")?;
  let digest = parse_digest(env, o)?;
  let lines = |key: &str, max: u32| {
    args::optional_integer_field(env, o, key, &format!("options.{key}"), 0.0, f64::from(max))
  };
  let sample_lines = lines("sampleLines", SAMPLE_LINES_MAX)?;
  let context_before = lines("contextBefore", CONTEXT_LINES_MAX)?;
  let context_after = lines("contextAfter", CONTEXT_LINES_MAX)?;
  let settings = SignalSettings {
    batch_ms,
    max_batch_lines,
    important,
    digest,
    sample_lines,
    context_before,
    context_after,
  };
  SignalConfig::new(settings.options())
    .map(|config| (config, settings))
    .map_err(|error| match error {
      SignalConfigError::InvalidRegex { field, message } => args::syntax_error(
        env,
        format!("The \"options.{field}\" property is not a valid regular expression: {message}"),
      ),
      out_of_range @ SignalConfigError::OutOfRange { .. } => {
        args::range_error(env, out_of_range.to_string())
      }
      needs @ SignalConfigError::Needs { .. } => args::type_error(env, needs.to_string()),
    })
}

/// `digest`: `true`, `false` or `'templates'`.
fn parse_digest(env: &Env, o: &Object) -> Result<DigestSetting> {
  let value = args::field(o, "digest")?;
  if args::is_undefined(&value) {
    return Ok(DigestSetting::Off);
  }
  match value.get_type()? {
    ValueType::Boolean => {
      let on = args::optional_bool_field(env, o, "digest", "options.digest")? == Some(true);
      Ok(if on {
        DigestSetting::On
      } else {
        DigestSetting::Off
      })
    }
    ValueType::String
      if args::optional_string_field(env, o, "digest", "options.digest")?.as_deref()
        == Some("templates") =>
    {
      Ok(DigestSetting::Templates)
    }
    _ => Err(args::type_error(
      env,
      format!(
        "The \"options.digest\" property must be a boolean or 'templates'. {}",
        args::received(&value)
      ),
    )),
  }
}

/// The §6.7 options as JavaScript gave them (checked for type and range), kept as they are
/// for a persisted task's record.
pub(crate) fn parse_start_options(env: &Env, options: &Unknown) -> Result<StartOptions> {
  let o = args::object(env, options, "options")?;
  let command = args::string(env, &args::field(&o, "command")?, "options.command")?;
  args::no_nul(env, &command, "options.command")?;
  let opt_string = |key: &str| args::optional_string_field(env, &o, key, &format!("options.{key}"));
  let cwd = match opt_string("cwd")? {
    Some(cwd) if Path::new(&cwd).is_absolute() => {
      args::no_nul(env, &cwd, "options.cwd")?;
      PathBuf::from(cwd)
    }
    Some(cwd) => {
      return Err(args::type_error(
        env,
        format!("The \"options.cwd\" property must be an absolute path. Received '{cwd}'"),
      ))
    }
    None => std::env::current_dir()
      .map_err(|e| Error::from_reason(format!("process.cwd() failed: {e}")))?,
  };
  let monitor_id = opt_string("monitorId")?;
  if monitor_id.as_deref() == Some("") {
    return Err(args::value_error(
      env,
      "The \"options.monitorId\" property must be a non-empty string. Received ''".into(),
    ));
  }
  let (signal, signal_settings) = parse_signal_options(env, &o)?;
  let terminal = super::terminal::parse_terminal_option(env, &o)?;
  let persist = super::persist::parse_persist_option(env, &o, terminal.is_some())?;
  let timeout_ms = args::parse_timeout_ms(env, &o, persist.is_some())?;
  let limits = args::parse_limits(env, &o, persist.is_some())?;
  Ok(StartOptions {
    command,
    limits,
    description: opt_string("description")?,
    max_events: args::optional_integer_field(
      env,
      &o,
      "maxEvents",
      "options.maxEvents",
      1.0,
      10_000.0,
    )?
    .map_or(DEFAULT_MAX_EVENTS, |n| n as u64),
    idle_timeout_ms: args::optional_integer_field(
      env,
      &o,
      "idleTimeoutMs",
      "options.idleTimeoutMs",
      1.0,
      600_000.0,
    )?
    .map_or(DEFAULT_IDLE_TIMEOUT_MS, |n| n as u64),
    cwd,
    env: args::env_record(env, &args::field(&o, "env")?, "options.env")?,
    tool_use_id: opt_string("toolUseId")?,
    owner_agent_id: opt_string("ownerAgentId")?,
    todo_work_chain_id: opt_string("todoWorkChainId")?,
    monitor_id,
    settle_ms: args::optional_integer_field(
      env,
      &o,
      "settleMs",
      "options.settleMs",
      MIN_SETTLE_MS as f64,
      MAX_SETTLE_MS as f64,
    )?
    .map(|n| n as u64),
    timeout_ms,
    keep_alive: args::optional_bool_field(env, &o, "keepAlive", "options.keepAlive")?
      .unwrap_or(false),
    signal,
    signal_settings,
    terminal,
    persist,
  })
}
