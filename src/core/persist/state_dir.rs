//! The state directory (`persist.stateDir`): created `0700`; a symlink, a
//! non-directory, a directory owned by another user or one that grants any
//! group or other permission is refused, with an error naming
//! `persist.stateDir`.

use std::io;
use std::path::Path;

/// The option the errors name.
pub const STATE_DIR_OPTION: &str = "persist.stateDir";

/// Creates `path` (`0700`, parents as needed with the default mode) if it is
/// missing, then checks it with [`validate_state_dir`]. `path` must be
/// absolute.
pub fn ensure_state_dir(path: &Path) -> io::Result<()> {
  imp::ensure(path)
}

/// Checks that `path` is a real directory (not a symlink) owned by the
/// effective user with no group or other permission bits.
pub fn validate_state_dir(path: &Path) -> io::Result<()> {
  imp::validate(path)
}

#[cfg_attr(not(unix), allow(dead_code))]
fn refused(kind: io::ErrorKind, path: &Path, why: &str) -> io::Error {
  io::Error::new(kind, format!("{STATE_DIR_OPTION} {} {why}", path.display()))
}

#[cfg(unix)]
mod imp {
  use std::fs::{self, DirBuilder};
  use std::io;
  use std::os::unix::fs::{DirBuilderExt, MetadataExt};
  use std::path::Path;

  use super::refused;

  pub(super) fn ensure(path: &Path) -> io::Result<()> {
    if !path.is_absolute() {
      return Err(refused(
        io::ErrorKind::InvalidInput,
        path,
        "must be an absolute path",
      ));
    }
    match fs::symlink_metadata(path) {
      Ok(_) => {}
      Err(error) if error.kind() == io::ErrorKind::NotFound => {
        if let Some(parent) = path.parent() {
          fs::create_dir_all(parent)
            .map_err(|e| refused(e.kind(), path, &format!("cannot be created: {e}")))?;
        }
        match DirBuilder::new().mode(0o700).create(path) {
          Ok(()) => {}
          // Another host created it meanwhile: checked below like any other.
          Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
          Err(error) => {
            return Err(refused(
              error.kind(),
              path,
              &format!("cannot be created: {error}"),
            ))
          }
        }
      }
      Err(error) => {
        return Err(refused(
          error.kind(),
          path,
          &format!("cannot be read: {error}"),
        ))
      }
    }
    validate(path)
  }

  pub(super) fn validate(path: &Path) -> io::Result<()> {
    let metadata = fs::symlink_metadata(path)
      .map_err(|e| refused(e.kind(), path, &format!("cannot be read: {e}")))?;
    if metadata.file_type().is_symlink() {
      return Err(refused(
        io::ErrorKind::InvalidInput,
        path,
        "is a symbolic link; give the real directory",
      ));
    }
    if !metadata.is_dir() {
      return Err(refused(
        io::ErrorKind::InvalidInput,
        path,
        "is not a directory",
      ));
    }
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if metadata.uid() != euid {
      return Err(refused(
        io::ErrorKind::PermissionDenied,
        path,
        &format!(
          "is owned by uid {}, not by this user (uid {euid})",
          metadata.uid()
        ),
      ));
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
      return Err(refused(
        io::ErrorKind::PermissionDenied,
        path,
        &format!("has mode {mode:04o}; it must grant nothing to group or others (0700)"),
      ));
    }
    Ok(())
  }
}

#[cfg(not(unix))]
mod imp {
  use std::io;
  use std::path::Path;

  pub(super) fn ensure(_path: &Path) -> io::Result<()> {
    Err(crate::persist::unsupported())
  }

  pub(super) fn validate(_path: &Path) -> io::Result<()> {
    Err(crate::persist::unsupported())
  }
}
