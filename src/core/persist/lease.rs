//! The state directory's lease: the mtime of `<stateDir>/lease`. Any live
//! host attached to the directory renews it; a keeper ends its task when no
//! renewal was seen for `leaseMs`.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::records::private_mode;

/// `<stateDir>/lease`.
pub fn lease_path(state_dir: &Path) -> PathBuf {
  state_dir.join("lease")
}

/// Renews the lease: sets the file's mtime to now, creating it (`0600`,
/// never through a symlink) if absent.
pub fn renew(state_dir: &Path) -> io::Result<()> {
  let mut options = OpenOptions::new();
  options.write(true).create(true);
  private_mode(&mut options);
  let file = options.open(lease_path(state_dir))?;
  file.set_modified(SystemTime::now())
}

/// Renews an existing lease only: sets its mtime to now, and creates nothing.
/// The renewer thread renews this way, so a state directory (or a lease) that
/// someone removed is never recreated behind their back; `NotFound` then.
pub fn renew_existing(state_dir: &Path) -> io::Result<()> {
  let mut options = OpenOptions::new();
  options.write(true);
  private_mode(&mut options);
  let file = options.open(lease_path(state_dir))?;
  file.set_modified(SystemTime::now())
}

/// The lease's last renewal (its mtime), or `None` when it is missing or
/// unreadable (or a symlink).
pub fn last_renewal(state_dir: &Path) -> Option<SystemTime> {
  let metadata = fs::symlink_metadata(lease_path(state_dir)).ok()?;
  if !metadata.is_file() {
    return None;
  }
  metadata.modified().ok()
}
