//! Binding of `readTaskOutput` (API.md §6.4): argument checking and type mapping. The reading,
//! and where each read stops, is `core::text::read_task_output`.

use std::cell::RefCell;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use super::args;
use super::text::OutputTailError;
use crate::core::text as core;

/// One bounded read of an output file.
#[napi(object, object_from_js = false)]
pub struct TaskOutputRead {
  /// The sanitised text of `offset..nextOffset` (with `grep`, its matching lines), not trimmed.
  #[napi(ts_type = "string")]
  pub text: ReadText,
  /// Where the text starts: the requested offset, past the rest of a character it pointed into.
  pub offset: f64,
  /// Where the next read starts; equal to `offset` at the end of the file.
  pub next_offset: f64,
  /// The file's size when it was read.
  pub total_bytes: f64,
  /// True when `maxBytes` stopped the read before the end of the file.
  pub truncated: bool,
  /// With `grep`: how many lines matched.
  pub matched_lines: Option<f64>,
}

/// Reads what is new in an output file, bounded: the text from `offset` on (at most
/// `maxBytes` bytes of the file), sanitised like `readTaskOutputTail` but not trimmed, and the
/// `nextOffset` to poll from next; the texts of successive reads concatenate to the sanitised
/// file. A read stops after the last line end it holds (at the end of the file: at the end,
/// less an unfinished UTF-8 character); a line longer than `maxBytes` skips the frames a
/// carriage-return redraw overwrites, or is cut. With `grep`, only complete lines are tested
/// and returned. Never follows a symlink, never blocks on a FIFO; `{ error }` when the file
/// cannot be read (API.md §6.4).
#[napi(
  catch_unwind,
  ts_args_type = "outputFile: string, options?: ReadTaskOutputOptions",
  ts_return_type = "TaskOutputRead | OutputTailError"
)]
pub fn read_task_output(
  env: Env,
  output_file: Unknown,
  options: Unknown,
) -> Result<Either<TaskOutputRead, OutputTailError>> {
  let output_file = args::string(&env, &output_file, "outputFile")?;
  let (offset, max_bytes, grep) = match args::optional_object(&env, &options, "options")? {
    Some(options) => {
      let bag = args::Bag::new(&env, &options, "options");
      (
        bag.opt_u64("offset", 0, args::MAX_SAFE_INTEGER as u64)?,
        bag.opt_u64(
          "maxBytes",
          core::MIN_READ_OUTPUT_MAX_BYTES as u64,
          core::MAX_READ_OUTPUT_MAX_BYTES as u64,
        )?,
        bag.opt_string("grep")?,
      )
    }
    None => (None, None, None),
  };
  let grep = match grep {
    Some(pattern) => Some(core::Grep::new(&pattern).map_err(|error| {
      args::syntax_error(
        &env,
        format!("The \"options.grep\" property is not a valid regular expression: {error}"),
      )
    })?),
    None => None,
  };
  let read = core::read_task_output(
    std::path::Path::new(&output_file),
    offset.unwrap_or(0),
    max_bytes.map_or(core::DEFAULT_READ_OUTPUT_MAX_BYTES, |n| n as usize),
    grep.as_ref(),
  );
  Ok(match read {
    Ok(read) => Either::A(TaskOutputRead {
      text: ReadText(read.text),
      offset: read.offset as f64,
      next_offset: read.next_offset as f64,
      total_bytes: read.total_bytes as f64,
      truncated: read.truncated,
      matched_lines: read.matched_lines.map(|n| n as f64),
    }),
    Err(error) => Either::B(OutputTailError { error }),
  })
}

/// The text of a read, made a JavaScript string without `napi_create_string_utf8`, whose UTF-8
/// decoding in V8 is the slowest step of a read of non-ASCII text (about 0.25 GB/s): ASCII text
/// goes as Latin-1 and any other as UTF-16, which V8 copies as they are.
pub struct ReadText(String);

impl ToNapiValue for ReadText {
  unsafe fn to_napi_value(env: sys::napi_env, text: Self) -> Result<sys::napi_value> {
    let mut value = std::ptr::null_mut();
    let bytes = text.0.as_bytes();
    let status = if bytes.is_ascii() {
      // SAFETY: `env` is the live env of this call; `bytes` is valid for its length.
      unsafe {
        sys::napi_create_string_latin1(env, bytes.as_ptr().cast(), bytes.len() as isize, &mut value)
      }
    } else {
      UTF16.with(|units| {
        let mut units = units.borrow_mut();
        units.clear();
        core::push_utf16(&text.0, &mut units);
        // SAFETY: as above; V8 copies the units before the call returns.
        let status = unsafe {
          sys::napi_create_string_utf16(env, units.as_ptr(), units.len() as isize, &mut value)
        };
        if units.capacity() > KEPT_UTF16_UNITS {
          *units = Vec::new();
        }
        status
      })
    };
    if status != sys::Status::napi_ok {
      return Err(Error::new(
        Status::from(status),
        "Failed to create the text of a read",
      ));
    }
    Ok(value)
  }
}

thread_local! {
  /// The UTF-16 of the last non-ASCII text, kept for the next: a fresh 128 KiB buffer per read
  /// is a fresh mapping from the allocator, and its page faults cost more than the conversion.
  static UTF16: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
}

/// The largest UTF-16 buffer kept between reads (units): 2 MiB.
const KEPT_UTF16_UNITS: usize = 1 << 20;
