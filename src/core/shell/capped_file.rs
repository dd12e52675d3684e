//! The output file behind [`super::OutputWriter`]: the `maxOutputBytes` cap,
//! marker lines and write errors (CONTRACT.md §2.15 steps 4 and 8, §4 item 9).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::private_file::{open_private, Existing};

/// An output file that accepts at most `limit` bytes of output. Each append
/// is written at once (no buffering), so readers see output while the
/// command runs. After a write error nothing more is written; bytes are then
/// only counted.
pub(super) struct CappedFile {
  file: Option<File>,
  path: PathBuf,
  limit: u64,
  written: u64,
  not_written: u64,
  limit_reached: bool,
  /// The last byte written ends a line (or nothing was written yet).
  at_line_start: bool,
  error: Option<String>,
}

impl CappedFile {
  /// Opens `path` truncated, `0600`, not through a symlink, never blocking
  /// on a FIFO, and only if it is (or becomes) a regular file. A failure is
  /// `Cannot open output file <path>: <OS error>`: the shell must then fail
  /// without running, rather than run with its output unwritten.
  pub(super) fn open(path: &Path, limit: u64) -> io::Result<Self> {
    let file = open_private(path, Existing::Truncate).map_err(|error| {
      io::Error::new(
        error.kind(),
        format!("Cannot open output file {}: {error}", path.display()),
      )
    })?;
    Ok(Self {
      file: Some(file),
      path: path.to_path_buf(),
      limit,
      written: 0,
      not_written: 0,
      limit_reached: false,
      at_line_start: true,
      error: None,
    })
  }

  /// Opens `path` as [`Self::open`] does but keeps what it holds (API.md §6.8 restart): the run
  /// before wrote `written` bytes of output into it and counted `not_written` more, and the cap
  /// goes on from there. `marker` is written first, on a line of its own.
  pub(super) fn resume(
    path: &Path,
    limit: u64,
    written: u64,
    not_written: u64,
    marker: &str,
  ) -> io::Result<Self> {
    let at_line_start = !ends_mid_line(path);
    let file = open_private(path, Existing::Append).map_err(|error| {
      io::Error::new(
        error.kind(),
        format!("Cannot open output file {}: {error}", path.display()),
      )
    })?;
    let mut capped = Self {
      file: Some(file),
      path: path.to_path_buf(),
      limit,
      written,
      not_written,
      limit_reached: written >= limit,
      at_line_start,
      error: None,
    };
    capped.marker(marker);
    Ok(capped)
  }

  /// Whether output appended now could reach the file.
  pub(super) fn accepts(&self) -> bool {
    self.file.is_some() && !self.limit_reached
  }

  /// Counts `len` bytes as read but not written.
  pub(super) fn skip(&mut self, len: usize) {
    self.not_written += len as u64;
  }

  /// Appends `text`. The part past the limit is cut at a char boundary and
  /// counted, and the limit marker line follows once.
  pub(super) fn append(&mut self, text: &str) {
    if !self.accepts() {
      self.skip(text.len());
      return;
    }
    let room = self.limit.saturating_sub(self.written);
    let fits = floor_char_boundary(text, usize::try_from(room).unwrap_or(usize::MAX));
    self.write_output(&text[..fits]);
    if fits < text.len() {
      self.skip(text.len() - fits);
      self.limit_reached = true;
      self.marker(&format!(
        "[taskstream: output limit of {} bytes reached; further output is counted but not written]",
        self.limit
      ));
    }
  }

  /// Writes `line` on a line of its own. Markers are not output: they are
  /// neither counted nor capped.
  pub(super) fn marker(&mut self, line: &str) {
    let lead = if self.at_line_start { "" } else { "\n" };
    let marker = format!("{lead}{line}\n");
    if self.write_bytes(marker.as_bytes()) == marker.len() {
      self.at_line_start = true;
    }
  }

  /// Closes the file (writes are unbuffered, so nothing is pending).
  pub(super) fn close(&mut self) {
    self.file = None;
  }

  pub(super) fn written(&self) -> u64 {
    self.written
  }

  /// `maxOutputBytes`.
  pub(super) fn limit(&self) -> u64 {
    self.limit
  }

  /// Whether output reached the cap (some of it was not written).
  pub(super) fn limit_reached(&self) -> bool {
    self.limit_reached
  }

  pub(super) fn not_written(&self) -> u64 {
    self.not_written
  }

  /// The message of the write error that stopped writing.
  pub(super) fn error(&self) -> Option<&str> {
    self.error.as_deref()
  }

  fn write_output(&mut self, text: &str) {
    if text.is_empty() {
      return;
    }
    // Bytes a failing write still got onto the disk (a disk filling up
    // mid-write) count as written: the file holds them.
    let done = self.write_bytes(text.as_bytes());
    self.written += done as u64;
    self.skip(text.len() - done);
    if done == text.len() {
      self.at_line_start = text.ends_with('\n');
    }
  }

  /// Writes what it can of `bytes` and returns how much that was: all of it,
  /// or less when there is no file or a write failed. A failure is recorded,
  /// logged and closes the file.
  fn write_bytes(&mut self, bytes: &[u8]) -> usize {
    let Some(file) = self.file.as_mut() else {
      return 0;
    };
    let mut done = 0;
    while done < bytes.len() {
      let error = match file.write(&bytes[done..]) {
        Ok(0) => io::Error::from(io::ErrorKind::WriteZero),
        Ok(n) => {
          done += n;
          continue;
        }
        Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
        Err(error) => error,
      };
      tracing::warn!(
        path = %self.path.display(),
        %error,
        "taskstream: writing the background shell output file failed; output is counted, not written"
      );
      self.error = Some(error.to_string());
      self.file = None;
      break;
    }
    done
  }
}

/// Whether the file at `path` holds something whose last byte is not a newline (a missing or
/// unreadable file holds nothing).
fn ends_mid_line(path: &Path) -> bool {
  use std::io::{Read, Seek, SeekFrom};
  let Ok(mut file) = File::open(path) else {
    return false;
  };
  let mut last = [0u8];
  file.seek(SeekFrom::End(-1)).is_ok() && file.read_exact(&mut last).is_ok() && last[0] != b'\n'
}

/// The largest char boundary of `text` that is at most `max`.
fn floor_char_boundary(text: &str, max: usize) -> usize {
  if max >= text.len() {
    return text.len();
  }
  (0..=max)
    .rev()
    .find(|&i| text.is_char_boundary(i))
    .unwrap_or(0)
}
