//! `MonitorRegistry.start()`'s options, checked in one place: a wrong type is a `TypeError`, a
//! number out of range a `RangeError`, an `important` the regex parser refuses a `SyntaxError`,
//! each naming `options.<field>`.

use napi::bindgen_prelude::*;

use super::args::{self, Bag};
use crate::core::launch::MonitorStart;
use crate::core::monitor::persisted::{
  MonitorTaskOptions, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_EVENTS,
};
use crate::core::monitor::signal::config::{
  BATCH_MS_MAX, BATCH_MS_MIN, CONTEXT_LINES_MAX, MAX_BATCH_LINES_MAX, MAX_BATCH_LINES_MIN,
  SAMPLE_LINES_MAX,
};
use crate::core::monitor::signal::{
  DigestSetting, SignalConfig, SignalConfigError, SignalSettings,
};
use crate::core::wait::{MAX_SETTLE_MS, MIN_SETTLE_MS};

/// The §6.7 options: a wrong type is a `TypeError` naming `options.<field>`,
/// a number out of range a `RangeError`, an `important` the regex parser
/// refuses a `SyntaxError` quoting it. The regex is compiled here, once.
fn parse_signal_options(bag: &Bag) -> Result<(SignalConfig, SignalSettings)> {
  let env = bag.env;
  let batch_ms = bag.opt_int("batchMs", BATCH_MS_MIN as f64, BATCH_MS_MAX as f64)?;
  let max_batch_lines = bag.opt_int(
    "maxBatchLines",
    f64::from(MAX_BATCH_LINES_MIN),
    f64::from(MAX_BATCH_LINES_MAX),
  )?;
  let important = bag.opt_string("important")?;
  let digest = parse_digest(bag)?;
  let lines = |key: &str, max: u32| bag.opt_int(key, 0.0, f64::from(max));
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
fn parse_digest(bag: &Bag) -> Result<DigestSetting> {
  let value = bag.get("digest")?;
  Ok(match value.get_type()? {
    ValueType::Undefined => DigestSetting::Off,
    ValueType::Boolean if bag.opt_bool("digest")? == Some(true) => DigestSetting::On,
    ValueType::Boolean => DigestSetting::Off,
    ValueType::String if bag.opt_string("digest")?.as_deref() == Some("templates") => {
      DigestSetting::Templates
    }
    _ => {
      return Err(args::type_error(
        bag.env,
        format!(
          "The \"options.digest\" property must be a boolean or 'templates'. {}",
          args::received(&value)
        ),
      ))
    }
  })
}

/// The §6.7 options as JavaScript gave them (checked for type and range), kept as they are
/// for a persisted task's record.
pub(crate) fn parse_start_options(env: &Env, options: &Unknown) -> Result<MonitorStart> {
  let o = args::object(env, options, "options")?;
  let bag = Bag::new(env, &o, "options");
  let command = bag.string("command")?;
  args::no_nul(env, &command, "options.command")?;
  let cwd = match bag.opt_string("cwd")? {
    Some(cwd) => args::absolute_path(env, cwd, "options.cwd")?,
    None => std::env::current_dir()
      .map_err(|e| Error::from_reason(format!("process.cwd() failed: {e}")))?,
  };
  let monitor_id = bag.opt_string("monitorId")?;
  if monitor_id.as_deref() == Some("") {
    return Err(args::value_error(
      env,
      "The \"options.monitorId\" property must be a non-empty string. Received ''".into(),
    ));
  }
  let (signal, signal_settings) = parse_signal_options(&bag)?;
  let terminal = super::terminal::parse_terminal_option(&bag)?;
  let persist = super::persist::parse_persist_option(&bag, terminal.is_some())?;
  // Read in this order: the first bad field is the one thrown.
  let timeout_ms = args::parse_timeout_ms(&bag, persist.is_some())?;
  let limits = args::parse_limits(&bag, persist.is_some())?;
  let description = bag.opt_string("description")?;
  let max_events = bag.opt_u64("maxEvents", 1, 10_000)?;
  let idle_timeout_ms = bag.opt_u64("idleTimeoutMs", 1, 600_000)?;
  let env_record = args::env_record(env, &bag.get("env")?, "options.env")?;
  let task = MonitorTaskOptions {
    max_events: max_events.unwrap_or(DEFAULT_MAX_EVENTS),
    idle_timeout_ms: idle_timeout_ms.unwrap_or(DEFAULT_IDLE_TIMEOUT_MS),
    tool_use_id: bag.opt_string("toolUseId")?,
    owner_agent_id: bag.opt_string("ownerAgentId")?,
    todo_work_chain_id: bag.opt_string("todoWorkChainId")?,
    settle_ms: bag.opt_u64("settleMs", MIN_SETTLE_MS, MAX_SETTLE_MS)?,
    signal: signal_settings,
  };
  Ok(MonitorStart {
    command,
    description,
    monitor_id,
    cwd,
    env: env_record,
    task,
    timeout_ms,
    limits,
    terminal,
    keep_alive: bag.opt_bool("keepAlive")?.unwrap_or(false),
    signal,
    persist,
  })
}
