//! `waitFor` on both registries (API.md §6.1), the native side: option checking and the
//! `WaitResult` object. The promise, the function that settles it (kept by the registry's side,
//! `lib/side.js`, under the wait's id), the timer that keeps Node alive while it is pending and
//! the listener on its `AbortSignal` are the JavaScript layer's (`lib/surface.js`). The conditions themselves are evaluated in Rust (`core::wait`), on the
//! reader side; this module only settles waits on the JavaScript thread.

use napi::bindgen_prelude::*;

use super::args;
use super::js;
use crate::core::process::PORTS_SUPPORTED;
use crate::core::wait::{PortWanted, WaitOutcome, WaitSpec, MAX_WAIT_MS};

/// Checked `WaitForOptions`.
pub(crate) struct WaitOptions<'a> {
  pub spec: WaitSpec,
  pub signal: Option<Object<'a>>,
}

/// Parses `options` (absent: no condition, only the settle ends the wait).
pub(crate) fn parse_wait_options<'a>(env: &Env, options: &Unknown<'a>) -> Result<WaitOptions<'a>> {
  let Some(o) = args::optional_object(env, options, "options")? else {
    return Ok(WaitOptions {
      spec: WaitSpec::default(),
      signal: None,
    });
  };
  let bag = args::Bag::new(env, &o, "options");
  let ms = |key: &str| bag.opt_u64(key, 1, MAX_WAIT_MS);
  let spec = WaitSpec {
    matcher: bag.opt_regex("match")?,
    quiet_ms: ms("quietMs")?,
    timeout_ms: ms("timeoutMs")?,
    port: parse_port(env, &o)?,
  };
  let signal = args::optional_abort_signal(env, &args::field(&o, "signal")?, "options.signal")?;
  Ok(WaitOptions { spec, signal })
}

/// `port` (API.md §6.8): `true` (any port) or an integer 1..65535; `false` or absent: none.
/// Refused where the ports of a tree cannot be read.
fn parse_port(env: &Env, o: &Object) -> Result<Option<PortWanted>> {
  let value = args::field(o, "port")?;
  let wanted = match value.get_type()? {
    ValueType::Undefined => return Ok(None),
    ValueType::Boolean => {
      if !unsafe { value.cast::<bool>() }? {
        return Ok(None);
      }
      PortWanted::Any
    }
    ValueType::Number => {
      let n = args::integer_in_range(env, &value, "options.port", "property", 1.0, 65_535.0)?;
      PortWanted::Port(n as u16)
    }
    _ => {
      return Err(args::type_error(
        env,
        format!(
          "The \"options.port\" property must be a boolean or a port number. {}",
          args::received(&value)
        ),
      ))
    }
  };
  if !PORTS_SUPPORTED {
    return Err(Error::from_reason(format!(
      "waitFor's \"options.port\" is not supported on {} yet: the listening ports of a task's tree are read on Linux only",
      std::env::consts::OS
    )));
  }
  Ok(Some(wanted))
}

/// Whether an `AbortSignal` has already fired.
pub(crate) fn signal_aborted(signal: &Object) -> bool {
  signal
    .get_named_property::<bool>("aborted")
    .unwrap_or(false)
}

/// `WaitResult`.
pub(crate) fn result_object<'a>(env: &'a Env, outcome: &WaitOutcome) -> Result<Object<'a>> {
  let mut result = Object::new(env)?;
  result.set_named_property("reason", outcome.reason.as_str())?;
  js::set_opt(&mut result, "line", outcome.line.as_deref())?;
  js::set_opt(&mut result, "port", outcome.port)?;
  result.set_named_property("status", outcome.status.as_str())?;
  result.set_named_property("elapsedMs", outcome.elapsed_ms)?;
  Ok(result)
}
