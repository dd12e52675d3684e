//! Opening an output file for reading the way `readTaskOutputTail` and `readTaskOutput` do
//! (CONTRACT.md §2.14 step 1, API.md §6.4): without following a symlink and without blocking on
//! a FIFO, with failures worded like Node's `fs` errors.

use std::fs::File;
use std::io;
use std::path::Path;

/// An I/O failure and the system call it came from, worded like Node's `fs` errors.
pub(crate) struct OutputFileError {
  syscall: &'static str,
  error: io::Error,
}

impl OutputFileError {
  pub(crate) fn new(syscall: &'static str, error: io::Error) -> Self {
    Self { syscall, error }
  }

  /// A `map_err` adapter: `open(path).map_err(OutputFileError::at("open"))`.
  pub(crate) fn at(syscall: &'static str) -> impl FnOnce(io::Error) -> OutputFileError {
    move |error| OutputFileError { syscall, error }
  }

  /// For example `ENOENT: no such file or directory, open '/tmp/x.output'`.
  pub(crate) fn message(&self, path: &Path) -> String {
    let path = path.display();
    #[cfg(unix)]
    if let Some(code) = self.error.raw_os_error() {
      let errno = nix::errno::Errno::from_raw(code);
      let description = errno.desc().to_lowercase();
      return format!("{errno:?}: {description}, {} '{path}'", self.syscall);
    }
    format!("{}, {} '{path}'", self.error, self.syscall)
  }
}

/// Opens for reading with `O_NOFOLLOW | O_NONBLOCK`: a symlink fails with `ELOOP` and a FIFO
/// opens at once instead of waiting for a writer.
#[cfg(unix)]
pub(crate) fn open_no_follow(path: &Path) -> io::Result<File> {
  use std::os::unix::fs::OpenOptionsExt;
  std::fs::OpenOptions::new()
    .read(true)
    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
    .open(path)
}

/// Windows has no `O_NOFOLLOW`: opens the reparse point itself (never its target) and refuses
/// it when the opened file is a symlink or another reparse point (upstream #8227).
#[cfg(windows)]
pub(crate) fn open_no_follow(path: &Path) -> io::Result<File> {
  use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
  const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
  const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
  const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x0400;
  let file = std::fs::OpenOptions::new()
    .read(true)
    .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
    .open(path)?;
  if file.metadata()?.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
    return Err(io::Error::new(
      io::ErrorKind::InvalidInput,
      "refusing to read through a symlink or reparse point",
    ));
  }
  Ok(file)
}

/// Reads up to `buf.len()` bytes at `offset` without moving a file position (`pread`), retrying
/// short reads and `EINTR`; fewer bytes only at the end of the file.
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
  let mut filled = 0;
  while filled < buf.len() {
    match read_at_once(file, &mut buf[filled..], offset + filled as u64) {
      Ok(0) => break,
      Ok(n) => filled += n,
      Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
      Err(error) => return Err(error),
    }
  }
  Ok(filled)
}

#[cfg(unix)]
fn read_at_once(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
  std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at_once(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
  std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}
