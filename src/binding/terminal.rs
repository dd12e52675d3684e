//! Terminal mode in JavaScript (API.md §6.5), shared by both registries: the
//! `terminal` option, `screen()` snapshots, `write()` data and its errors,
//! `resize()` sizes.

use napi::bindgen_prelude::*;

use super::args;
use super::js::set_opt;
use crate::core::terminal::{
  InputError, ScreenSnapshot, TerminalError, TerminalInput, TerminalRefusal, TerminalSize,
  TerminalTasks,
};

/// `terminal: true | { cols, rows }` (false or absent: no terminal).
pub(crate) fn parse_terminal_option(bag: &args::Bag) -> Result<Option<TerminalSize>> {
  let env = bag.env;
  let value = bag.get("terminal")?;
  let size = match value.get_type()? {
    ValueType::Undefined => return Ok(None),
    ValueType::Boolean => {
      if !unsafe { value.cast::<bool>() }? {
        return Ok(None);
      }
      TerminalSize::DEFAULT
    }
    ValueType::Object => {
      let path = bag.path("terminal");
      let t = args::Bag::new(env, &unsafe { value.cast() }?, &path);
      let side = |key: &str, max: u16, default: u16| -> Result<u32> {
        Ok(t.opt_u32(key, 1, max.into())?.unwrap_or(default.into()))
      };
      let cols = side("cols", TerminalSize::MAX_COLS, TerminalSize::DEFAULT.cols)?;
      let rows = side("rows", TerminalSize::MAX_ROWS, TerminalSize::DEFAULT.rows)?;
      TerminalSize::new(cols, rows).unwrap_or(TerminalSize::DEFAULT)
    }
    _ => {
      return Err(args::type_error(
        env,
        format!(
          "The \"options.terminal\" property must be of type boolean or an object {{ cols, rows }}. {}",
          args::received(&value)
        ),
      ))
    }
  };
  if !cfg!(any(unix, windows)) {
    return Err(Error::from_reason(
      crate::core::terminal::UNSUPPORTED_MESSAGE,
    ));
  }
  Ok(Some(size))
}

/// `resize(id, cols, rows)` arguments.
pub(crate) fn size_args(env: &Env, cols: &Unknown, rows: &Unknown) -> Result<TerminalSize> {
  let cols = args::integer_in_range(
    env,
    cols,
    "cols",
    "argument",
    1.0,
    TerminalSize::MAX_COLS as f64,
  )?;
  let rows = args::integer_in_range(
    env,
    rows,
    "rows",
    "argument",
    1.0,
    TerminalSize::MAX_ROWS as f64,
  )?;
  Ok(TerminalSize::new(cols as u32, rows as u32).unwrap_or(TerminalSize::DEFAULT))
}

/// `write(id, data)`: a string (as UTF-8) or bytes.
pub(crate) fn data_arg(env: &Env, data: &Unknown) -> Result<Vec<u8>> {
  if data.get_type()? == ValueType::String {
    return Ok(unsafe { data.cast::<String>() }?.into_bytes());
  }
  args::bytes(env, data, "data")
    .map(<[u8]>::to_vec)
    .map_err(|_| {
      args::type_error(
        env,
        format!(
          "The \"data\" argument must be of type string or an instance of Buffer or Uint8Array. {}",
          args::received(data)
        ),
      )
    })
}

/// The `Error` a `write()`/`resize()` refusal throws; `what` names the task.
pub(crate) fn terminal_error(what: &str, error: &TerminalError) -> Error {
  match error {
    TerminalError::Ended => Error::from_reason(format!("{what} has ended: its terminal is closed")),
    other => Error::from_reason(format!("{what}: {other}")),
  }
}

/// The `Error` for a terminal call the task cannot take (core `TerminalRefusal`); `what` names
/// the task.
pub(crate) fn refusal(what: &str, refusal: &TerminalRefusal) -> Error {
  match refusal {
    TerminalRefusal::Unknown => Error::from_reason(format!("{what} is not registered.")),
    TerminalRefusal::Ended => terminal_error(what, &TerminalError::Ended),
    TerminalRefusal::NoTerminal => Error::from_reason(format!(
      "{what} has no terminal (start it with `terminal: true`)"
    )),
  }
}

/// What a registry lends the terminal methods both registries share
/// ([`terminal_surface!`]).
pub(crate) trait TerminalSurface {
  /// How errors name a task of this kind (`Monitor`, `Background shell`).
  const KIND_NAME: &'static str;
  /// Runs `call` with the hub that answers terminal calls.
  fn with_terminals<R>(&self, call: impl FnOnce(&dyn TerminalTasks) -> R) -> R;
}

/// `screen(id)`: the snapshot, or `undefined` for a task without a terminal.
pub(crate) fn screen_value<T: TerminalSurface>(
  env: &Env,
  surface: &T,
  id: &Unknown,
  field: &str,
) -> Result<Unknown<'static>> {
  let id = args::string(env, id, field)?;
  let what = format!("{} \"{id}\"", T::KIND_NAME);
  match surface
    .with_terminals(|t| t.screen(&id))
    .map_err(|r| refusal(&what, &r))?
  {
    Some(snapshot) => Ok(args::out(env, &screen_object(env, &snapshot)?)),
    None => args::undefined(env),
  }
}

/// `write(id, data)` and `resize(id, cols, rows)`: the input reaches the
/// terminal, or the call throws why not.
pub(crate) fn send_input<T: TerminalSurface>(
  env: &Env,
  surface: &T,
  id: &Unknown,
  field: &str,
  input: impl FnOnce() -> Result<TerminalInput>,
) -> Result<()> {
  let id = args::string(env, id, field)?;
  let input = input()?;
  let what = format!("{} \"{id}\"", T::KIND_NAME);
  match surface.with_terminals(|t| t.send_input(&id, input)) {
    Ok(()) => Ok(()),
    Err(InputError::Refused(r)) => Err(refusal(&what, &r)),
    Err(InputError::Failed(e)) => Err(terminal_error(&what, &e)),
  }
}

/// `screen()`, `write()` and `resize()` (API.md §6.5), written once for both
/// registries. `$class` implements [`TerminalSurface`]; `$id` names the id
/// argument and the strings are the argument types `index.d.ts` gives.
macro_rules! terminal_surface {
  (
    $class:ident,
    id = $id:tt,
    screen_args = $screen_args:tt,
    write_args = $write_args:tt,
    resize_args = $resize_args:tt $(,)?
  ) => {
    #[napi]
    impl $class {
      /// The screen of a task started with `terminal` (also after it ended,
      /// until its entry is pruned); `undefined` for any other task.
      #[napi(catch_unwind, ts_args_type = $screen_args, ts_return_type = "ScreenSnapshot | undefined")]
      pub fn screen(&self, env: Env, id: Unknown) -> Result<Unknown<'static>> {
        $crate::binding::terminal::screen_value(&env, self, &id, $id)
      }

      /// Sends `data` (a string, as UTF-8, or bytes) to the terminal's input.
      /// Never blocks: bytes the terminal cannot take yet wait in a bounded
      /// queue (1 MiB); past it the write is refused whole with an `Error`.
      #[napi(catch_unwind, ts_args_type = $write_args)]
      pub fn write(&self, env: Env, id: Unknown, data: Unknown) -> Result<()> {
        $crate::binding::terminal::send_input(&env, self, &id, $id, || {
          let data = $crate::binding::terminal::data_arg(&env, &data)?;
          Ok($crate::core::terminal::TerminalInput::Write(data))
        })
      }

      /// Resizes the terminal (the program gets SIGWINCH) and its screen.
      #[napi(catch_unwind, ts_args_type = $resize_args)]
      pub fn resize(&self, env: Env, id: Unknown, cols: Unknown, rows: Unknown) -> Result<()> {
        $crate::binding::terminal::send_input(&env, self, &id, $id, || {
          let size = $crate::binding::terminal::size_args(&env, &cols, &rows)?;
          Ok($crate::core::terminal::TerminalInput::Resize(size))
        })
      }
    }
  };
}
pub(crate) use terminal_surface;

/// `ScreenSnapshot` as a JavaScript object.
pub(crate) fn screen_object<'a>(env: &'a Env, s: &ScreenSnapshot) -> Result<Object<'a>> {
  let mut object = Object::new(env)?;
  object.set_named_property("text", s.text.as_str())?;
  let mut cursor = Object::new(env)?;
  cursor.set_named_property("row", s.cursor.row as u32)?;
  cursor.set_named_property("col", s.cursor.col as u32)?;
  object.set_named_property("cursor", cursor)?;
  object.set_named_property("cols", s.cols as u32)?;
  object.set_named_property("rows", s.rows as u32)?;
  set_opt(&mut object, "title", s.title.as_deref())?;
  object.set_named_property("changedAt", s.changed_at as f64)?;
  Ok(object)
}
