//! Opening files only the owner can read (CONTRACT.md §2.14 sidecar, §2.15
//! step 4, §4 item 24): mode `0600`, never through a symlink at the path.
//! On Windows, an owner-only protected DACL instead (see `windows.rs`), and for
//! a directory (a persisted task's state directory) one that its files inherit.
//! Used by the shell's output file and sidecar and by persistence.

use std::fs::File;
#[cfg(unix)]
use std::fs::OpenOptions;
use std::io;
use std::path::Path;

/// What [`open_private`] does when the path already exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Existing {
  /// Fail (`O_EXCL`): for temporary files.
  Refuse,
  /// Truncate it: for output files.
  Truncate,
  /// Keep what it holds and write after it, creating it when missing: for the output file of a
  /// restarted shell (API.md §6.8 restart).
  Append,
  /// Open it as it is, never creating it: for rewriting a sidecar in place.
  #[cfg(unix)]
  Keep,
}

/// Opens `path` for writing with mode `0600`, without following a symlink
/// (`O_NOFOLLOW`, so a symlink fails with `ELOOP`) and without blocking on a
/// FIFO (`O_NONBLOCK`, which regular files ignore; a FIFO with no reader
/// fails with `ENXIO`). Anything but a regular file or a character device
/// (`/dev/null`) is refused, a FIFO with a reader included. A looser existing
/// regular file is tightened to `0600`; a failure to tighten fails the open.
/// Windows has no `O_NOFOLLOW` and no modes: there the file is created with
/// an owner-only DACL, and an existing one is tightened to it
/// ([`windows::open_owner_only`]).
#[cfg(unix)]
pub(crate) fn open_private(path: &Path, existing: Existing) -> io::Result<File> {
  let mut options = OpenOptions::new();
  options.write(true);
  match existing {
    Existing::Refuse => options.create_new(true),
    Existing::Truncate => options.create(true).truncate(true),
    Existing::Append => options.create(true).append(true),
    #[cfg(unix)]
    Existing::Keep => &mut options,
  };
  restrict(&mut options);
  let file = options.open(path)?;
  tighten(&file)?;
  Ok(file)
}

#[cfg(unix)]
fn restrict(options: &mut OpenOptions) {
  use std::os::unix::fs::OpenOptionsExt;
  options
    .mode(0o600)
    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
}

/// `0600` on a regular file, whatever the umask or an earlier mode made it.
/// Character devices (`/dev/null`, `/dev/full`) are left alone; any other
/// kind of file fails with `not a regular file`.
#[cfg(unix)]
fn tighten(file: &File) -> io::Result<()> {
  use std::os::unix::fs::{FileTypeExt, PermissionsExt};
  let metadata = file.metadata()?;
  if !metadata.is_file() && !metadata.file_type().is_char_device() {
    return Err(io::Error::new(
      io::ErrorKind::InvalidInput,
      "not a regular file",
    ));
  }
  if metadata.is_file() && metadata.permissions().mode() & 0o7777 != 0o600 {
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
  }
  Ok(())
}

#[cfg(windows)]
mod windows;

#[cfg(windows)]
pub(crate) use windows::create_owner_only_dir;
#[cfg(all(test, windows))]
pub(crate) use windows::{CurrentUser, OwnerOnly, OWNER_RIGHTS};

#[cfg(windows)]
pub(crate) fn open_private(path: &Path, existing: Existing) -> io::Result<File> {
  let disposition = match existing {
    Existing::Refuse => windows::Disposition::CreateNew,
    Existing::Truncate => windows::Disposition::Truncate,
    Existing::Append => windows::Disposition::Append,
  };
  windows::open_owner_only(path, disposition)
}
