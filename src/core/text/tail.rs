//! `readTaskOutputTail`: the cleaned end of a background shell's output file
//! (CONTRACT.md §2.14, §3.13).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use once_cell::sync::Lazy;
use regex::Regex;

use super::controls::{remove_controls, Control};
use super::output_file::{open_no_follow, OutputFileError};
use super::whitespace::ecma_trim_end;

/// The hard cap on the bytes `readTaskOutputTail` reads, whatever `maxBytes` says
/// (CONTRACT.md §1.4).
pub const MAX_TASK_OUTPUT_TAIL_BYTES: usize = 65536;

/// What `readTaskOutputTail` returns (CONTRACT.md §2.14).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputTail {
  /// JavaScript `undefined`: not a regular file (a FIFO, a directory), empty, or nothing left
  /// after cleaning.
  Empty,
  /// The cleaned tail; `truncated` when the read started after the first byte.
  Text { text: String, truncated: bool },
  /// `{ error: message }`: the file could not be opened or read (missing, a symlink, ...).
  Error(String),
}

/// `readTaskOutputTail(file, maxBytes)` (CONTRACT.md §2.14 steps 1–9): opens without following
/// a symlink and without blocking, reads the last `min(size, max_bytes, 65536)` bytes, skips
/// leading UTF-8 continuation bytes when the read starts mid-file, decodes, then
/// [`clean_output_tail`].
pub fn read_task_output_tail(path: &Path, max_bytes: usize) -> OutputTail {
  match read_tail_bytes(path, max_bytes) {
    Err(error) => OutputTail::Error(error.message(path)),
    Ok(None) => OutputTail::Empty,
    Ok(Some(tail)) => {
      let text = clean_output_tail(&String::from_utf8_lossy(&tail.bytes));
      if text.is_empty() {
        OutputTail::Empty
      } else {
        OutputTail::Text {
          text,
          truncated: tail.start > 0,
        }
      }
    }
  }
}

/// The bytes read and the file offset they start at.
struct TailBytes {
  bytes: Vec<u8>,
  start: u64,
}

/// Steps 1–3 of §2.14: `None` when the path is not a regular file or is empty.
fn read_tail_bytes(path: &Path, max_bytes: usize) -> Result<Option<TailBytes>, OutputFileError> {
  let mut file = open_no_follow(path).map_err(OutputFileError::at("open"))?;
  let metadata = file.metadata().map_err(OutputFileError::at("fstat"))?;
  let size = metadata.len();
  if !metadata.is_file() || size == 0 {
    return Ok(None);
  }
  let length = size.min(max_bytes.min(MAX_TASK_OUTPUT_TAIL_BYTES) as u64);
  let start = size - length;
  let mut bytes = Vec::with_capacity(length as usize);
  file
    .seek(SeekFrom::Start(start))
    .and_then(|_| file.by_ref().take(length).read_to_end(&mut bytes))
    .map_err(OutputFileError::at("read"))?;
  if start > 0 {
    let continuation = bytes
      .iter()
      .take_while(|&&byte| byte & 0xC0 == 0x80)
      .count();
    bytes.drain(..continuation);
  }
  Ok(Some(TailBytes { bytes, start }))
}

/// Steps 5–8 of §2.14 on decoded text: strip whole escape sequences (none crosses a line end),
/// delete C0 except TAB, LF and CR, C1 and the bidi controls, keep the last non-empty `\r`
/// frame of each line, then `trimEnd()`. The caller treats an empty result as `undefined`.
pub fn clean_output_tail(text: &str) -> String {
  ecma_trim_end(&clean_output_text(text)).to_owned()
}

/// Steps 5–7 of §2.14, without the `trimEnd()` of step 8: what `readTaskOutput` returns
/// (API.md §6.4). Every step keeps to its line: for `a` ending with `\n` (or empty),
/// `clean_output_text(a + b) == clean_output_text(a) + clean_output_text(b)`.
pub fn clean_output_text(text: &str) -> String {
  let without_sequences = strip_tail_sequences(text);
  let without_controls = remove_controls(&without_sequences, |control| {
    matches!(control, Control::OtherC0 | Control::C1 | Control::Bidi)
  });
  normalize_carriage_returns(&without_controls)
}

/// OSC, ended by BEL, `ESC \`, or (left in place) the next ESC, a line end or the end of the
/// text. The TypeScript form, `(?:\x07|\x1b\\|(?=[\x1b\n\r])|$)`, always succeeds after its
/// greedy body, so an optional terminator is the same pattern without a lookahead.
static TAIL_OSC: Lazy<Regex> =
  Lazy::new(|| Regex::new(r"\x1b\][^\x07\x1b\n\r]*(?:\x07|\x1b\\)?").expect("valid OSC regex"));
/// The body of a DCS, SOS, PM or APC string; [`strip_string_sequences`] checks its end.
static TAIL_STRING_BODY: Lazy<Regex> =
  Lazy::new(|| Regex::new(r"\x1b[PX^_][^\x1b\n\r]*").expect("valid string regex"));
/// CSI with the ECMA-48 parameter, intermediate and final byte classes.
static TAIL_CSI: Lazy<Regex> =
  Lazy::new(|| Regex::new(r"\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]").expect("valid CSI regex"));
/// ESC, one or more intermediates, then a final.
static TAIL_FE_ESCAPE: Lazy<Regex> =
  Lazy::new(|| Regex::new(r"\x1b[\x20-\x2f]+[\x30-\x7e]").expect("valid escape regex"));

/// Step 5 of §2.14: the four sequence passes, in order, each removing every match.
fn strip_tail_sequences(text: &str) -> String {
  let text = TAIL_OSC.replace_all(text, "");
  let text = strip_string_sequences(&text);
  let text = TAIL_CSI.replace_all(&text, "");
  TAIL_FE_ESCAPE.replace_all(&text, "").into_owned()
}

/// Removes DCS, SOS, PM and APC strings that end with `ESC \` (removed too), just before
/// another ESC, or at the end of the text: the TypeScript
/// `\x1b[PX^_][^\x1b\n\r]*(?:\x1b\\|(?=\x1b)|$)`. A string reaching a line end first is no
/// match, and its leader is left to the control-character step.
fn strip_string_sequences(text: &str) -> String {
  let mut out = String::with_capacity(text.len());
  let mut copied = 0;
  let mut search = 0;
  while let Some(body) = TAIL_STRING_BODY.find_at(text, search) {
    let after = &text[body.end()..];
    let end = if after.starts_with("\x1b\\") {
      Some(body.end() + 2)
    } else if after.is_empty() || after.starts_with('\x1b') {
      Some(body.end())
    } else {
      None
    };
    search = body.end();
    if let Some(end) = end {
      out.push_str(&text[copied..body.start()]);
      copied = end;
      search = end;
    }
  }
  out.push_str(&text[copied..]);
  out
}

/// Step 7 of §2.14: CRLF becomes LF, and each line keeps its last non-empty `\r` frame.
fn normalize_carriage_returns(text: &str) -> String {
  if !text.contains('\r') {
    return text.to_owned();
  }
  text
    .replace("\r\n", "\n")
    .split('\n')
    .map(|line| {
      line
        .rsplit('\r')
        .find(|frame| !frame.is_empty())
        .unwrap_or("")
    })
    .collect::<Vec<_>>()
    .join("\n")
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::test_vectors::{cases, describe};
  use crate::text::test_support::TempDir;

  /// The §2.14 default `maxBytes`.
  const DEFAULT_MAX_BYTES: usize = 8192;

  #[test]
  fn read_task_output_tail_vectors() {
    let dir = TempDir::new("taskstream-text-tail");
    for (index, case) in cases("readTaskOutputTail").iter().enumerate() {
      let input = &case["input"];
      let content = input["fileContent"].as_str().expect("fileContent");
      let max_bytes = input["maxBytes"]
        .as_u64()
        .map_or(DEFAULT_MAX_BYTES, |n| n as usize);
      let path = dir.file(&format!("case-{index}.output"), content.as_bytes());
      let expected = OutputTail::Text {
        text: case["expected"]["text"].as_str().expect("text").to_owned(),
        truncated: case["expected"]["truncated"].as_bool().expect("truncated"),
      };
      assert_eq!(
        read_task_output_tail(&path, max_bytes),
        expected,
        "{}",
        describe(case)
      );
    }
  }

  #[test]
  fn a_read_starting_mid_char_skips_its_continuation_bytes() {
    let dir = TempDir::new("taskstream-text-tail");
    let euro_last = dir.file("euro-last", format!("{}€", "a".repeat(8191)).as_bytes());
    assert_eq!(
      read_task_output_tail(&euro_last, DEFAULT_MAX_BYTES),
      OutputTail::Text {
        text: format!("{}€", "a".repeat(8189)),
        truncated: true
      }
    );
    let euro_first = dir.file("euro-first", format!("€{}", "a".repeat(8191)).as_bytes());
    assert_eq!(
      read_task_output_tail(&euro_first, DEFAULT_MAX_BYTES),
      OutputTail::Text {
        text: "a".repeat(8191),
        truncated: true
      }
    );
  }

  #[test]
  fn max_bytes_is_capped_at_64_kib() {
    let dir = TempDir::new("taskstream-text-tail");
    let path = dir.file(
      "big",
      format!("{}\n{}", "x".repeat(10), "y".repeat(70_000)).as_bytes(),
    );
    let OutputTail::Text { text, truncated } = read_task_output_tail(&path, usize::MAX) else {
      panic!("a tail is expected");
    };
    assert!(truncated);
    assert_eq!(text.len(), MAX_TASK_OUTPUT_TAIL_BYTES);
  }

  #[test]
  fn empty_and_blank_files_give_empty() {
    let dir = TempDir::new("taskstream-text-tail");
    assert_eq!(
      read_task_output_tail(&dir.file("empty", b""), 100),
      OutputTail::Empty
    );
    assert_eq!(
      read_task_output_tail(&dir.file("blank", b" \n\r\n\x1b[0m\t"), 100),
      OutputTail::Empty
    );
    assert_eq!(
      read_task_output_tail(&dir.file("some", b"abc"), 0),
      OutputTail::Empty
    );
  }

  #[test]
  fn a_directory_gives_empty() {
    let dir = TempDir::new("taskstream-text-tail");
    assert_eq!(read_task_output_tail(&dir.0, 100), OutputTail::Empty);
  }

  #[test]
  fn a_missing_file_gives_an_error_message() {
    let dir = TempDir::new("taskstream-text-tail");
    let path = dir.0.join("missing.output");
    let OutputTail::Error(message) = read_task_output_tail(&path, 100) else {
      panic!("an error is expected");
    };
    assert!(message.contains("missing.output"), "{message}");
    #[cfg(unix)]
    assert!(
      message.starts_with("ENOENT: no such file or directory, open '"),
      "{message}"
    );
  }

  #[cfg(unix)]
  #[test]
  fn a_symlink_is_refused() {
    let dir = TempDir::new("taskstream-text-tail");
    let target = dir.file("target.output", b"secret\n");
    let link = dir.0.join("link.output");
    std::os::unix::fs::symlink(&target, &link).expect("create symlink");
    let OutputTail::Error(message) = read_task_output_tail(&link, 100) else {
      panic!("an error is expected");
    };
    assert!(message.starts_with("ELOOP: "), "{message}");
  }

  #[cfg(unix)]
  #[test]
  fn a_fifo_gives_empty_without_blocking() {
    use std::os::unix::ffi::OsStrExt;
    let dir = TempDir::new("taskstream-text-tail");
    let path = dir.0.join("pipe.output");
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL in path");
    // SAFETY: `c_path` is a valid NUL-terminated path for the duration of the call.
    let status = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
    assert_eq!(status, 0, "mkfifo");
    assert_eq!(read_task_output_tail(&path, 100), OutputTail::Empty);
  }

  #[test]
  fn clean_output_tail_sequence_bounds() {
    let samples = [
      ("a\x1b]0;title\rtext", "text"),
      ("a\x1b]0;ti\x1b[1mtle\x07b", "atleb"),
      ("abc\x1bPq\ndef", "abcPq\ndef"),
      ("abc\x1bPq\x1b[1mdef", "abcdef"),
      ("abc\x1b_payload", "abc"),
      ("x\x1b[", "x["),
      ("x\x1b(", "x("),
      ("x\x1b#8y", "xy"),
      ("a\u{9b}31mb\u{202E}c\u{7F}", "a31mbc\u{7F}"),
      ("one\r\n\rtwo\r\r\nthree\r", "one\ntwo\nthree"),
      ("trailing \u{3000}\n\n", "trailing"),
    ];
    for (input, expected) in samples {
      assert_eq!(clean_output_tail(input), expected, "{input:?}");
    }
  }
}
