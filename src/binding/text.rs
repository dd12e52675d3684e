//! Bindings for the text utilities (API.md §2) and the output-tail helpers
//! (API.md §4). The behaviour is in `core::text`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::args;
use crate::core::text as core;

/// Removes C0 controls except TAB, removes C1 controls, and defangs the
/// notification envelope's structural tags with U+200B (CONTRACT.md §3.7).
#[napi(catch_unwind, ts_args_type = "line: string")]
pub fn sanitize_monitor_line(env: Env, line: Unknown) -> Result<String> {
  let line = args::string(&env, &line, "line")?;
  Ok(core::sanitize_monitor_line(&line))
}

/// Escapes `& < > " '` for XML text and attributes.
#[napi(catch_unwind, ts_args_type = "text: string")]
pub fn escape_xml(env: Env, text: Unknown) -> Result<String> {
  let text = args::string(&env, &text, "text")?;
  Ok(core::escape_xml(&text))
}

/// Removes C0 (except TAB), C1 and bidi controls. Idempotent.
#[napi(catch_unwind, ts_args_type = "text: string")]
pub fn strip_display_control_chars(env: Env, text: Unknown) -> Result<String> {
  let text = args::string(&env, &text, "text")?;
  Ok(core::strip_display_control_chars(&text))
}

/// Removes ANSI escape sequences exactly as the `strip-ansi` npm package (7.2) does.
#[napi(catch_unwind, ts_args_type = "text: string")]
pub fn strip_ansi(env: Env, text: Unknown) -> Result<String> {
  let text = args::string(&env, &text, "text")?;
  Ok(core::strip_ansi(&text))
}

/// The label used in notifications: display controls stripped, whitespace
/// collapsed, at most 80 code points (77 + `...`).
#[napi(catch_unwind, ts_args_type = "label: string")]
pub fn truncate_notification_label(env: Env, label: Unknown) -> Result<String> {
  let label = args::string(&env, &label, "label")?;
  Ok(core::truncate_notification_label(&label))
}

/// True when a NUL byte occurs in the first `sampleSize` bytes (default 512).
/// `bytes` is a Buffer or any typed array of single bytes; anything else,
/// other typed arrays and `DataView` included, is a `TypeError`.
#[napi(
  catch_unwind,
  ts_args_type = "bytes: Buffer | Uint8Array | Uint8ClampedArray | Int8Array, sampleSize?: number"
)]
pub fn is_binary(env: Env, bytes: Unknown, sample_size: Unknown) -> Result<bool> {
  // Buffer, Uint8Array, Uint8ClampedArray or Int8Array; anything else is a TypeError.
  let data = args::bytes(&env, &bytes, "bytes")?;
  let sample_size = if args::is_undefined(&sample_size) {
    512
  } else {
    args::integer_in_range(
      &env,
      &sample_size,
      "sampleSize",
      "argument",
      0.0,
      f64::INFINITY,
    )? as usize
  };
  Ok(core::is_binary(data, sample_size))
}

/// Replaces every UTF-16 unit outside `[a-zA-Z0-9_-]` with `_`.
#[napi(catch_unwind, ts_args_type = "value: string")]
pub fn sanitize_filename_component(env: Env, value: Unknown) -> Result<String> {
  let value = args::string(&env, &value, "value")?;
  Ok(core::sanitize_filename_component(&value))
}

/// Splits text chunks into lines for callers that feed their own chunks
/// (CONTRACT.md §2.18): LF and CRLF (also split across pushes), a lone CR kept,
/// empty lines kept, long lines capped. A surrogate pair split across two
/// pushes stays one character; a lone surrogate becomes U+FFFD.
#[napi]
pub struct LineBuffer {
  inner: core::LineBuffer,
}

#[napi]
impl LineBuffer {
  #[napi(
    constructor,
    catch_unwind,
    ts_args_type = "options?: LineBufferOptions"
  )]
  pub fn new(env: Env, this: This<Unknown>, options: Unknown) -> Result<Self> {
    args::require_new::<&LineBuffer>(&env, &this, "LineBuffer")?;
    let options = args::optional_object(&env, &options, "options")?;
    let (max, marker) = match options {
      Some(options) => {
        let bag = args::Bag::new(&env, &options, "options");
        (
          bag.opt_u64("maxLineCodePoints", 1, u64::from(u32::MAX))?,
          bag.opt_string("truncationMarker")?,
        )
      }
      None => (None, None),
    };
    let max = max.map_or(core::DEFAULT_LINE_BUFFER_MAX_CODE_POINTS, |n| n as usize);
    // Any string is a marker, the empty one included (as in Gemini's proposal).
    let marker = marker.unwrap_or_else(|| core::LINE_TRUNCATION_MARKER.to_owned());
    Ok(Self {
      inner: core::LineBuffer::with_truncation_marker(max, marker),
    })
  }

  /// Appends a chunk and returns the lines it completed. The chunk is read as
  /// UTF-16, so a high surrogate at its end waits for the next chunk's low one.
  #[napi(catch_unwind, ts_args_type = "chunk: string")]
  pub fn push(&mut self, env: Env, chunk: Unknown) -> Result<Vec<String>> {
    if chunk.get_type()? != ValueType::String {
      // The usual TypeError naming `chunk`.
      args::string(&env, &chunk, "chunk")?;
    }
    let units = unsafe { chunk.cast::<Utf16String>() }?;
    Ok(self.inner.push_utf16(&units))
  }

  /// Returns the trailing partial line, if any, exactly once.
  #[napi(catch_unwind)]
  pub fn flush(&mut self) -> Vec<String> {
    self.inner.flush()
  }
}

/// The cleaned tail of an output file, or why it could not be read.
#[napi(object)]
pub struct OutputTailText {
  pub text: String,
  pub truncated: bool,
}

/// `{ error }`: why `readTaskOutputTail` or `readTaskOutput` could not read the file.
#[napi(object)]
pub struct OutputTailError {
  pub error: String,
}

/// Reads the last `maxBytes` (default 8192, at most 65536) bytes of an output
/// file without following symlinks or blocking on a FIFO, strips escape
/// sequences and control characters, and keeps the last frame of `\r` progress
/// lines. `undefined` when there is nothing to show (CONTRACT.md §2.14).
#[napi(
  catch_unwind,
  ts_args_type = "outputFile: string, maxBytes?: number",
  ts_return_type = "OutputTailText | OutputTailError | undefined"
)]
pub fn read_task_output_tail(
  env: Env,
  output_file: Unknown,
  max_bytes: Unknown,
) -> Result<Either3<OutputTailText, OutputTailError, ()>> {
  let output_file = args::string(&env, &output_file, "outputFile")?;
  let max_bytes = if args::is_undefined(&max_bytes) {
    8192
  } else {
    args::integer_in_range(&env, &max_bytes, "maxBytes", "argument", 0.0, f64::INFINITY)? as usize
  };
  Ok(
    match core::read_task_output_tail(std::path::Path::new(&output_file), max_bytes) {
      // `undefined`, never `null` (napi-rs turns `None` into `null`).
      core::OutputTail::Empty => Either3::C(()),
      core::OutputTail::Text { text, truncated } => Either3::A(OutputTailText { text, truncated }),
      core::OutputTail::Error(error) => Either3::B(OutputTailError { error }),
    },
  )
}

/// The status sidecar of an output file: `.output` becomes `.status`, any other
/// path gets `.status` appended.
#[napi(catch_unwind, ts_args_type = "outputFile: string")]
pub fn status_file_path_for(env: Env, output_file: Unknown) -> Result<String> {
  let output_file = args::string(&env, &output_file, "outputFile")?;
  Ok(core::status_file_path_for(&output_file))
}
