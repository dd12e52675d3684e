//! The state directory (`persist.stateDir`): created `0700` (Windows: an
//! owner-only DACL its files inherit); a symlink, a non-directory, and on Unix
//! a directory owned by another user or one that grants any group or other
//! permission is refused, with an error naming `persist.stateDir`.

use std::io;
use std::path::Path;

/// The option the errors name.
pub const STATE_DIR_OPTION: &str = "persist.stateDir";

/// Creates `path` (`0700`, parents as needed with the default mode) if it is
/// missing, then checks it with [`validate_state_dir`]. `path` must be
/// absolute.
pub fn ensure_state_dir(path: &Path) -> io::Result<()> {
  shared::ensure(path)
}

/// Checks that `path` is a real directory (not a symlink) owned by the
/// effective user with no group or other permission bits.
pub fn validate_state_dir(path: &Path) -> io::Result<()> {
  shared::validate(path)
}

fn refused(kind: io::ErrorKind, path: &Path, why: &str) -> io::Error {
  io::Error::new(kind, format!("{STATE_DIR_OPTION} {} {why}", path.display()))
}

mod shared {
  use std::fs;
  use std::io;
  use std::path::Path;

  use super::{imp, refused};

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
        match imp::create_private_dir(path) {
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
    imp::check_private(path, &metadata)
  }
}

#[cfg(unix)]
mod imp {
  use std::fs::{DirBuilder, Metadata};
  use std::io;
  use std::os::unix::fs::{DirBuilderExt, MetadataExt};
  use std::path::Path;

  use super::refused;

  pub(super) fn create_private_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new().mode(0o700).create(path)
  }

  /// Owned by the effective user, nothing for group or others.
  pub(super) fn check_private(path: &Path, metadata: &Metadata) -> io::Result<()> {
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

/// Windows: a state directory is created with an owner-only protected DACL that every file made
/// in it inherits (`core/private_file/windows.rs`); an existing directory is used as it is (no
/// mode to check; docs/persistence.md "Windows").
#[cfg(windows)]
mod imp {
  use std::fs::Metadata;
  use std::io;
  use std::path::Path;

  pub(super) fn create_private_dir(path: &Path) -> io::Result<()> {
    crate::private_file::create_owner_only_dir(path)
  }

  pub(super) fn check_private(_path: &Path, _metadata: &Metadata) -> io::Result<()> {
    Ok(())
  }
}
